"""`instore site upload` against a plain XRootD 5.5 server computing adler32 (xrootd.chksum):
root:// and XrdHttp, no auth (xrdcp and HTTP PUT); the GSI and https case is in
test_real_site_gsi.py. Files land, checksums are verified, a second upload skips everything,
a corrupt remote copy stops it in one line. The root engine then reads the uploaded file over http through
XrdClHttp and through TWebFile, both counted."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.site import upload
from instore.site.config import load_site

from tests.cli import Cli
from tests.conftest import write_real_site
from tests.integration.grid_site import needs_tools, readable_tmp
from tests.integration.grid_site import xrootd_server as serve

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def root_dir() -> Iterator[Path]:
    needs_tools()
    with readable_tmp("instore-upload-") as root:
        yield root


def _no_credentials(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE", "X509_USER_PROXY", "X509_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(root))
    monkeypatch.setenv("X509_USER_PROXY", str(root / "no-proxy"))
    monkeypatch.setenv("XRD_CONNECTIONRETRY", "1")


def _read(cli: Cli, url: str, env: dict[str, str]) -> dict[str, object]:
    proc = cli("read", url, "--engine", "root", "--cache-mb", "30", timeout=120,
               env={**os.environ, **env})  # fmt: skip
    return json.loads(proc.stdout)


def test_upload_to_plain_xrootd_and_xrdhttp_then_read_over_http(
    root_dir: Path, small_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    _no_credentials(monkeypatch, root_dir)
    files = [small_files["ordered"], small_files["ordered-r1"]]
    with serve(root_dir / "plain") as server:
        port, hport, data = server.port, server.http_port, server.data
        site = load_site(write_real_site(root_dir / "plain.yaml", {
            "xrootd": f"root://localhost:{port}//x/{{file}}",
            "http": f"http://localhost:{hport}//h/{{file}}",
        }))  # fmt: skip
        first = upload.upload(site, files)
        assert {(f["protocol"], f["action"]) for f in first["files"]} == {  # type: ignore[index]
            ("xrootd", "copied"), ("http", "copied")}  # fmt: skip
        for f in files:
            for sub in ("x", "h"):
                assert (data / sub / f.name).read_bytes() == f.read_bytes()
        again = upload.upload(site, files)
        assert {f["action"] for f in again["files"]} == {"present"}  # type: ignore[index]

        url = f"http://localhost:{hport}//h/{files[0].name}"
        local = _read(cli, str(files[0]), {})
        davix = _read(cli, url, {})
        web = _read(cli, url, {"INSTORE_ROOT_HTTP": "twebfile"})
        assert davix["error"] is None and web["error"] is None, (davix["error"], web["error"])
        assert str(davix["http_client"]).startswith("XrdClHttp ")
        assert str(web["http_client"]).startswith("TWebFile (ROOT ")
        assert davix["events"] == web["events"] == local["events"]
        assert davix["bytes_read"] == local["bytes_read"]  # the same reads as a local TFile
        assert davix["read_calls"] == local["read_calls"]
        print({k: {m: r[m] for m in ("bytes_read", "read_calls", "wall_s", "open_s")}
               for k, r in (("xrdclhttp", davix), ("twebfile", web))})  # fmt: skip

        target = data / "h" / files[1].name  # same size, other bytes: only adler32 tells
        target.write_bytes(b"\0" * target.stat().st_size)
        with pytest.raises(InstoreError) as err:
            upload.upload(site, files)
        line = str(err.value)
        assert line.startswith(f"adler32 of http://localhost:{hport}//h/{files[1].name} is 0x")
        assert line.endswith(upload.foreign(site.name))
        assert "\n" not in line
