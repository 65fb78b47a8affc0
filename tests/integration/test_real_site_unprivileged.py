"""A real site studied by a user who is not root, as site admins run it: a local XRootD site
with GSI on root:// and XrdHttp over TLS (tests/integration/grid_site.py), the study's files
uploaded by `instore site upload`, checked by `instore site preflight`, then measured by a short
`instore sweep` through root://, https and stage-in, every command run as an unprivileged user
(made with useradd when missing, removed after) through runuser.

That user runs Debian's own python3 (3.11.2; the project's venv may be built with another, in
a home only root may enter): a venv made here with it, whose only package path is the project
venv's site-packages, read-only to the user. The pins installing on 3.11.2 is
tests/unit/test_envs.py's; this runs them there, without root.

And a refusal names its real cause: uploading into a directory the server may not write is
answered "[3010] Unable to create ...; permission denied" (kXR_NotAuthorized, the code of an
identity refusal too); it was said as "authentication refused ... renew it with the right VO",
though the same proxy read the site fine. It now names the directory to make writable."""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from instore.filenames import replica_name

from tests.cli import PACKAGE_ROOT
from tests.integration.grid_site import Pki, Server, grid_security, needs_tools, pki_root
from tests.integration.grid_site import xrootd_server as serve

pytestmark = pytest.mark.integration

USER = "instore-unpriv"
DISTRIBUTION_PYTHON = Path("/usr/bin/python3")
READ_ONLY = "ro"  # a directory of the export the server's own user may not write
STUDY = {
    "profile": "t",
    "profiles": {
        "t": {
            "sites": ["mysite"],
            "files": {"size_mb": 9, "replicas": 1, "seed": 7, "cluster_mb": 2},
            "retries": 0,
            "timeout_s": 120,
            "sections": {
                "protocols": {
                    "layout": ["ordered"],
                    "protocol": ["xrootd", "http", "stage-in"],
                    "engine": ["root"],
                },
            },
        }
    },
}


@dataclass(frozen=True)
class Study:
    """What the user works with: the site, its PKI, and the user's own directory."""

    pki: Pki
    server: Server
    home: Path  # the user's: the proxy, the data, the results, the site files
    python: Path  # Debian's python3 in a venv of the user's

    def site_file(self, sub: str = "") -> Path:
        path = self.home / f"mysite{sub.strip('/')}.yaml"
        path.write_text(yaml.safe_dump({
            "name": "mysite", "kind": "real", "profile": "local-disk",
            "description": "GSI XRootD and XrdHttp over TLS on loopback, studied without root",
            "workers": {"nodes": 1, "cores": 2}, "auth": "x509", "upload": True,
            "endpoints": {"xrootd": self.server.url("root", sub),
                          "http": self.server.url("https", sub),
                          "stage-in": self.server.url("root", sub)},
            "calibration": {"file": replica_name("ordered", 0)},
        }))  # fmt: skip
        shutil.chown(path, USER)
        return path

    def instore(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``instore ARGS`` as the unprivileged user, in its own directory, with its proxy."""
        env = {
            "PATH": f"{self.python.parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home), "XDG_RUNTIME_DIR": str(self.home),
            "X509_USER_PROXY": str(self.home / "x509up"), "X509_CERT_DIR": str(self.pki.certdir),
            "XRD_CONNECTIONRETRY": "1",
            "LANG": "C.UTF-8",
        }  # fmt: skip
        cmd = ["runuser", "-u", USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
               str(self.python), "-m", "instore.cli", *args]  # fmt: skip
        return subprocess.run(cmd, cwd=self.home, capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip


def _needs_a_way_to_drop_root() -> None:
    needs_tools()
    for tool in ("runuser", "useradd", "userdel"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (util-linux, passwd)")
    if not DISTRIBUTION_PYTHON.exists():
        pytest.skip(f"{DISTRIBUTION_PYTHON} (Debian's python3) is not installed")


@pytest.fixture(scope="module")
def user() -> Iterator[str]:
    """The unprivileged user: made here when missing, and then removed."""
    _needs_a_way_to_drop_root()
    made = subprocess.run(["id", "-u", USER], capture_output=True, check=False).returncode != 0
    if made:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        USER], check=True, capture_output=True)  # fmt: skip
    try:
        yield USER
    finally:
        if made:
            subprocess.run(["userdel", USER], check=False, capture_output=True)


def _user_venv(where: Path) -> Path:
    """A venv of Debian's python3 whose packages are the project venv's (read-only), with
    the ``instore`` console script (the sweep starts its warm payload by that name)."""
    subprocess.run([str(DISTRIBUTION_PYTHON), "-m", "venv", "--without-pip", str(where)],
                   check=True, capture_output=True)  # fmt: skip
    site = Path(sysconfig.get_paths()["purelib"])
    # the packages, and this checkout's instore as `pip install -e .` would put it on the path
    paths = f"{site}\n{PACKAGE_ROOT}\n"
    (next(where.glob("lib/python3*/site-packages")) / "project-venv.pth").write_text(paths)
    python = where / "bin" / "python3"
    script = where / "bin" / "instore"  # the console script pip writes for the entry point
    script.write_text(f"#!{python}\nimport sys\nfrom instore.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return python


@pytest.fixture(scope="module")
def study(user: str, small_files: dict[str, Path]) -> Iterator[Study]:
    with pki_root("instore-unpriv-") as (root, pki):
        home = root / "home"
        (home / "files").mkdir(parents=True)
        shutil.copy(small_files["ordered"], home / "files" / replica_name("ordered", 0))
        shutil.copy(pki.proxy, home / "x509up")
        python = _user_venv(root / "venv")
        subprocess.run(["chown", "-R", user, str(home)], check=True)
        (home / "x509up").chmod(0o600)
        with serve(root / "se", grid_security(pki)) as server:
            (server.data / READ_ONLY).mkdir(mode=0o755)  # root's: the xrootd user may not write
            yield Study(pki, server, home, python)


def test_the_user_runs_debians_own_python(study: Study) -> None:
    proc = subprocess.run(["runuser", "-u", USER, "--", str(study.python), "-c",
                           "import os, sys, uproot; print(os.geteuid(), sys.version.split()[0])"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    uid, version = proc.stdout.split()[-2:]
    assert uid != "0"
    assert version == subprocess.run([str(DISTRIBUTION_PYTHON), "--version"], capture_output=True,
                                     text=True, check=True).stdout.split()[1]  # fmt: skip


@pytest.fixture(scope="module")
def uploaded(study: Study) -> Study:
    proc = study.instore("site", "upload", str(study.site_file()), "--data", "files",
                         "--results", "results", "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "1 copied, 1 already there and equal" in proc.stderr, proc.stderr
    name = replica_name("ordered", 0)
    assert (study.server.data / name).read_bytes() == (study.home / "files" / name).read_bytes()
    return study


def test_an_unprivileged_user_uploads_and_preflights_a_gsi_site(uploaded: Study) -> None:
    proc = uploaded.instore("site", "preflight", str(uploaded.site_file()), "--data", "files",
                            "--all")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("credentials: X.509 proxy /DC=test/CN=Instore Test User/CN=11")
    assert lines[-1] == "site mysite: ok"


def test_an_unprivileged_user_sweeps_root_https_and_stage_in(uploaded: Study) -> None:
    (uploaded.home / "study.yaml").write_text(yaml.safe_dump(STUDY))
    proc = uploaded.instore("sweep", "--site", str(uploaded.site_file()), "--study", "study.yaml",
                            "--data", "files", "--results", "results", "--scratch", "scratch",
                            "--runtime", "none", "--no-progress", timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in
               (uploaded.home / "results" / "mysite" / "records.jsonl").read_text().splitlines()]  # fmt: skip
    assert {r["protocol"] for r in records} == {"xrootd", "http", "stage-in"}
    assert all(r["error"] is None and r["events"] > 0 for r in records), [
        r["error"] for r in records
    ]
    assert {r["provenance"]["credential"]["subject"] for r in records} == {
        "/DC=test/CN=Instore Test User/CN=11"
    }
    owners = {p.stat().st_uid for p in (uploaded.home / "results").rglob("*")}
    assert 0 not in owners, "everything the study wrote is the user's"


def test_an_upload_the_server_may_not_write_names_the_directory_not_the_proxy(
    uploaded: Study,
) -> None:
    """The same proxy read the site above; xrootd may not write ro/ (root's)."""
    proc = uploaded.instore("site", "upload", str(uploaded.site_file(f"{READ_ONLY}/")),
                            "--data", "files", "--results", "results-ro", "--no-progress")  # fmt: skip
    assert proc.returncode != 0
    line = proc.stderr.strip().splitlines()[-1]
    url = uploaded.server.url("root", f"{READ_ONLY}/").format(file=replica_name("ordered", 0))
    assert f"{url}: the storage accepted X.509 proxy /DC=test/CN=Instore Test User/CN=11 but " \
           "refused to write there ([3010] Unable to create" in line, line  # fmt: skip
    assert "permission denied" in line
    assert line.endswith(f"ask the site to make {url.rsplit('/', 1)[0]}/ writable for that "
                         "identity, or point the site file's endpoints at a directory it may write")  # fmt: skip
    assert "renew" not in line and "authentication refused" not in line
