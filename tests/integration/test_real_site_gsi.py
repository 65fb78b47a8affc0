"""A real site as WLCG sites run one (tests/integration/grid_site.py): XRootD with GSI only on
root://, XrdHttp over TLS taking the proxy as client certificate, a grid-mapfile and an authdb;
CA, host and user certificates and SHA-256 proxies made with openssl.

Against it, as an admin would: ``instore site upload`` places the study's files through root://
and https (a second upload skips them all), ``instore site preflight`` says ok, then names in one
line each fault (no proxy, expired proxy, SHA-1 proxy on https, CA not trusted, missing file,
changed file) before anything is measured; a sweep of the cache and protocols sections in the
payload image reads through root://, https and stage-in with both engines, 0 jobs failed, and
the site's report pages are built from it. Records keep the proxy's subject, never its content.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.cli import main
from instore.errors import InstoreError
from instore.filenames import replica_name
from instore.site import PreflightError, load_site
from instore.site import upload as upload_module
from instore.site.command import PROGRESS
from instore.site.real import open_real
from instore.study import load_study
from instore.summary.command import summarize, write
from instore.sweep import runner
from instore.sweep.options import SweepOptions

from tests.cli import Cli
from tests.integration.grid_site import (
    Pki,
    Server,
    grid_security,
    job_env,
    needs_tools,
    pki_root,
)
from tests.integration.grid_site import xrootd_server as serve

pytestmark = pytest.mark.integration

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
STUDY = {
    "profile": "t",
    "profiles": {
        "t": {
            "sites": ["grid"],
            "files": {"size_mb": 9, "replicas": 1, "seed": 7, "cluster_mb": 2},
            "retries": 0,
            "timeout_s": 180,
            "sections": {
                "cache": {
                    "layout": ["ordered"],
                    "cache_mb": [0, "default"],
                    "protocol": ["xrootd"],
                },
                "protocols": {
                    "layout": ["ordered"],
                    "protocol": ["xrootd", "http", "stage-in"],
                    "engine": ["root", "uproot"],
                },
            },
        }
    },
}


@dataclass(frozen=True)
class Grid:
    pki: Pki
    server: Server
    data: Path  # the local copies (the study's file names)
    site: Path  # the site file

    def env(self, **over: str) -> dict[str, str]:
        return job_env(self.pki, self.pki.root, **{"X509_USER_PROXY": str(self.pki.proxy), **over})


@pytest.fixture(scope="module")
def grid(small_files: dict[str, Path]) -> Iterator[Grid]:
    """The grid site, its PKI, the local copies and a site file; the server stopped by PID."""
    needs_tools()
    with pki_root("instore-grid-") as (root, pki):
        data = root / "files"
        data.mkdir()
        shutil.copy(small_files["ordered"], data / replica_name("ordered", 0))
        with serve(root / "se", grid_security(pki)) as server:
            site = root / "grid.yaml"
            site.write_text(yaml.safe_dump({
                "name": "grid", "kind": "real", "profile": "local-disk",
                "description": "GSI XRootD and XrdHttp over TLS on loopback, as a site runs them",
                "workers": {"nodes": 1, "cores": 2}, "auth": "x509",
                "endpoints": {"xrootd": server.url("root"), "http": server.url("https"),
                              "stage-in": server.url("root")},
                "calibration": {"file": replica_name("ordered", 0)},
            }))  # fmt: skip
            yield Grid(pki, server, data, site)


def _preflight(cli: Cli, grid: Grid, *extra: str, **env: str) -> list[str]:
    """The preflight's failure lines (empty: ok); asserts its verdict matches them. Its progress
    lines (``instore site: ...``: what it checks before the wait) are not failures."""
    proc = cli("site", "preflight", str(grid.site), "--data", str(grid.data), *extra,
               env=grid.env(**env))  # fmt: skip
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith(PROGRESS)]
    assert lines and lines[0].startswith("credentials: "), proc.stderr
    verdict = "ok" if proc.returncode == 0 else "FAILED"
    assert lines[-1] == f"site grid: {verdict}", proc.stderr
    return lines[1:-1]  # the first says what the jobs hold


@pytest.fixture(scope="module")
def uploaded(grid: Grid, cli: Cli) -> Grid:
    """The study's files placed by `instore site upload` through both endpoints."""
    first = cli("site", "upload", str(grid.site), "--data", str(grid.data),
                "--results", str(grid.pki.root / "results"), "--no-progress",
                env=grid.env())  # fmt: skip
    assert first.returncode == 0, first.stderr
    # root:// copies it; https then finds the same file there, equal (one namespace).
    assert "1 copied, 1 already there and equal" in first.stderr, first.stderr
    name = replica_name("ordered", 0)
    assert (grid.server.data / name).read_bytes() == (grid.data / name).read_bytes()
    return grid


def test_a_second_upload_skips_every_file(uploaded: Grid, cli: Cli) -> None:
    again = cli("site", "upload", str(uploaded.site), "--data", str(uploaded.data),
                "--results", str(uploaded.pki.root / "results"), "--no-progress",
                env=uploaded.env())  # fmt: skip
    assert again.returncode == 0 and "0 copied, 2 already there and equal" in again.stderr
    marker = (uploaded.pki.root / "results" / "grid" / "upload.json").read_text()
    assert str(uploaded.pki.proxy) not in marker and "BEGIN" not in marker


def test_preflight_opens_the_files_through_root_and_https(uploaded: Grid, cli: Cli) -> None:
    proc = cli("site", "preflight", str(uploaded.site), "--data", str(uploaded.data), "--all",
               env=uploaded.env())  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("credentials: X.509 proxy /DC=test/CN=Instore Test User/CN=11, ")
    assert first.endswith("m left")


def test_sweeps_after_the_first_ask_the_grid_site_for_sizes_only(
    uploaded: Grid, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each section's sweep opens the site. The first checksums every copy through GSI and
    TLS; the next ask only for sizes, and a copy whose size changed still stops them."""
    for key, value in uploaded.env().items():
        if key.startswith(("X509_", "XDG_", "XRD_")):
            monkeypatch.setenv(key, value)
    asked: list[tuple[str, bool]] = []
    real_found = upload_module.found

    def spying(url: str, size: int, checksum: str | None) -> upload_module.Copy | None:
        asked.append((url.split(":")[0], checksum is not None))
        return real_found(url, size, checksum)

    monkeypatch.setattr(upload_module, "found", spying)
    site, files = load_site(uploaded.site), sorted(uploaded.data.glob("*.root"))
    results = tmp_path / "results"
    open_real(site, files, results)
    assert sorted(asked) == [("https", True), ("root", True), ("root", True)]
    asked.clear()
    open_real(site, files, results)
    assert sorted(asked) == [("https", False), ("root", False), ("root", False)]

    copy = uploaded.server.data / files[0].name
    original = copy.read_bytes()
    try:
        copy.write_bytes(original + b"appended")
        with pytest.raises(PreflightError, match=r"size of root://.* is \d+ but the local"):
            open_real(site, files, results)
    finally:
        copy.write_bytes(original)


def test_calibration_of_a_site_without_posix_reads_the_file_whole_through_each_endpoint(
    uploaded: Grid, cli: Cli
) -> None:
    """The calibration file's size comes from the storage where no POSIX endpoint shows it, so
    a grid site gets a whole-file rate through root:// and https (it got only an RTT): a copy's,
    and the open file's read through the jobs' own readers with the proxy (no copy tool's
    start or GSI handshake in it)."""
    results = uploaded.pki.root / "results-calibration"
    proc = cli("site", "calibrate", str(uploaded.site), "--results", str(results),
               env=uploaded.env())  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    calibration = json.loads((results / "grid" / "calibration.json").read_text())
    size = (uploaded.data / replica_name("ordered", 0)).stat().st_size
    for protocol in ("xrootd", "http"):
        through = calibration["protocols"][protocol]
        assert through["bytes"] == size and through["mb_per_s"] > 0, calibration["protocols"]
        assert through["read_bytes"] == size and through["read_requests"] >= 1, through
        assert through["read_mb_per_s"] > 0, through


def test_preflight_without_a_proxy_stops_before_the_network(uploaded: Grid, cli: Cli) -> None:
    lines = _preflight(cli, uploaded, X509_USER_PROXY=str(uploaded.pki.root / "none"))
    assert lines == [f"credentials: no X.509 proxy at {uploaded.pki.root / 'none'} "
                     f"(X509_USER_PROXY={uploaded.pki.root / 'none'}) -- create one with "
                     "voms-proxy-init (or xrdgsiproxy init) and export X509_USER_PROXY"]  # fmt: skip


def test_preflight_with_an_expired_proxy_says_when_it_expired(uploaded: Grid, cli: Cli) -> None:
    lines = _preflight(cli, uploaded, X509_USER_PROXY=str(uploaded.pki.expired_proxy))
    assert len(lines) == 1
    assert lines[0].startswith(f"credentials: X.509 proxy {uploaded.pki.expired_proxy} expired "
                               "at 2020-01-02T00:00:00")  # fmt: skip
    assert "renew it with voms-proxy-init" in lines[0]


def test_preflight_with_a_sha1_proxy_names_the_digest_for_https_only(
    uploaded: Grid, cli: Cli
) -> None:
    """GSI takes xrdgsiproxy's SHA-1 proxy; OpenSSL 3 will not present it over TLS."""
    lines = _preflight(cli, uploaded, X509_USER_PROXY=str(uploaded.pki.sha1_proxy))
    assert len(lines) == 1 and lines[0].startswith("http https://localhost:"), lines
    assert "is signed with SHA1, which OpenSSL refuses as a TLS client certificate" in lines[0]
    assert "voms-proxy-init" in lines[0]


def test_preflight_with_the_ca_not_trusted_names_the_issuer(
    uploaded: Grid, tmp_path: Path, cli: Cli
) -> None:
    lines = _preflight(cli, uploaded, X509_CERT_DIR=str(tmp_path))  # a CA directory without ours
    by_protocol = {line.split(" ", 1)[0]: line for line in lines}
    assert set(by_protocol) == {"http", "xrootd", "stage-in"}, lines
    assert ("TLS: the server's certificate is issued by /DC=test/CN=Instore Test CA, which "
            f"neither the system nor X509_CERT_DIR ({tmp_path}) trusts") in by_protocol["http"]  # fmt: skip
    for proto in ("xrootd", "stage-in"):
        assert (f"GSI: the server's host certificate is issued by a CA that X509_CERT_DIR "
                f"({tmp_path}) does not hold") in by_protocol[proto]  # fmt: skip
    assert all("renew" not in line and "refused X.509 proxy" not in line for line in lines)


def test_preflight_names_a_missing_file(uploaded: Grid, cli: Cli) -> None:
    lines = _preflight(cli, uploaded, "--file", "absent-r0.root")
    assert len(lines) == 3  # xrootd, stage-in (root://) and http
    for line in lines:
        assert "absent-r0.root: no such file there -- put the test files in place" in line


def test_preflight_names_a_changed_file_by_its_checksum(uploaded: Grid, cli: Cli) -> None:
    name = replica_name("ordered", 0)
    remote = uploaded.server.data / name
    good, stat = remote.read_bytes(), remote.stat()
    try:
        remote.write_bytes(good[:100] + bytes(len(good) - 100))  # same size, other bytes
        lines = _preflight(cli, uploaded)
    finally:
        remote.write_bytes(good)
        # XRootD keeps a file's adler32 with its mtime, in seconds: restored within the second
        # the bad copy's sum was taken, the good copy would be served that stale sum (seen: the
        # next test's preflight called the good copy corrupt). Its own mtime back makes it stale.
        os.utime(remote, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert len(lines) == 3, lines  # xrootd, stage-in (root://) and http
    for line in lines:
        assert "adler32 of " in line and f"//{name} is 0x" in line
        assert line.endswith(upload_module.REUPLOAD)


def test_a_sweep_refuses_to_start_on_an_expired_proxy(
    uploaded: Grid, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X509_USER_PROXY", str(uploaded.pki.expired_proxy))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    opts = SweepOptions(
        study=load_study(tmp_path / "study.yaml"), site=str(uploaded.site), sections=["cache"],
        data=uploaded.data, results=tmp_path / "results", scratch=tmp_path / "scratch",
        runtime="none", progress=False,
    )  # fmt: skip
    with pytest.raises(InstoreError, match=r"site grid needs x509 credentials: X\.509 proxy"):
        runner.run_site(opts)
    assert not (tmp_path / "results" / "grid" / "records.jsonl").exists(), "no job started"


@pytest.mark.parametrize("scheme", ["https", "davs"])
def test_stage_in_over_https_copies_with_the_proxy(
    uploaded: Grid, scheme: str, cli: Cli, tmp_path: Path
) -> None:
    """A site whose stage-in endpoint is https:// (or davs://): xrdcp refused it, "https file
    protocol is not supported", until told --allow-http; its XrdClHttp then copies with the
    proxy, and the job reads the copy whole."""
    url = uploaded.server.url(scheme).format(file=replica_name("ordered", 0))
    proc = cli("read", url, "--stage-in", "xrdcp", "--scratch", str(tmp_path / "scratch"),
               "--timeout", "60", env=uploaded.env())  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, (proc.stdout[-2000:], proc.stderr[-2000:])
    record = json.loads(lines[-1])
    assert record["error"] is None and record["stage_in_s"] > 0 and record["events"] > 0
    assert record["provenance"]["credential"]["kind"] == "x509"


def test_upload_without_a_proxy_is_refused_before_copying(uploaded: Grid, cli: Cli) -> None:
    no_proxy = uploaded.env(X509_USER_PROXY=str(uploaded.pki.root / "none"))
    proc = cli("site", "upload", str(uploaded.site), "--data", str(uploaded.data),
               "--no-progress", env=no_proxy)  # fmt: skip
    assert proc.returncode != 0
    assert (
        "site grid needs x509 credentials: no X.509 proxy" in proc.stderr.strip().splitlines()[-1]
    )


def _report(results: Path, out: Path, data: Path) -> list[Path]:
    """What the report rules run for the measured sections: summary, notebooks, pages."""
    write(results, "grid", *summarize(results, "grid"))
    params = ["-p", "site=grid", "-p", f"results={results}", "-p", f"data={data}"]
    pages = []
    for name in ("cache", "protocols"):
        executed, page = out / f"{name}.ipynb", out / f"{name}.html"
        assert main(["report", "execute", str(NOTEBOOKS / "section.ipynb"), "--out",
                     str(executed), *params, "-p", f"section={name}"]) == 0  # fmt: skip
        assert main(["report", "render", str(executed), "--out", str(page)]) == 0
        pages.append(page)
    return pages


def test_a_sweep_in_the_payload_image_reads_root_https_and_stage_in_with_both_engines(
    uploaded: Grid, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload_image: dict
) -> None:
    """The proxy and CA directory are bound read-only into each container, the variables
    point at them inside; every job reads, the records name the proxy's subject and the http
    client, and the site's report pages are built from them."""
    for key, value in uploaded.env().items():
        if key.startswith(("X509_", "XDG_", "XRD_")):
            monkeypatch.setenv(key, value)
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    opts = SweepOptions(
        study=load_study(tmp_path / "study.yaml"), site=str(uploaded.site),
        sections=["cache", "protocols"], data=uploaded.data, results=tmp_path / "results",
        scratch=tmp_path / "scratch", runtime="podman", progress=False,
    )  # fmt: skip
    summary = runner.run_site(opts)
    tables = {s: pd.read_parquet(summary.tables[s]) for s in ("cache", "protocols")}
    protocols = tables["protocols"]
    assert set(protocols["protocol"]) == {"xrootd", "http", "stage-in"}
    assert set(protocols["engine"]) == {"root", "uproot"}
    for section, table in tables.items():
        assert set(table["runtime"]) == {"podman"}, section
        failed = table.loc[table["status"] != "ok", ["protocol", "engine", "error"]]
        assert failed.empty, f"{section}: {failed.to_dict('records')}"
    http = protocols[protocols["protocol"] == "http"].set_index("engine")["http_client"]
    # the plug-in's version comes from dpkg: the image has no /usr/share/doc (it said "?")
    assert re.match(r"XrdClHttp \d+\.\d+\.\d+ \(Davix\)", http["root"]), http["root"]
    assert "X.509 proxy" in http["root"]
    assert "X.509 proxy" in http["uproot"]
    records = (tmp_path / "results" / "grid" / "records.jsonl").read_text()
    assert "/DC=test/CN=Instore Test User/CN=11" in records
    assert str(uploaded.pki.proxy) not in records, "not even the proxy's path is recorded"
    secret = [ln for ln in uploaded.pki.proxy.read_text().splitlines() if "-----" not in ln]
    assert not any(line in records for line in secret), "no proxy content in the records"
    for page in _report(tmp_path / "results", tmp_path / "reports", uploaded.data):
        html = page.read_text()
        assert "grid" in html and "Traceback" not in html
