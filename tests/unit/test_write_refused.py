"""A write the storage refuses to an identity it accepted is said as the directory's
permissions, not as a proxy to renew: XRootD 5.5 answers such a write with error 3010
(kXR_NotAuthorized, the code of an identity refusal too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.storage import StorageError, diagnosis

from tests.unit.test_credentials import TOKEN, make_proxy

URL = "root://se.example.org:1094//store/instore/by-branch-r0.root"
# What xrdcp 5.5 printed, uploading into a directory the server's user may not write (seen on a
# GSI site whose export belonged to root; its log: "Unable to create /by-branch-r0.root;
# permission denied").
XRDCP_SAID = ("Run: [ERROR] Server responded with an error: [3010] Unable to create "
              "/store/instore/by-branch-r0.root; permission denied\x00 (destination)")  # fmt: skip


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = make_proxy(tmp_path / "x509up")
    monkeypatch.setenv("X509_USER_PROXY", str(path))
    monkeypatch.setenv("X509_CERT_DIR", str(tmp_path))
    monkeypatch.delenv("BEARER_TOKEN", raising=False)
    monkeypatch.delenv("BEARER_TOKEN_FILE", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return path


def test_a_write_refused_by_xrootd_names_the_directory_not_the_proxy(proxy: Path) -> None:
    line = str(diagnosis.diagnosed(StorageError(URL, XRDCP_SAID), writing=True))
    assert line.startswith(f"{URL}: the storage accepted X.509 proxy /DC=test/CN=Test User but "
                           "refused to write there ([3010] Unable to create")  # fmt: skip
    assert line.endswith("-- ask the site to make root://se.example.org:1094//store/instore/ "
                         "writable for that identity, or point the site file's endpoints at a "
                         "directory it may write")  # fmt: skip
    assert "\x00" not in line and "\n" not in line
    assert "renew" not in line and "voms-proxy-init" not in line and "mapped" not in line


def test_a_write_refused_by_xrdhttp_names_the_directory(proxy: Path) -> None:
    url = "https://se.example.org:8443//store/instore/f.root"
    said = "HTTP 403: Unable to create /store/instore/f.root; permission denied"
    line = str(diagnosis.diagnosed(StorageError(url, said), writing=True))
    assert "accepted X.509 proxy" in line and "writable for that identity" in line


@pytest.mark.parametrize(("probe_says", "accepted"), [(None, True), ("HTTP 403", False)])
def test_a_bare_refusal_of_a_write_asks_whether_the_proxy_reads(
    proxy: Path, monkeypatch: pytest.MonkeyPatch, probe_says: str | None, accepted: bool
) -> None:
    """A bare "HTTP 403" fits both causes: the same credential reading the directory tells."""
    asked: list[str] = []
    monkeypatch.setattr(
        diagnosis, "probe", lambda url, timeout=10.0: asked.append(url) or probe_says
    )
    url = "https://se.example.org:8443//store/instore/f.root"
    line = str(diagnosis.diagnosed(StorageError(url, "HTTP 403"), writing=True))
    assert asked == ["https://se.example.org:8443//store/instore/"]
    assert ("writable for that identity" in line) == accepted
    assert line.startswith("authentication refused by") == (not accepted)


def test_a_refused_read_is_still_said_as_the_credential(proxy: Path) -> None:
    line = str(
        diagnosis.diagnosed(StorageError(URL, "[FATAL] Auth failed: No protocols left to try"))
    )
    assert line.startswith(f"authentication refused by {URL}: the server refused X.509 proxy")


def test_a_write_refused_to_a_token_names_the_scope_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEARER_TOKEN", TOKEN)
    monkeypatch.setenv("X509_USER_PROXY", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    line = str(diagnosis.diagnosed(StorageError(URL, XRDCP_SAID), writing=True))
    assert "accepted the bearer token but refused to write there" in line
    assert "storage.create:/store/instore" in line and TOKEN not in line
