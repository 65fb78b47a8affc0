"""The measuring payload: counters are exact, knobs act, and bad files give one clear line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from instore.inspect import basket_map, open_tree
from instore.payload.pattern import Pattern
from instore.payload.runner import ReadOptions, run_read
from instore.rootenv import root

from tests.cli import Cli

ENGINES = ["root", "uproot"]


def read(path: Path | str, **kw) -> dict:
    record = run_read(ReadOptions(str(path), **kw)).as_dict()
    assert record["error"] is None, record["error"]
    return record


def test_root_engine_counts_equal_roots_own_counters(small_files: dict[str, Path]) -> None:
    ROOT = root()
    read(small_files["ordered"], engine="root")  # ROOT reads ~16 kB of its own once per process
    for cache in (0, None):
        before_bytes, before_calls = ROOT.TFile.GetFileBytesRead(), ROOT.TFile.GetFileReadCalls()
        r = read(small_files["unordered"], engine="root", cache_bytes=cache)
        assert r["bytes_read"] == ROOT.TFile.GetFileBytesRead() - before_bytes
        assert r["read_calls"] == ROOT.TFile.GetFileReadCalls() - before_calls
        assert sum(r["read_size_hist"].values()) == r["counters"]["perfstats_read_calls"]


@pytest.mark.parametrize("engine", ENGINES)
def test_counts_agree_with_what_the_kernel_served(
    small_files: dict[str, Path], engine: str
) -> None:
    """rchar minus counted bytes is the same small constant for very different reads.

    What is left is the process's own non-data reads (/proc, ROOT's start-up files), which do
    not grow with the data: every data byte the kernel delivered is in bytes_read.
    """
    read(small_files["ordered"], engine=engine)  # warm up: imports, JIT, dictionaries
    extra = []
    for layout, cache in (("ordered", None), ("unordered", 0), ("unordered", None), ("ordered", 0)):
        r = read(small_files[layout], engine=engine, cache_bytes=cache)
        extra.append(r["rchar_delta"] - r["bytes_read"])
    assert max(extra) - min(extra) <= 64, extra
    assert 0 <= min(extra) < 64 * 1024, extra


def test_cache_cuts_read_calls_by_orders_of_magnitude(small_files: dict[str, Path]) -> None:
    off = read(small_files["unordered"], engine="root", cache_bytes=0)
    on = read(small_files["unordered"], engine="root", cache_bytes=30 * 2**20)
    assert off["read_calls"] >= 1000
    assert off["read_calls"] >= 100 * on["read_calls"]
    assert on["vector_reads"] >= 1 and off["vector_reads"] == 0
    assert off["events"] == on["events"] and off["bytes_read"] == on["bytes_read"]


def test_default_cache_is_roots_and_env_can_turn_it_off(
    small_files: dict[str, Path], cli: Cli
) -> None:
    r = read(small_files["ordered"], engine="root")
    assert r["cache_bytes_effective"] > 0 and r["cache_bytes"] is None
    env = {**os.environ, "ROOT_TTREECACHE_SIZE": "0"}
    proc = cli("read", str(small_files["ordered"]), env=env)
    off = json.loads(proc.stdout)
    assert off["cache_bytes_effective"] == 0
    assert off["provenance"]["env"]["ROOT_TTREECACHE_SIZE"] == "0"


@pytest.mark.parametrize(
    "pattern",
    [
        Pattern(),
        Pattern(branches="fraction:0.1"),
        Pattern(entry_fraction=0.1),
        Pattern(entry_fraction=0.25, entry_mode="range"),
        Pattern(branches="Jet_pt,met"),
    ],
    ids=["all", "10pct-branches", "10pct-entries", "first-quarter", "named"],
)
def test_engines_agree_on_events_and_bytes_needed(
    small_files: dict[str, Path], pattern: Pattern
) -> None:
    r = read(small_files["ordered"], engine="root", pattern=pattern, cache_bytes=0)
    u = read(small_files["ordered"], engine="uproot", pattern=pattern)
    assert r["events"] == u["events"] > 0
    assert r["branches_read"] == u["branches_read"]
    assert r["bytes_needed"] == u["bytes_needed"] > 0


def test_sparse_branches_need_a_fraction_of_the_file(small_files: dict[str, Path]) -> None:
    full = read(small_files["ordered"], engine="root", cache_bytes=0)
    sparse = read(
        small_files["ordered"],
        engine="root",
        cache_bytes=0,
        pattern=Pattern(branches="fraction:0.1"),
    )
    assert sparse["bytes_needed"] < 0.3 * full["bytes_needed"]
    assert sparse["bytes_read"] < 0.3 * full["bytes_read"]
    assert sparse["branches_read"] < full["branches_read"] / 5


def test_access_log_matches_the_basket_map(
    small_files: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    log = tmp_path / "reads.csv"
    proc = cli("read", str(small_files["unordered"]), "--cache-mb", "0", "--access-log", str(log))
    assert proc.returncode == 0, proc.stderr
    reads = pd.read_csv(log)
    file, tree = open_tree(str(small_files["unordered"]))
    with file:
        baskets = basket_map(tree)
    data_reads = set(zip(reads["offset"], reads["length"], strict=True))
    assert set(zip(baskets["offset"], baskets["compressed_bytes"], strict=True)) <= data_reads


def test_cpu_cost_per_event_is_spent(small_files: dict[str, Path]) -> None:
    pattern = Pattern(entry_fraction=0.1, cpu_us=2000)
    for engine in ENGINES:
        r = read(small_files["ordered"], engine=engine, pattern=pattern)
        spent = r["user_s"] + r["sys_s"]
        assert spent >= r["events"] * 2000e-6 * 0.95, (engine, spent, r["events"])
        # the CPU it spent over its wall (a share of the wall only: other processes on a busy
        # machine lengthen the wall, which a bound such as "> 0.5" failed on under load)
        assert r["cpu_efficiency"] == pytest.approx(spent / r["wall_s"], rel=0.02), engine


def test_the_opens_cpu_is_recorded_within_the_open_and_the_jobs_cpu(
    small_files: dict[str, Path],
) -> None:
    """A profile takes the open's CPU (a handshake, streamer info) out of its open time once:
    each engine records it, within the open's wall and within the job's CPU."""
    for engine in ENGINES:
        r = read(small_files["ordered"], engine=engine)
        assert 0 < r["open_cpu_s"] <= r["open_s"] + 0.002, (engine, r["open_cpu_s"], r["open_s"])
        assert r["open_cpu_s"] <= r["user_s"] + r["sys_s"], engine


def test_each_engine_counts_the_reads_its_open_made_apart_from_the_loops(
    small_files: dict[str, Path],
) -> None:
    """A profile's fit pays the open's reads once (in the open's time) and the loop's with their
    round trips: each engine says how many of its read calls the open made; for ROOT the rest
    are the TTree's read log's (the loop's)."""
    for engine in ENGINES:
        r = read(small_files["ordered"], engine=engine)
        assert 0 < r["open_read_calls"] < r["read_calls"], (engine, r["open_read_calls"])
        if engine == "root":
            loop = r["counters"]["perfstats_read_calls"]
            assert r["read_calls"] - r["open_read_calls"] == loop, r


def test_record_carries_measurement_and_provenance(small_files: dict[str, Path]) -> None:
    r = read(small_files["ordered"], engine="uproot")
    for key in (
        "wall_s",
        "user_s",
        "sys_s",
        "cpu_wait_s",
        "cpu_efficiency",
        "open_s",
        "file_size",
        "bytes_needed",
        "read_amplification",
        "event_rate_hz",
    ):
        assert r[key] is not None and r[key] >= 0, key
    assert r["file_size"] == small_files["ordered"].stat().st_size
    assert r["cold_cache_dropped"] is True
    p = r["provenance"]
    assert (
        p["root_version"].startswith("6.")
        and p["versions"]["uproot"]
        and p["kernel"].startswith("Linux")
    )
    assert set(p["env"]) <= {
        "ROOT_TTREECACHE_SIZE",
        "ROOT_TTREECACHE_PREFILL",
        "XRD_REQUESTTIMEOUT",
        "INSTORE_RUNTIME",
        "INSTORE_IMAGE_DIGEST",
        "RES_OPTIONS",
        "LOCALDOMAIN",
    }


def test_stage_in_without_xrdcp_is_one_line_with_the_fix(
    small_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from instore.errors import InstoreError
    from instore.payload.runner import stage_in

    monkeypatch.setenv("PATH", str(tmp_path))  # no xrdcp on it
    with pytest.raises(InstoreError, match=r"xrdcp is not installed.*xrootd-client"):
        stage_in(str(small_files["ordered"]), "xrdcp", tmp_path / "scratch")


def test_stage_in_copies_then_reads_locally(small_files: dict[str, Path], tmp_path: Path) -> None:
    direct = read(small_files["ordered"], engine="root")
    staged = read(small_files["ordered"], engine="root", stage_in="cp", scratch=tmp_path)
    assert staged["stage_in_s"] > 0 and staged["wall_s"] > staged["stage_in_s"]
    assert staged["events"] == direct["events"] and staged["bytes_read"] == direct["bytes_read"]
    assert not list(tmp_path.iterdir()), "the staged copy is removed after the job"


def _bad_files(tmp: Path, good: Path) -> dict[str, tuple[Path, str]]:
    truncated = tmp / "truncated.root"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    garbage = tmp / "garbage.root"
    garbage.write_bytes(os.urandom(100_000))
    no_tree = tmp / "no-tree.root"
    with __import__("uproot").recreate(no_tree) as f:
        f["note"] = "no tree in here"
    return {
        "missing": (tmp / "missing.root", "no such file|could not open|No such file"),
        "truncated": (truncated, "truncated|corrupt|read error|could not open"),
        "not-root": (garbage, "not a readable ROOT file|could not open"),
        "no-tree": (no_tree, "holds no TTree"),
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", ["missing", "truncated", "not-root", "no-tree"])
def test_bad_files_give_one_clear_line(
    small_files: dict[str, Path], tmp_path: Path, engine: str, case: str, cli: Cli
) -> None:
    path, pattern = _bad_files(tmp_path, small_files["ordered"])[case]
    proc = cli("read", str(path), "--engine", engine)
    assert proc.returncode == 1
    record = json.loads(proc.stdout)
    assert record["error"] and "\n" not in record["error"]
    import re

    assert re.search(pattern, record["error"]), record["error"]
    ours = [line for line in proc.stderr.splitlines() if line.startswith("instore read:")]
    assert len(ours) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "pyroot"], "invalid choice"),
        (["--cache-mb", "-1"], "negative"),
        (["--entries", "1.5"], "outside"),
        (["--branches", "fraction:abc"], "bad branch fraction"),
        (["--branches", "NoSuchBranch"], "names NoSuchBranch, which the file lacks"),
        (["--stage-in", "cp"], "scratch"),
    ],
)
def test_bad_options_are_one_line_errors(
    small_files: dict[str, Path], args: list[str], message: str, cli: Cli
) -> None:
    proc = cli("read", str(small_files["ordered"]), *args)
    assert proc.returncode != 0
    assert message in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_the_payload_command_loads_no_sweep_or_table_machinery(cli: Cli) -> None:
    """`instore read` starts once per measured job: Dask and jsonschema (about two seconds of
    imports here) stay out of it, while `instore --help` still lists everything."""
    probe = (
        "import sys\n"
        "from instore.cli import build_parser\n"
        "build_parser('read').parse_args(['read', 'x.root'])\n"
        "print(sorted({'distributed', 'jsonschema'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    listed = cli("--help", check=True).stdout
    assert all(name in listed for name in ("read", "sweep", "site", "lab", "summarize"))


def test_joining_the_sites_cgroup_is_done_before_the_clock(
    small_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The join is set-up, before the clock, as a replay's is (it was inside the clock; moved
    while looking for Apptainer's extra system time in sweeps, which it is not: 0.203 s a job
    after the move against 0.245 s before)."""
    from instore.payload import runner

    joined: list[float] = []
    monkeypatch.setenv(runner.CGROUP_ENV, "/sys/fs/cgroup/instore-test")
    monkeypatch.setattr(runner, "join_cgroup", lambda path: joined.append(time.time()))
    record = run_read(ReadOptions(str(small_files["ordered"]))).as_dict()
    assert record["error"] is None and len(joined) == 1
    assert joined[0] <= record["ready_at"], "joined before the payload was ready to measure"


def test_a_cgroup_it_cannot_join_is_the_jobs_error(
    small_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from instore.payload import runner

    monkeypatch.setenv(runner.CGROUP_ENV, "/nonexistent/instore-blkio")
    record = run_read(ReadOptions(str(small_files["ordered"]))).as_dict()
    assert record["error"].startswith(
        "cannot join the site's blkio cgroup /nonexistent/instore-blkio"
    )
