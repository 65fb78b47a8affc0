"""Benchmark: what it costs to start a measured job, and how much of a sweep is measuring.

1. **Launch**: the time from submitting a job to the payload being ready to measure
   (``launch_s`` in its record), for jobs started cold (``exec``: a new process, in a new
   container) and forked from a warm payload (``fork``), on the host (runtime none) and in the
   payload container (podman, and Apptainer's SIF of the same image: ``apptainer exec``).
   Alternating runs, medians. Target: fork median <= 0.3 s.
2. **One sweep's duty cycle**: lan-hdd's quick-profile layout and cache sections (needs root: an
   emulated site), once with ``--launch fork`` and once with ``--launch exec``. Duty cycle = the
   sum over points of the point's longest job's measured wall, over the sweep's whole wall time
   (process start to end), and over the time between its first job's start and its last job's
   end. Targets (fork): >= 40% and >= 60%.
3. **The full profile's duty cycle** from a finished ``make study`` in this checkout (``--study-log``,
   Snakemake's log of that run, and ``results/<site>/records.jsonl``): the same ratio over all
   sweeps, and the sweeps' wall time. Targets: >= 50%, <= 15 min.

4. **Apptainer against podman** (``--runtimes-sweeps N``): the same quick sweep, fork, in
   podman and in Apptainer, alternating N times; each point's median wall in Apptainer over its
   median in podman. Target: within 5% (the median over the points).

Results go to bench/launch_results.json with the machine they ran on.
Usage: python bench/launch_overhead.py [--jobs N] [--runtimes none,podman,apptainer]
       [--skip-sweeps] [--runtimes-sweeps N] [--study-log PATH [--study-results DIR]]
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILD = REPO / "build" / "bench"
INSTORE = str(Path(sys.executable).parent / "instore")
OUT = HERE / "launch_results.json"


def machine() -> dict:
    mem = Path("/proc/meminfo").read_text().split()[1]
    model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), "?",
    )  # fmt: skip
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(int(mem) / 2**20, 1),
            "kernel": platform.release(), "python": platform.python_version()}  # fmt: skip


def _files(size_mb: float, replicas: int, layouts: str) -> Path:
    out = BUILD / f"files-{size_mb:g}mb-{replicas}"
    if not (out / "ordered-r0.root").exists():
        subprocess.run([INSTORE, "generate", "--size-mb", str(size_mb), "--replicas",
                        str(replicas), "--layouts", layouts, "--seed", "1", "--cluster-mb", "2",
                        "--out", str(out)], check=True, capture_output=True)  # fmt: skip
    return out


# -- 1. launch ------------------------------------------------------------------------------
def bench_launch(runtime: str, jobs: int, data: Path) -> dict:
    from instore.container import image, warm
    from instore.container.measure import run_contained
    from instore.container.runtime import Access, Bind, Runtime, Target

    target = Target(Runtime.NONE) if runtime == "none" else image.target_for(Runtime(runtime))
    access = Access((Bind(data),))
    argv = ["instore", "read", str(data / "ordered-r0.root"), "--entries", "0.1"]
    started = time.perf_counter()
    payload = warm.WarmPayload.start(target, access)
    warm_start = time.perf_counter() - started
    samples: dict[str, list[float]] = {"exec": [], "fork": []}
    try:
        for _ in range(jobs):
            for launch in ("exec", "fork"):
                if launch == "exec":
                    record, container = run_contained(target, argv, access, timeout=300)
                else:
                    record, container = payload.run(argv, {}, 300)
                assert record.get("error") is None, record.get("error")
                samples[launch].append(container.launch_s)
    finally:
        payload.close()
    summary = {k: {"median_s": statistics.median(v), "max_s": max(v), "samples_s": v}
               for k, v in samples.items()}  # fmt: skip
    summary["warm_payload_start_s"] = warm_start
    summary["exec_over_fork"] = summary["exec"]["median_s"] / summary["fork"]["median_s"]
    return summary


# -- 2. and 3. duty cycles ------------------------------------------------------------------
def _ts(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def point_busy(records: Iterable[dict]) -> tuple[float, float, float, int, int]:
    """Sum over points of the longest job's wall; first job start; last job end; points; jobs."""
    points: dict[str, float] = {}
    first, last, jobs = float("inf"), 0.0, 0
    for r in records:
        if r.get("wall_s") is None or r.get("start_time") is None:
            continue
        jobs += 1
        points[r["point_key"]] = max(points.get(r["point_key"], 0.0), float(r["wall_s"]))
        first = min(first, _ts(r["start_time"]))
        last = max(last, _ts(r["start_time"]) + float(r["wall_s"]))
    return sum(points.values()), first, last, len(points), jobs


def gaps_by_section(records: list[dict]) -> dict[str, dict[str, float]]:
    """Between consecutive points of a sweep: from the last job's end to the next point's first
    job start (drop caches, readahead, link retune, site-cache fill, Dask round trip, launch)."""
    points: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r.get("wall_s") is None:
            continue
        start = _ts(r["start_time"])
        span = points.setdefault((r["site"], r["point_key"]), [start, start + r["wall_s"]])
        span[0], span[1] = min(span[0], start), max(span[1], start + r["wall_s"])
    section = {(r["site"], r["point_key"]): r["section"] for r in records}
    ordered = sorted(points.items(), key=lambda kv: kv[1][0])
    gaps: dict[str, list[float]] = {}
    for (key_a, (_, end)), (key_b, (start, _)) in itertools.pairwise(ordered):
        if key_a[0] == key_b[0] and 0 <= start - end < 120:  # same sweep
            gaps.setdefault(section[key_b], []).append(start - end)
    return {k: {"median_s": statistics.median(v), "sum_s": sum(v), "points": len(v)}
            for k, v in sorted(gaps.items())}  # fmt: skip


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def bench_sweep(launch: str, data: Path, runtime: str = "podman") -> dict:
    results = Path(tempfile.mkdtemp(prefix=f"instore-bench-{launch}-"))
    argv = [INSTORE, "sweep", "--site", "lan-hdd", "--sections", "layout,cache", "--profile",
            "quick", "--runtime", runtime, "--launch", launch, "--data", str(data),
            "--results", str(results), "--no-progress", "--force"]  # fmt: skip
    started = time.time()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    ended = time.time()
    if proc.returncode != 0:
        raise SystemExit(f"sweep ({launch}) failed: {proc.stderr.strip().splitlines()[-1]}")
    records = read_records(results / "lan-hdd" / "records.jsonl")
    busy, first, last, points, jobs = point_busy(records)
    walls: dict[str, list[float]] = {}
    for r in records:
        walls.setdefault(r["point_key"], []).append(float(r["wall_s"]))
    return {"points": points, "jobs": jobs, "wall_s": ended - started,
            "point_wall_s": {k: statistics.median(v) for k, v in walls.items()},
            "measuring_s": busy, "first_to_last_job_s": last - first,
            "duty_cycle_whole": busy / (ended - started),
            "duty_cycle_first_to_last": busy / (last - first),
            "log": [line for line in proc.stderr.splitlines() if "(" in line and " s)" in line]}  # fmt: skip


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def sweep_windows(log: Path) -> list[tuple[float, float]]:
    """(start, end) of each sweep_site job in a Snakemake log."""
    stamp, starts, windows = 0.0, {}, []
    lines = log.read_text().splitlines()
    for i, line in enumerate(lines):
        m = _STAMP.match(line.strip())
        if m:
            stamp = time.mktime(time.strptime(m.group(1), "%a %b %d %H:%M:%S %Y"))
        elif line.strip() in ("rule sweep_site:", "localrule sweep_site:"):
            jobid = next(x.split()[-1] for x in lines[i:i + 12] if x.strip().startswith("jobid:"))  # fmt: skip
            starts[jobid] = stamp
        elif line.startswith("Finished jobid:"):
            jobid = line.split()[2]
            if jobid in starts:
                windows.append((starts.pop(jobid), stamp))
    return windows


def bench_study(log: Path, results: Path) -> dict:
    windows = sweep_windows(log)
    if not windows:
        raise SystemExit(f"{log}: no finished sweep_site job in it")
    records = [r for p in sorted(results.glob("*/records.jsonl")) for r in read_records(p)]
    lo, hi = min(a for a, _ in windows), max(b for _, b in windows)
    records = [r for r in records if lo - 1 <= _ts(r["start_time"]) <= hi + 1]
    busy, _, _, points, jobs = point_busy(records)
    sweeps_s = sum(b - a for a, b in windows)
    launches: dict[str, int] = {}
    for r in records:
        launches[r.get("launch", "?")] = launches.get(r.get("launch", "?"), 0) + 1
    return {"sweeps": len(windows), "sweeps_wall_s": sweeps_s, "points": points, "jobs": jobs,
            "failed_jobs": sum(r.get("status") != "ok" for r in records),
            "measuring_s": busy, "duty_cycle": busy / sweeps_s, "launches": launches,
            "between_points": gaps_by_section(records),
            "launch_s_median": statistics.median(r["launch_s"] for r in records
                                                 if r.get("launch_s") is not None)}  # fmt: skip


def _study_run(commit: str, log: Path) -> dict:
    """Which make study the figures are of: its commit, when its first sweep started, and
    whether it is the docs' reference run (docs/data/reference/run.json names its commit)."""
    reference = REPO / "docs" / "data" / "reference" / "run.json"
    ref_commit = json.loads(reference.read_text())["commit"] if reference.is_file() else None
    first = min(a for a, _ in sweep_windows(log))
    return {"commit": commit or "unknown",
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(first)),
            "what": "the reference run (docs/data/reference)" if commit == ref_commit
            else f"the make study logged in {log.name}"}  # fmt: skip


def bench_runtimes(data: Path, rounds: int) -> dict:
    """Point walls of the quick sweep (fork) in Apptainer over podman, alternating ``rounds``
    times: per point the median of each runtime's walls."""
    walls: dict[str, dict[str, list[float]]] = {"podman": {}, "apptainer": {}}
    sweeps: dict[str, list[float]] = {"podman": [], "apptainer": []}
    for _ in range(rounds):
        for runtime in walls:
            sweep = bench_sweep("fork", data, runtime)
            sweeps[runtime].append(sweep["wall_s"])
            for key, wall in sweep["point_wall_s"].items():
                walls[runtime].setdefault(key, []).append(wall)
    ratios = {k: statistics.median(walls["apptainer"][k]) / statistics.median(v)
              for k, v in walls["podman"].items() if k in walls["apptainer"]}  # fmt: skip
    return {"rounds": rounds, "points": len(ratios),
            "apptainer_over_podman_point_wall": {
                "median": statistics.median(ratios.values()), "min": min(ratios.values()),
                "max": max(ratios.values()), "by_point": ratios},
            "sweep_wall_s": sweeps}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10, help="jobs per launch kind (default 10)")
    parser.add_argument(
        "--runtimes",
        default="none,podman,apptainer",
        help="where to time launches (default none,podman,apptainer)",
    )
    parser.add_argument("--skip-sweeps", action="store_true", help="launch only (no root needed)")
    parser.add_argument(
        "--runtimes-sweeps",
        type=int,
        default=0,
        metavar="N",
        help="also time the quick sweep in podman and Apptainer, N rounds each",
    )
    parser.add_argument("--study-log", type=Path, help="Snakemake log of a finished make study")
    parser.add_argument("--study-only", action="store_true",
                        help="with --study-log: only the full profile's duty cycle (part 3), the "
                        "other parts' results kept as they are")  # fmt: skip
    parser.add_argument(
        "--study-results",
        type=Path,
        default=REPO / "results",
        help="that study's results directory (default: this checkout's results/)",
    )
    args = parser.parse_args()
    if args.study_log and not args.study_log.is_file():  # before minutes of measuring, not after
        parser.error(f"--study-log {args.study_log}: no such file (a make study's Snakemake log "
                     "is under .snakemake/log/)")  # fmt: skip
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    if args.study_only and not args.study_log:
        parser.error("--study-only needs --study-log")
    if args.study_only:  # the machine and date of the other parts stay theirs
        checkout = args.study_results.resolve().parent
        commit = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h"],
                                capture_output=True, text=True).stdout.strip()  # fmt: skip
        results["full_profile"] = {**bench_study(args.study_log, args.study_results),
                                   "run": _study_run(commit, args.study_log),
                                   "machine": machine()}  # fmt: skip
        OUT.write_text(json.dumps(results, indent=2) + "\n")
        print(json.dumps(results["full_profile"], indent=1)[:3000])
        return
    results.update(machine=machine(), when=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    small = _files(8, 2, "unordered,by-branch,ordered")
    launches = results.setdefault("launch", {})
    launches.update({rt: bench_launch(rt, args.jobs, small) for rt in args.runtimes.split(",")})
    print(json.dumps(results["launch"], indent=1, default=str)[:1500])
    OUT.write_text(json.dumps(results, indent=2) + "\n")  # each part kept as it is measured
    if not args.skip_sweeps:
        sweeps = {launch: bench_sweep(launch, small) for launch in ("fork", "exec")}
        fork, cold = sweeps["fork"]["point_wall_s"], sweeps["exec"]["point_wall_s"]
        ratios = [fork[k] / cold[k] for k in fork if k in cold and cold[k] > 0]
        sweeps["fork_over_exec_point_wall"] = {
            "median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "points": len(ratios),
        }  # fmt: skip
        results["sweep_lan_hdd_quick_layout_cache"] = sweeps
        OUT.write_text(json.dumps(results, indent=2) + "\n")
    if args.runtimes_sweeps:
        results["sweep_apptainer_vs_podman"] = bench_runtimes(small, args.runtimes_sweeps)
        OUT.write_text(json.dumps(results, indent=2) + "\n")
    if args.study_log:
        results["full_profile"] = bench_study(args.study_log, args.study_results)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k != "launch"}, indent=1)[:3000])
    print(f"written to {OUT}")


if __name__ == "__main__":
    main()
