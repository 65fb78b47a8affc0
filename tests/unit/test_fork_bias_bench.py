"""bench/fork_bias.py judges forked against cold walls by the runs' pairs: the ways alternate
within a run, so a drift of the machine's speed that both share cancels in each run's ratio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import fork_bias  # noqa: E402  (a script of bench/, beside the launch bench it imports)


def _point(cold: list[float], forked: list[float]) -> dict:
    way = lambda walls: {"wall_s": {"samples": walls, "median": sorted(walls)[len(walls) // 2]}}  # noqa: E731
    return {"exec": way(cold), "fork": way(forked), "fork_shared": way(forked)}


def test_a_drift_both_ways_share_cancels_in_the_paired_ratio() -> None:
    cold = [0.2 * (1 + 0.05 * i) for i in range(15)]  # the VM slows by 70% over the runs
    point = _point(cold, [1.02 * c for c in cold])
    fork_bias.analyse(point)
    wall = point["fork_over_exec_interval"]["wall_s"]
    assert wall["value"] == pytest.approx(1.02)
    assert (wall["lo"], wall["hi"]) == (pytest.approx(1.02), pytest.approx(1.02))
    assert wall["verdict"] == "within" and wall["basis"] == "paired runs"


def test_unequal_run_counts_are_not_taken_for_pairs() -> None:
    with pytest.raises(SystemExit, match="not pairs"):
        fork_bias.analyse(_point([0.2, 0.3, 0.4], [0.2, 0.3]))


def test_reanalyse_rewrites_a_results_file_from_its_samples(tmp_path: Path) -> None:
    cold = [0.2 * (1 + 0.05 * i) for i in range(9)]
    results = {"target": 0.05, "runtimes": {"none": {
        "RNTuple, root": _point(cold, [1.2 * c for c in cold]),
        "warm_payload_pages": {"root": 1}}}}  # fmt: skip
    source, out = tmp_path / "old.json", tmp_path / "new.json"
    source.write_text(json.dumps(results))
    proc = subprocess.run([sys.executable, str(BENCH / "fork_bias.py"), "--reanalyse",
                           str(source), "--out", str(out)], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    written = json.loads(out.read_text())
    assert written["runtimes"]["none"]["RNTuple, root"]["fork_over_exec_interval"]["wall_s"][
        "verdict"] == "beyond"  # fmt: skip
    assert written["met"] is False and "misses the 5% target" in proc.stdout
