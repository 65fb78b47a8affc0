"""Whose is a leftover emulated site? The state file names the process that brought it up
(pid and start time); a dead owner makes the site abandoned, so the next bring-up may remove
it. No root needed: the state files go to a temporary directory."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.site.emulated import names as names_module
from instore.site.emulated import site as site_module
from instore.site.emulated.names import SiteNames
from instore.site.emulated.state import SiteState
from instore.site.emulated.system import start_time

NAMES = SiteNames("unit-state")
# A child that records itself as the site's owner and exits: the owner of a crashed run.
OWN_AND_EXIT = (
    "from instore.site.emulated.names import SiteNames\n"
    "from instore.site.emulated import names, state\n"
    "import sys; from pathlib import Path\n"
    "names.STATE_DIR = Path(sys.argv[1])\n"
    "state.SiteState(SiteNames('unit-state')).start()\n"
)


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(names_module, "STATE_DIR", tmp_path)
    return tmp_path


def owned_by(pid: int | None, started: int | None) -> SiteState:
    return SiteState(NAMES, {"site": NAMES.site, "owner_pid": pid, "owner_started": started})


def test_start_records_this_process_as_a_living_owner() -> None:
    SiteState(NAMES).start()
    state = SiteState.load(NAMES)
    assert state is not None and state.data["owner_started"] == start_time(state.data["owner_pid"])
    assert not state.owner_gone()


def test_site_whose_owner_exited_is_abandoned(state_dir: Path) -> None:
    subprocess.run([sys.executable, "-c", OWN_AND_EXIT, str(state_dir)], check=True)
    state = SiteState.load(NAMES)
    assert state is not None and state.owner_gone()


def test_owner_pid_reused_by_another_process_counts_as_gone() -> None:
    """A recycled pid is alive, but it started at another time: not the owner."""
    assert not owned_by(1, start_time(1)).owner_gone()
    assert owned_by(1, (start_time(1) or 0) + 1).owner_gone()


def test_zombie_owner_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = start_time(child.pid)
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)  # it exits at once; not reaped yet, it stays a zombie
        assert owned_by(child.pid, started).owner_gone()
    finally:
        child.wait()


def test_released_site_has_no_owner_to_lose() -> None:
    """`instore site up` releases its site: it stays up and is never removed as abandoned."""
    state = SiteState(NAMES)
    state.start()
    state.release()
    loaded = SiteState.load(NAMES)
    assert loaded is not None and loaded.data["owner_pid"] is None
    assert not loaded.owner_gone()


def test_state_without_start_time_trusts_a_living_pid() -> None:
    assert not owned_by(1, None).owner_gone()


def leftover(monkeypatch: pytest.MonkeyPatch, left_after: list[str]) -> list[str]:
    """Pretend the site's namespace exists; record teardowns instead of doing them."""
    torn: list[str] = []
    monkeypatch.setattr(site_module, "existing", lambda names: ["namespace instore-unit-state"])

    def teardown(names: SiteNames) -> list[str]:
        torn.append(names.site)
        return left_after

    monkeypatch.setattr(site_module, "teardown", teardown)
    return torn


def test_bring_up_removes_an_abandoned_site_and_says_so_in_one_line(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run([sys.executable, "-c", OWN_AND_EXIT, str(state_dir)], check=True)
    torn = leftover(monkeypatch, left_after=[])
    site_module.clear_abandoned(NAMES)
    assert torn == [NAMES.site]
    err = capsys.readouterr().err.strip()
    assert "unit-state was left up by process" in err and "which is gone" in err
    assert "\n" not in err


def test_bring_up_refuses_a_site_whose_owner_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    SiteState(NAMES).start()  # this test process: alive
    torn = leftover(monkeypatch, left_after=[])
    with pytest.raises(InstoreError, match="already up or left over") as info:
        site_module.clear_abandoned(NAMES)
    assert "instore site down unit-state" in info.value.fix and torn == []


def test_bring_up_refuses_a_leftover_without_state_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing says whose it is: leave it to `instore site down`."""
    torn = leftover(monkeypatch, left_after=[])
    with pytest.raises(InstoreError, match="already up or left over"):
        site_module.clear_abandoned(NAMES)
    assert torn == []


def test_abandoned_site_that_cannot_be_removed_is_an_error(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run([sys.executable, "-c", OWN_AND_EXIT, str(state_dir)], check=True)
    leftover(monkeypatch, left_after=["mount /var/tmp/instore-unit-state/disk"])
    with pytest.raises(InstoreError, match="could not remove what a crashed run left"):
        site_module.clear_abandoned(NAMES)
