"""Benchmark: a 2-thread job against a 1-thread job, root engine, on an idle 2-core worker.

An ordered file on local disk (read cold: its pages dropped before each run), read by
`instore read` with a CPU-bound analysis (``--cpu-us`` per event) and with none:

- 1 thread;
- 2 threads, ``--mt-mode cluster``: the entries split by cluster, each thread its own file,
  tree and TTreeCache (as RDataFrame and TTreeProcessorMT run). Target: at least 1.6x the
  events per second of 1 thread in the CPU-bound case (issue 32);
- 2 threads, ``--mt-mode implicit``: ROOT's EnableImplicitMT under TTree::GetEntry, branches
  unzipped in parallel (the analysis code itself stays on one thread).

Each job is a fresh process (start-up is not in its wall); the modes alternate within each of
the ``--runs`` repetitions; medians and ranges go to bench/threads_results.json with the
machine, its load and its idle cores before and after (``--wait-idle S`` waits up to S
seconds for two idle cores first: on a shared machine a second thread gains nothing without a
second free core). Usage: python bench/threads.py [--runs 3] [--cpu-us 400] [--wait-idle 600]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE.parent / "build" / "bench"
OUT = HERE / "threads_results.json"
MODES = {"1 thread": [], "2 threads, cluster": ["--threads", "2", "--mt-mode", "cluster"],
         "2 threads, implicit": ["--threads", "2", "--mt-mode", "implicit"]}  # fmt: skip
TARGET = 1.6  # 2 threads split by cluster over 1 thread, events/s, CPU-bound


def make_file(size_mb: float, cluster_mb: float) -> Path:
    """An ordered file of the study's generator, several clusters long (one per thread at least)."""
    out = BUILD / f"threads-{size_mb:g}mb-c{cluster_mb:g}"
    path = out / "ordered-r0.root"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "instore.cli", "generate", "--layouts", "ordered",
                        "--size-mb", str(size_mb), "--cluster-mb", str(cluster_mb), "--out",
                        str(out)], check=True, capture_output=True)  # fmt: skip
    return path


def read(path: Path, cpu_us: float, mode: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "instore.cli", "read", str(path), "--cpu-us", str(cpu_us), *mode],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    record = json.loads(proc.stdout)
    if record.get("error"):
        raise SystemExit(f"instore read failed: {record['error']}")
    return record


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all CPUs since boot (/proc/stat; iowait counts as idle)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return values[3] + values[4], sum(values[:8])


def free_cores(seconds: float = 5.0) -> float:
    """Cores the machine left idle over the last ``seconds`` (2.0: an idle 2-core worker; other
    work on a shared machine shows as less). Read from /proc/stat: probing takes no CPU."""
    idle0, total0 = _cpu_times()
    time.sleep(seconds)
    idle1, total1 = _cpu_times()
    cores = len(os.sched_getaffinity(0))
    return round(cores * (idle1 - idle0) / max(1, total1 - total0), 2)


def wait_idle(limit_s: float, want: float = 1.8) -> float:
    """Wait (up to ``limit_s``) until two cores are idle: the target is about an idle worker."""
    end = time.monotonic() + limit_s
    cores = free_cores()
    while cores < want and time.monotonic() < end:
        print(f"{cores} core(s) idle: waiting for an idle machine", flush=True)
        cores = free_cores(15.0)
    return cores


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")  # fmt: skip
    return {"cpu": cpu, "cores": len(os.sched_getaffinity(0)), "kernel": platform.release(),
            "python": platform.python_version(), "host": platform.node()}  # fmt: skip


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "values": values}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size-mb", type=float, default=32)
    ap.add_argument("--cluster-mb", type=float, default=2)
    ap.add_argument("--cpu-us", type=float, default=400)
    ap.add_argument("--wait-idle", type=float, default=0, help="seconds to wait for idle cores")
    args = ap.parse_args()
    path = make_file(args.size_mb, args.cluster_mb)
    cores_before = wait_idle(args.wait_idle)
    load_before = os.getloadavg()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    workloads = {}
    for cpu_us in (args.cpu_us, 0.0):
        runs: dict[str, list[dict]] = {m: [] for m in MODES}
        for i in range(args.runs):
            for name, flags in MODES.items():
                r = read(path, cpu_us, flags)
                runs[name].append(r)
                print(f"cpu_us={cpu_us:g} run {i + 1}: {name}: {r['events'] / r['wall_s']:.0f} "
                      f"events/s, wall {r['wall_s']:.2f} s, CPU efficiency "
                      f"{r['cpu_efficiency']:.0%}", flush=True)  # fmt: skip
        first = runs["1 thread"][0]
        assert all(r["events"] == first["events"] for rs in runs.values() for r in rs)
        modes = {
            name: {
                "events_per_s": summary([r["events"] / r["wall_s"] for r in rs]),
                "wall_s": summary([r["wall_s"] for r in rs]),
                "cpu_s": summary([r["user_s"] + r["sys_s"] for r in rs]),
                "cpu_efficiency": summary([r["cpu_efficiency"] for r in rs]),
                "bytes_read": statistics.median(r["bytes_read"] for r in rs),
                "threads_used": rs[0]["threads_used"],
            }
            for name, rs in runs.items()
        }
        one = modes["1 thread"]["events_per_s"]["median"]
        workloads[f"{cpu_us:g}"] = {
            "cpu_us": cpu_us,
            "events": first["events"],
            "modes": modes,
            "speedup_cluster": modes["2 threads, cluster"]["events_per_s"]["median"] / one,
            "speedup_implicit": modes["2 threads, implicit"]["events_per_s"]["median"] / one,
        }
    cpu_bound = workloads[f"{args.cpu_us:g}"]
    result = {
        "when": started,
        "machine": {
            **machine(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
            "free_cores_before": cores_before,
            "free_cores_after": free_cores(),
        },
        "file": {
            "path": str(path),
            "mb": round(path.stat().st_size / 1e6, 1),
            "cluster_mb": args.cluster_mb,
            "layout": "ordered",
            "read": "cold, local disk",
            "events": cpu_bound["events"],
        },
        "runs": args.runs,
        "target_speedup": TARGET,
        "met": cpu_bound["speedup_cluster"] >= TARGET,
        "workloads": workloads,
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"2 threads (cluster) / 1 thread, {args.cpu_us:g} us/event: "
          f"{cpu_bound['speedup_cluster']:.2f}x (target {TARGET}x); implicit "
          f"{cpu_bound['speedup_implicit']:.2f}x; written to {OUT}")  # fmt: skip
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
