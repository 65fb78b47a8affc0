"""`instore site upload` against real XRootD 5.5 servers computing adler32 (xrootd.chksum):
a plain one (root:// and XrdHttp, no auth: xrdcp and HTTP PUT) and a GSI one with the proxy.
Files land, checksums are verified, a second upload skips everything, a corrupt remote copy
stops it in one line. The root engine then reads the uploaded file over http through
XrdClHttp and through TWebFile, both counted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.site import upload
from instore.site.config import load_site

from tests.conftest import write_real_site
from tests.integration.gsi_pki import _answers, _free_port, _pki

pytestmark = pytest.mark.integration


@contextmanager
def _xrootd(root: Path, extra: str) -> Iterator[tuple[int, int, Path]]:
    """XRootD (and XrdHttp) over a writable directory, computing adler32; stopped by PID."""
    data, run = root / "data", root / "run"
    root.mkdir(mode=0o755)
    data.mkdir()
    run.mkdir()
    for d in (data, run):
        shutil.chown(d, "xrootd")
    port, hport = _free_port(), _free_port()
    conf = root / "xrootd.cfg"
    conf.write_text(f"xrd.port {port}\nall.export /\noss.localroot {data}\nall.adminpath {run}\n"
                    f"all.pidpath {run}\nxrootd.chksum adler32\n"
                    f"xrd.protocol XrdHttp:{hport} libXrdHttp.so\n{extra}")  # fmt: skip
    log = run / "xrootd.log"
    proc = subprocess.Popen(["xrootd", "-R", "xrootd", "-c", str(conf), "-l", str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        if not _answers(port, proc.pid):
            pytest.fail(f"xrootd did not start: {log.read_text()[-2000:] if log.exists() else ''}")
        yield port, hport, data
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def root_dir() -> Iterator[Path]:
    for tool in ("xrootd", "xrdcp", "xrdfs", "xrdgsiproxy", "openssl"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (make system)")
    if os.geteuid() != 0:
        pytest.skip("xrootd -R xrootd needs root")
    root = Path(tempfile.mkdtemp(prefix="instore-upload-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _no_credentials(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE", "X509_USER_PROXY", "X509_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(root))
    monkeypatch.setenv("X509_USER_PROXY", str(root / "no-proxy"))
    monkeypatch.setenv("XRD_CONNECTIONRETRY", "1")


def _read(url: str, env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-m", "instore.cli", "read", url, "--engine", "root",
                           "--cache-mb", "30"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})  # fmt: skip
    return json.loads(proc.stdout)


def test_upload_to_plain_xrootd_and_xrdhttp_then_read_over_http(
    root_dir: Path, small_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_credentials(monkeypatch, root_dir)
    files = [small_files["ordered"], small_files["ordered-r1"]]
    with _xrootd(root_dir / "plain", "") as (port, hport, data):
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
        local = _read(str(files[0]), {})
        davix = _read(url, {})
        web = _read(url, {"INSTORE_ROOT_HTTP": "twebfile"})
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
        assert line.endswith("the copy is corrupt; remove it and rerun upload")
        assert "\n" not in line


def test_upload_through_gsi_with_the_proxy(
    root_dir: Path, small_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    pki = root_dir / "pki"
    pki.mkdir()
    pki.chmod(0o755)
    certdir, proxy = _pki(pki)
    gsi = (f"xrootd.seclib libXrdSec.so\nsec.protocol gsi -certdir:{certdir} "
           f"-cert:{pki / 'hostcert.pem'} -key:{pki / 'hostkey.pem'} -crl:0 -gmapopt:0 "
           "-vomsat:0 -dlgpxy:0 -ca:1\nsec.protbind * only gsi\n")  # fmt: skip
    files = [small_files["ordered"]]
    with _xrootd(root_dir / "gsi", gsi) as (port, _hport, data):
        path = write_real_site(root_dir / "gsi.yaml",
                               {"xrootd": f"root://localhost:{port}//{{file}}"}, name="gsi")  # fmt: skip
        path.write_text(path.read_text() + "auth: x509\n")
        site = load_site(path)
        _no_credentials(monkeypatch, root_dir)
        with pytest.raises(InstoreError, match=r"site gsi needs x509 credentials: no X\.509 proxy"):
            upload.upload(site, files)
        monkeypatch.setenv("X509_USER_PROXY", str(proxy))
        monkeypatch.setenv("X509_CERT_DIR", str(certdir))
        first = upload.upload(site, files)
        assert [f["action"] for f in first["files"]] == ["copied"]  # type: ignore[index]
        assert (data / files[0].name).read_bytes() == files[0].read_bytes()
        again = upload.upload(site, files)
        assert [f["action"] for f in again["files"]] == ["present"]  # type: ignore[index]
        assert str(proxy) not in json.dumps(again)
