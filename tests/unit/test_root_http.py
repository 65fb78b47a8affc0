"""Which HTTP client a record names, and when the sweep skips root-engine http points."""

from __future__ import annotations

import pytest
from instore import rootenv
from instore.payload.specs import PYTHON_HTTP_CLIENT, http_client


def test_non_http_reads_have_no_http_client() -> None:
    assert http_client("/data/x.root", "root") == "n/a"
    assert http_client("root://host//x.root", "uproot") == "n/a"


def test_uproot_names_its_own_source() -> None:
    assert http_client("https://host/x.root", "uproot") == PYTHON_HTTP_CLIENT


@pytest.mark.parametrize("forced", ["twebfile", ""])
def test_root_names_twebfile_or_xrdclhttp(monkeypatch: pytest.MonkeyPatch, forced: str) -> None:
    monkeypatch.setenv(rootenv.HTTP_ENV, forced)
    for fn in (rootenv.xrdclhttp_available, rootenv.http_client):
        fn.cache_clear()
    try:
        name = http_client("davs://host/x.root", "root")
        if forced or not rootenv.xrdclhttp_available():
            assert name.startswith("TWebFile (ROOT ") and name.endswith("no auth)")
            assert rootenv.http_auth_problem("x509") == (
                "the root engine's HTTP client (TWebFile) cannot authenticate: "
                "use the uproot engine or xrootd for this site"
            )
        else:
            assert name.startswith("XrdClHttp ") and "Davix" in name
            assert rootenv.http_auth_problem("x509") is None
            assert "cannot authenticate" in (rootenv.http_auth_problem("token") or "")
        assert rootenv.http_auth_problem("none") is None
    finally:
        for fn in (rootenv.xrdclhttp_available, rootenv.http_client):
            fn.cache_clear()
