"""Fixtures shared by all test levels: the command line (``cli``, ``cli_main``: tests/cli.py),
small generated files, made once per session; and the payload image, whose build starts with
the session."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest
import yaml
from instore.generate import generate_files

from tests import cli as _cli
from tests.beside import lowest_priority

REPO = Path(__file__).resolve().parents[1]
IMAGE_BUILD_LOG = REPO / "build" / "test-image-build.log"
APPTAINER_BUILD_LOG = REPO / "build" / "test-apptainer-build.log"
SIF_BUILD_LOG = REPO / "build" / "test-sif-build.log"
# The session's background builds by name: "image" (podman), "apptainer" (from source), "sif"
# (made from the image once both are done, by the thread in "sif-after").
_builds: dict[str, subprocess.Popen[bytes]] = {}
_sif_after: list[threading.Thread] = []


def _needs_image(args: list[str]) -> bool:
    """Whether the selected tests may use the payload image: anything beyond tests/unit and
    tests/e2e (whose study runs its jobs with runtime none)."""
    return any({"unit", "e2e"}.isdisjoint(Path(a).parts) for a in args or ["tests"])


def _needs_apptainer(args: list[str]) -> bool:
    """Whether the selection holds the Apptainer tests: tests/integration/test_apptainer*.py
    or a directory above them."""
    for arg in args or ["tests"]:
        path = Path(arg.split("::")[0])
        if path.name.startswith("test_apptainer") or (
            {"unit", "e2e"}.isdisjoint(path.parts) and not path.suffix
        ):
            return True
    return False


def _background(name: str, argv: list[str], log: Path, **kwargs) -> None:
    """Start one build at the lowest CPU priority, so the tests that time sweeps meanwhile lose as
    little as they can to it, in its own process group. Nice 19 alone is not that here: with the
    kernel's autogroups a process's nice weighs only within its session, and the sweeps and
    servers run in sessions of their own, so its session's autogroup gets nice 19 too
    (``tests.beside.lowest_priority``; a fault test's 1.5-s jobs waited 3.4-4.0 s for a CPU
    beside builds at plain nice 19, 2026-12-02)."""
    with log.open("wb") as out:
        _builds[name] = subprocess.Popen(
            argv, preexec_fn=lowest_priority, cwd=REPO, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True, **kwargs,
        )  # fmt: skip


def _sif_once_built() -> None:
    """The SIF from the image (minutes: an OCI archive, then mksquashfs), started as soon as
    the image and Apptainer are both built, so it overlaps the tests of the image instead of
    holding up the Apptainer tests; a failed build leaves the fixture to say why."""
    if _builds["image"].wait() == 0 and _builds["apptainer"].wait() == 0:
        _background("sif", _cli.command("container", "build", "--sif"), SIF_BUILD_LOG,
                    env=_cli.environ())  # fmt: skip


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start building the payload image at once, in the background (minutes on a fresh clone:
    a Debian base, then the pinned wheels): the tests that need no image run meanwhile, and
    ``payload_image`` waits for it. Where the Apptainer tests are selected, Apptainer too
    (from source where none is installed: 9-15 min on 2 cores), then the SIF."""
    if shutil.which("podman") is None or not _needs_image(session.config.args):
        return
    IMAGE_BUILD_LOG.parent.mkdir(parents=True, exist_ok=True)
    _background("image", _cli.command("container", "build"), IMAGE_BUILD_LOG, env=_cli.environ())
    if _needs_apptainer(session.config.args):
        _background("apptainer", [str(REPO / "envs" / "build-apptainer.sh")], APPTAINER_BUILD_LOG)
        _sif_after.append(threading.Thread(target=_sif_once_built, daemon=True))
        _sif_after[0].start()


def _rank(tests: list[pytest.Item]) -> int:
    """0: needs no image; 1: needs the payload image; 2: needs the SIF (the last build);
    3: ``quiet`` (compares timings across runs, so not beside a build, nor beside the tests
    ``make test`` runs beside this session, which have the time of the SIF's tests to end)."""
    fixtures = [set(getattr(t, "fixturenames", ())) for t in tests]
    if all(t.get_closest_marker("quiet") for t in tests):
        return 3
    if any("sif_target" in names for names in fixtures):
        return 2
    return 1 if all("payload_image" in names for names in fixtures) else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules in the order their builds end (each group in its own order): those that need no
    image first, which overlap every build; then those of the payload image, beside the
    Apptainer and SIF builds; then those of the SIF; then the ``quiet`` ones, once every build
    and the session beside have ended (seen in CI: a 20% IOPS cut measured beside the build
    moved the CPU efficiency by 2% instead of 14-18%; ranked before the SIF's, they waited 8
    min for the session beside, of which the SIF's tests, 2.5 min, could have run). Whole
    modules only, so no module fixture is set up twice and no test moves behind the unit tests
    that it must precede (see pyproject.toml)."""
    by_module: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_module.setdefault(item.nodeid.split("::")[0], []).append(item)
    rank = {module: _rank(tests) for module, tests in by_module.items()}
    items.sort(key=lambda i: rank[i.nodeid.split("::")[0]])  # stable


@pytest.fixture(autouse=True)
def _quiet_after_image_build(request: pytest.FixtureRequest) -> None:
    """A ``quiet`` test starts once every background build has ended (by then, as a rule: it
    runs late), and the tests ``make test`` runs beside this session too."""
    if request.node.get_closest_marker("quiet"):
        wait_for_builds()
        wait_for_neighbour()


def wait_for_neighbour() -> None:
    """Until the test session that ``make test`` runs beside this one has ended: it holds the
    lock named by INSTORE_TEST_NEIGHBOUR_LOCK (flock) while it runs."""
    lock = os.environ.get("INSTORE_TEST_NEIGHBOUR_LOCK")
    if not lock or not Path(lock).exists():
        return
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_SH)  # blocks while the neighbour holds it
        fcntl.flock(held, fcntl.LOCK_UN)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A session that ended early stops its builds: the script, make, go and their children."""
    for proc in _builds.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)


def wait_for_image_build() -> None:
    """Until the session's background image build has ended (its result is checked by building
    again, which is a no-op when the image is current and says why when it is not)."""
    if "image" in _builds:
        _builds["image"].wait()


def wait_for_builds() -> None:
    """Until every background build of the session has ended, the SIF's too."""
    wait_for_image_build()
    for thread in _sif_after:
        thread.join()
    for proc in _builds.values():
        proc.wait()


def wait_for_apptainer_build() -> int | None:
    """The exit status of the session's background Apptainer build (None: none was started),
    once the SIF made after it has ended too."""
    wait_for_builds()
    proc = _builds.get("apptainer")
    return None if proc is None else proc.returncode


@pytest.fixture(scope="session")
def cli() -> _cli.Cli:
    """``cli(*args, check=False, env=None, cwd=None, timeout=300)`` runs ``instore ARGS`` in a
    child process and returns its ``CompletedProcess`` (text); ``cli.popen(*args, ...)`` starts
    it; ``cli.command(*args)`` is its command line."""
    return _cli.Cli()


@pytest.fixture
def cli_main(capsys: pytest.CaptureFixture[str]) -> _cli.CliMain:
    """``cli_main(*args)`` runs ``instore ARGS`` in this process (``instore.cli.main``) and
    returns its exit code and what it printed as a ``CompletedProcess``."""
    return lambda *args: _cli.run_main(capsys, *args)


SMALL_EVENTS = 6000  # about 9 MB per file: big enough for clusters and caches to matter


@pytest.fixture(scope="session")
def small_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One replica of each layout, replica 0 of seed 7, plus replica 1 in the ordered layout."""
    out = tmp_path_factory.mktemp("files")
    written = generate_files(out, replicas=1, seed=7, n_events=SMALL_EVENTS, cluster_mb=2.0)
    extra = generate_files(
        out, layouts=["ordered"], replicas=2, seed=7, n_events=SMALL_EVENTS, cluster_mb=2.0
    )
    files = {layout: path for (layout, _), path in written.items()}
    files["ordered-r1"] = extra[("ordered", 1)]
    return files


def write_real_site(
    path: Path, endpoints: dict[str, str], nodes: int = 1, name: str = "local"
) -> Path:
    """A real-site file (nothing emulated, nothing started) with these endpoint templates."""
    site = {
        "name": name,
        "kind": "real",
        "profile": "local-disk",
        "description": "endpoints on this machine, for tests",
        "workers": {"nodes": nodes, "cores": 2},
        "endpoints": endpoints,
    }
    path.write_text(yaml.safe_dump(site))
    return path


def write_small_study(folder: Path, site: str, sections: dict[str, dict]) -> Path:
    """``folder/study.yaml``: one profile ``t`` on ``site`` with these sections, over 1 MB
    files (one replica, seed 1), as the tests of planning and skipping want them."""
    profile = {"sites": [site], "files": {"size_mb": 1, "replicas": 1, "seed": 1},
               "sections": sections}  # fmt: skip
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": profile}}))
    return path
