"""Benchmark: how fast ``instore predict`` answers (issue 39's target: 1,000 predictions,
trace x profile x what-if, in at most 10 s on this machine).

Traces: the multi-threaded RDataFrame trace the unit tests use (tests/unit/data, 2 streams),
and two written here in the shapes of the study's analyses: an RDataFrame-like job (vector
reads of 121 chunks, 7.6 MB each, as ROOT's TTreeCache fills them, 0.3 s of CPU apart) and an
uproot-like one (300 reads of 16 kB to 1 MB, 5 ms apart). Profiles: the three emulated sites as
their site files describe them (hand-written profiles: lan-hdd's spindle at 150 IOPS and
120 MB/s, lan-ssd, the WAN's 25 ms and 100 Mbit/s with its XCache). What-ifs: RTT, link, IOPS,
XCache state, protocol and clients (1 to 16), 1,000 combinations drawn from their product with a
fixed seed. Each trace is prepared (``compile_trace``) once, inside the timing.

Each run's wall and its process's CPU time are kept: on a shared machine the wall includes
waiting for a core. Results go to bench/predict_results.json with the machine they ran on.
Usage: python bench/predict_speed.py [--predictions N] [--repeats N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from instore.predict.compiled import compile_trace  # noqa: E402
from instore.predict.model import predict  # noqa: E402
from instore.predict.profile import from_dict  # noqa: E402
from instore.predict.scenario import Scenario  # noqa: E402
from instore.replay.trace import load_trace, write_trace  # noqa: E402

OUT = ROOT / "bench" / "predict_results.json"
TARGET_S = 10.0

PROTOCOLS = {"xrootd": {"request_ms": 0.3}, "http": {"request_ms": 0.6},
             "fuse": {"request_ms": 0.4, "vector": False, "max_read_kb": 128}}  # fmt: skip
SITES = {
    "lan-hdd": {"rtt_ms": 0.5, "bandwidth_mbit": 1000, "disk_seq_mb_per_s": 120,
                "disk_random_ms": 1000 / 150},
    "lan-ssd": {"rtt_ms": 0.5, "bandwidth_mbit": 1000, "disk_seq_mb_per_s": 500,
                "disk_random_ms": 0.1},
    "wan": {"rtt_ms": 25, "bandwidth_mbit": 100, "disk_seq_mb_per_s": 500, "disk_random_ms": 0.1},
}  # fmt: skip


def profiles() -> list:
    out = []
    for site, params in SITES.items():
        data = {"site": site, "kind": "hand-written", "cores": 2, "parameters": params,
                "protocols": PROTOCOLS,
                "xcache": {"block_kb": 1024, "local_mb_per_s": 800, "local_rtt_ms": 0.05}}  # fmt: skip
        out.append(from_dict(data, f"bench profile {site}"))
    return out


def _line(op: str, start: float, args: str, end: float, resp: str = "") -> str:
    return f'"1","{op}","{start:.9f}","{args}","{end:.9f}","[SUCCESS]","{resp}"'


def shaped_trace(out: Path, reads: list[list[tuple[int, int]]], think: float) -> Path:
    t, lines = 1_000_000.0, [_line("Open", 1_000_000.0, "root://h//f.root;0;0;0", 1_000_000.001)]
    t += 0.002
    for chunks in reads:
        pairs = ";".join(f"{o};{s}" for o, s in chunks)
        size = sum(s for _, s in chunks)
        op = "Read" if len(chunks) == 1 else "VectorRead"
        lines.append(_line(op, t, f"{pairs};0", t + 0.002, str(size)))
        t += 0.002 + think
    lines.append(_line("Close", t, "0", t + 0.001))
    meta = {"start_unix": 999_999.5, "end_unix": t + 0.2, "wall_s": t + 0.7 - 1_000_000,
            "cpu_s": think * len(reads) + 0.5, "events": 100_000}  # fmt: skip
    return write_trace(out, lines, meta)


def traces(tmp: Path) -> list[Path]:
    rng = random.Random(7)
    rdf = [[(k * 8_000_000 + i * 63_000, 62_800) for i in range(121)] for k in range(9)]
    offsets = sorted(rng.sample(range(0, 256 << 20, 1 << 16), 300))
    uproot = [[(o, rng.choice((16 << 10, 64 << 10, 256 << 10, 1 << 20)))] for o in offsets]
    return [shaped_trace(tmp / "rdf-like", rdf, 0.3), shaped_trace(tmp / "uproot-like", uproot, 0.005),
            ROOT / "tests" / "unit" / "data" / "rdf-mt2-xrdcl.csv"]  # fmt: skip


def grid(n: int) -> list[dict]:
    axes = {
        "rtt_ms": (None, 1.0, 10.0, 50.0, 100.0),
        "bandwidth_mbit": (None, 100.0, 10_000.0),
        "iops": (None, 150.0, 20_000.0),
        "xcache": (None, "cold", "warm"),
        "protocol": ("xrootd", "http", "fuse"),
        "clients": (1, 4, 16),
    }
    product = [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]
    return random.Random(1).sample(product, min(n, len(product)))


def run(n: int, paths: list[Path]) -> dict:
    start, cpu0 = time.perf_counter(), time.process_time()
    compiled = [compile_trace(load_trace(p)) for p in paths]
    compiled_s = time.perf_counter() - start
    profs = profiles()
    whatifs = grid(n)
    times = []
    for k, w in enumerate(whatifs):
        c, prof = compiled[k % len(compiled)], profs[(k // len(compiled)) % len(profs)]
        sc = Scenario(protocol=w["protocol"], xcache=w["xcache"], clients=w["clients"])
        changes = {key: w[key] for key in ("rtt_ms", "bandwidth_mbit", "iops")}
        t0 = time.perf_counter()
        predict(c, prof.with_changes(**changes), sc)
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    return {"predictions": len(whatifs), "total_s": total, "cpu_s": cpu, "compile_s": compiled_s,
            "median_ms": 1e3 * statistics.median(times), "max_ms": 1e3 * max(times),
            "requests": [c.requests for c in compiled]}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--predictions", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = traces(Path(tmp))
        runs = [run(args.predictions, paths) for _ in range(args.repeats)]
    best = min(r["total_s"] for r in runs)
    result = {
        "machine": {
            "host": socket.gethostname(),
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "python": platform.python_version(),
            "load_average": os.getloadavg(),
        },
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "target_s": TARGET_S,
        "runs": runs,
        "fastest_total_s": best,
        # the machine is shared: the process's own CPU time is what the work costs, wall what it took
        "fastest_cpu_s": min(r["cpu_s"] for r in runs),
        "median_total_s": statistics.median(r["total_s"] for r in runs),
        "within_target": best <= TARGET_S,
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{args.predictions} predictions: fastest {best:.2f} s of {args.repeats} runs "
          f"(median {result['median_total_s']:.2f} s, CPU {result['fastest_cpu_s']:.2f} s, load "
          f"average {os.getloadavg()[0]:.1f}; target {TARGET_S:g} s) -> {OUT}")  # fmt: skip
    return 0 if result["within_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
