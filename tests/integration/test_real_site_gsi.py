"""A real site as a grid site runs it: XRootD with GSI authentication, CA, host and user
certificates made with openssl, a proxy from ``xrdgsiproxy init``. Sweep jobs (``--runtime
none``) read through root:// with the proxy exported; without it, records and preflight say
authentication and name the fix; records keep the proxy's subject and expiry, never its content.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.errors import InstoreError
from instore.study import load_study
from instore.sweep import runner

from tests.conftest import write_real_site
from tests.integration.gsi_pki import _answers, _free_port, _pki

pytestmark = pytest.mark.integration

STUDY = {
    "profile": "t",
    "profiles": {
        "t": {
            "sites": ["gsi"],
            "files": {"size_mb": 9, "replicas": 1, "seed": 7, "cluster_mb": 2},
            "retries": 0,
            "timeout_s": 120,
            "sections": {
                "protocols": {
                    "layout": ["ordered"],
                    "protocol": ["xrootd"],
                    "engine": ["root", "uproot"],
                },
            },
        }
    },
}


@dataclass(frozen=True)
class GsiServer:
    port: int
    proxy: Path
    certdir: Path
    data: Path
    root: Path

    @property
    def endpoint(self) -> str:
        return f"root://localhost:{self.port}//{{file}}"


@pytest.fixture(scope="module")
def gsi_server(small_files: dict[str, Path]) -> Iterator[GsiServer]:
    """XRootD 5.5 (Debian's) with GSI only, serving the small files; stopped by PID after."""
    for tool in ("xrootd", "xrdgsiproxy", "xrdfs", "openssl"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (make system)")
    if os.geteuid() != 0:
        pytest.skip("xrootd -R xrootd needs root")
    root = Path(tempfile.mkdtemp(prefix="instore-gsi-"))
    root.chmod(0o755)  # the xrootd user reads the data and the host certificate
    proc = None
    try:
        certdir, proxy = _pki(root)
        data, run = root / "data", root / "run"
        data.mkdir()
        run.mkdir()
        shutil.chown(run, "xrootd")
        shutil.copy(small_files["ordered"], data / "ordered-r0.root")
        port = _free_port()
        conf = root / "xrootd.cfg"
        conf.write_text(
            f"xrd.port {port}\nall.export /\noss.localroot {data}\n"
            f"all.adminpath {run}\nall.pidpath {run}\nxrootd.seclib libXrdSec.so\n"
            f"sec.protocol gsi -certdir:{certdir} -cert:{root / 'hostcert.pem'} "
            f"-key:{root / 'hostkey.pem'} -crl:0 -gmapopt:0 -vomsat:0 -dlgpxy:0 -ca:1\n"
            "sec.protbind * only gsi\n"
        )
        log = run / "xrootd.log"
        proc = subprocess.Popen(["xrootd", "-R", "xrootd", "-c", str(conf), "-l", str(log)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        if not _answers(port, proc.pid):
            pytest.fail(f"xrootd did not start: {log.read_text()[-2000:] if log.exists() else ''}")
        yield GsiServer(port, proxy, certdir, data, root)
    finally:
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def _site(server: GsiServer, tmp: Path, auth: str | None = None) -> Path:
    path = write_real_site(tmp / "gsi.yaml", {"xrootd": server.endpoint}, name="gsi")
    data = yaml.safe_load(path.read_text())
    data["calibration"] = {"file": "ordered-r0.root"}
    if auth:
        data["auth"] = auth
    path.write_text(yaml.safe_dump(data))
    return path


def _credentials(monkeypatch: pytest.MonkeyPatch, server: GsiServer, proxy: Path) -> None:
    for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(server.root / "run"))
    monkeypatch.setenv("X509_USER_PROXY", str(proxy))
    monkeypatch.setenv("X509_CERT_DIR", str(server.certdir))
    monkeypatch.setenv("XRD_CONNECTIONRETRY", "1")


def _sweep(
    server: GsiServer, tmp: Path, auth: str | None = None, runtime: str = "none"
) -> pd.DataFrame:
    tmp.mkdir(exist_ok=True)
    (tmp / "study.yaml").write_text(yaml.safe_dump(STUDY))
    opts = runner.SweepOptions(
        study=load_study(tmp / "study.yaml"),
        site=str(_site(server, tmp, auth)),
        sections=["protocols"],
        data=server.data,
        results=tmp / "results",
        scratch=tmp / "scratch",
        runtime=runtime,
        progress=False,
    )
    summary = runner.run_site(opts)
    return pd.read_parquet(summary.tables["protocols"])


def _preflight(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "instore.cli", "site", "preflight", str(site)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_jobs_read_through_gsi_with_the_proxy_and_record_who_not_what(
    gsi_server: GsiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _credentials(monkeypatch, gsi_server, gsi_server.proxy)
    table = _sweep(gsi_server, tmp_path, auth="x509")
    assert set(table["engine"]) == {"root", "uproot"}
    failed = table.loc[table["status"] != "ok", ["engine", "error"]].to_dict("records")
    assert not failed, f"both engines read through GSI: {failed}"
    records = (tmp_path / "results" / "gsi" / "records.jsonl").read_text()
    assert "/DC=test/CN=Instore Test User" in records and '"expires"' in records
    secret = [ln for ln in gsi_server.proxy.read_text().splitlines() if not ln.startswith("---")]
    assert not any(line in records for line in secret), "no proxy content in the records"
    assert _preflight(_site(gsi_server, tmp_path)).stderr.strip().endswith("site gsi: ok")


def test_jobs_in_the_payload_image_read_through_gsi_with_the_proxy_bound_in(
    gsi_server: GsiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload_image: dict
) -> None:
    """In podman the proxy and CA directory are bound read-only and the variables point at
    them inside: both engines read, and the records name the runtime and the proxy's subject."""
    _credentials(monkeypatch, gsi_server, gsi_server.proxy)
    table = _sweep(gsi_server, tmp_path, auth="x509", runtime="podman")
    assert set(table["runtime"]) == {"podman"} and set(table["engine"]) == {"root", "uproot"}
    failed = table.loc[table["status"] != "ok", ["engine", "error"]].to_dict("records")
    assert not failed, f"both engines read through GSI inside the image: {failed}"
    records = (tmp_path / "results" / "gsi" / "records.jsonl").read_text()
    assert "/DC=test/CN=Instore Test User" in records
    assert str(gsi_server.proxy) not in records, "not even the proxy's path is recorded"


def test_without_the_proxy_jobs_and_preflight_say_authentication_and_the_fix(
    gsi_server: GsiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-proxy"
    _credentials(monkeypatch, gsi_server, missing)
    table = _sweep(gsi_server, tmp_path)
    assert (table["status"] == "failed").all()
    for error in table["error"]:
        assert error.startswith("authentication refused by root://localhost"), error
        assert "no valid X.509 proxy found (X509_USER_PROXY=" in error, "the job names it"
        assert "voms-proxy-init" in error
        assert "regenerate" not in error and "not a ROOT file" not in error
    proc = _preflight(_site(gsi_server, tmp_path))
    assert proc.returncode == 1
    assert "xrootd root://localhost" in proc.stderr and "authentication refused" in proc.stderr
    with pytest.raises(InstoreError, match=r"site gsi needs x509 credentials: no X\.509 proxy"):
        _sweep(gsi_server, tmp_path / "x", auth="x509")
