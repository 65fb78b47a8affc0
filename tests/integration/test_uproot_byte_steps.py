"""Byte-sized uproot steps over root:// against a real XRootD server (Debian's, started here):
in the pinned set uproot's default source fails (``TypeError: integer argument expected for
offset``, scikit-hep/uproot5#1582); with ``instore.uproot_xrootd.apply()`` it reads every entry,
the same arrays as the local file, in several steps; so does the payload's own source. Each read
runs in a child process: the patch and the XRootD client stay out of the test process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from instore.generate import generate_files

from tests.integration.grid_site import Server, needs_xrootd, readable_tmp, xrootd_server

pytestmark = pytest.mark.integration
BRANCHES = ["Jet_pt", "Jet_eta", "Jet_btagCSVV2", "Muon_pt", "Electron_pt"]
# Iterate the tree in steps of this many bytes, in a child; print steps, entries and a checksum.
READ = """
import json, sys, hashlib
import awkward as ak, uproot
url, step, handler, fix = sys.argv[1:5]
if fix == "fix":
    import instore.uproot_xrootd
    instore.uproot_xrootd.apply()
if handler == "payload":
    from instore.storage.source import InstrumentedSource as handler
else:
    handler = None
branches = json.loads(sys.argv[5])
steps, entries, digest = 0, 0, hashlib.sha256()
try:
    for chunk in uproot.iterate(url + ":Events", branches, step_size=step, handler=handler):
        steps += 1
        entries += len(chunk)
        for b in branches:
            digest.update(ak.to_numpy(ak.flatten(chunk[b], axis=None)).tobytes())
except TypeError as err:
    print(json.dumps({"error": str(err)}))
    sys.exit(0)
print(json.dumps({"steps": steps, "entries": entries, "sha256": digest.hexdigest()}))
"""


@pytest.fixture(scope="module")
def nano(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A NanoAOD-like file of many small baskets (0.5 MB clusters), so byte steps cut it."""
    out = tmp_path_factory.mktemp("byte-steps")
    files = generate_files(out, ["ordered"], replicas=1, n_events=3000, cluster_mb=0.5,
                           like="cms-nanoaod", fileset="nano")  # fmt: skip
    return files[("ordered", 0)]


@pytest.fixture(scope="module")
def server(nano: Path) -> Iterator[Server]:
    needs_xrootd()
    with readable_tmp("instore-byte-steps-") as root, xrootd_server(root / "srv") as srv:
        shutil.copy(nano, srv.data / nano.name)
        yield srv


def _read(url: str, step: str, handler: str = "default", fix: bool = True) -> dict:
    done = subprocess.run([sys.executable, "-c", READ, url, step, handler, "fix" if fix else "-",
                           json.dumps(BRANCHES)], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_uproot_alone_still_fails_on_byte_steps_over_root(server: Server, nano: Path) -> None:
    """The bug the workaround is for, in the pinned set; when this fails, uproot converts in
    basket_key: drop instore.uproot_xrootd (docs/replay.md)."""
    got = _read(f"root://localhost:{server.port}//{nano.name}", "100 kB", fix=False)
    assert got == {"error": "integer argument expected for offset"}


@pytest.mark.parametrize("step", ["100 kB", "1 MB"])
def test_byte_steps_over_root_read_what_the_local_file_holds(
    server: Server, nano: Path, step: str
) -> None:
    local = _read(str(nano), step)
    remote = _read(f"root://localhost:{server.port}//{nano.name}", step)
    assert remote == local and remote["entries"] == 3000
    if step == "100 kB":
        assert remote["steps"] > 1


def test_the_payloads_own_source_reads_byte_steps_over_root(server: Server, nano: Path) -> None:
    """instore's uproot engine reads through its own source, which casts for the client too."""
    got = _read(f"root://localhost:{server.port}//{nano.name}", "100 kB", "payload", fix=False)
    assert got == _read(str(nano), "100 kB")
