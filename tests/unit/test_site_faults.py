"""What a sweep and a site admin see of faults, without a running site (the faults themselves
are caused for real in tests/integration/test_faults_server.py)."""

from __future__ import annotations

import pytest
from instore.cli import main
from instore.errors import InstoreError
from instore.site.emulated import faults
from instore.site.emulated.netns import link_is_up
from instore.site.real import RealLive
from instore.sweep.options import SweepSummary

from tests.conftest import write_real_site


def test_unknown_fault_names_the_choices() -> None:
    with pytest.raises(InstoreError, match="kill-server, link-down, stall"):
        faults.cause(None, "flood", 1.0)  # type: ignore[arg-type]


def test_fault_on_a_site_that_is_not_up_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["site", "fault", "no-such-site-up", "kill-server"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no-such-site-up is not up" in err and "instore site up" in err and "\n" not in err


def test_fault_duration_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["site", "fault", "x", "stall", "--seconds", "0"]) == 2
    assert "--seconds must be positive" in capsys.readouterr().err


def test_a_real_site_is_never_repaired_by_the_sweep(tmp_path) -> None:
    from instore.site import load_site

    cfg = load_site(write_real_site(tmp_path / "r.yaml", {"posix": f"{tmp_path}/{{file}}"}))
    assert RealLive(cfg, []).heal() == []


def test_link_state_is_read_from_the_kernel() -> None:
    assert link_is_up("lo")
    assert not link_is_up("instore-nosuch")


def test_summary_line_counts_repairs() -> None:
    summary = SweepSummary("s", measured=3, failed_points=1)
    assert summary.line().endswith("1 with failed jobs")
    summary.repairs.append("xrootd had exited: restarted it")
    assert summary.line().endswith("1 with failed jobs, 1 site repair(s)")
