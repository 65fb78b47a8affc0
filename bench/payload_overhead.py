"""Benchmark: the payload's own overhead, and uproot against ROOT for the same pattern.

1. The ``root`` engine's event loop (C++ through cling, TTreePerfStats and a counting cache)
   against a plain compiled ROOT loop (bench/plain_loop.cxx, g++ -O2) on the same warm file.
   Ratio = plain time / engine time: 1.0 means no overhead, the target is >= 0.95.
2. uproot against ROOT for the same access patterns (all branches, 10% of branches).

Runs alternate between contenders and the median of each is kept; results go to
bench/results.json with the machine they ran on. Usage: python bench/payload_overhead.py [--size-mb N]
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE.parent / "build" / "bench"


def sh(argv: list[str], **kw: object) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout


def build_plain_loop() -> Path:
    BUILD.mkdir(parents=True, exist_ok=True)
    exe = BUILD / "plain_loop"
    import ROOT  # the wheel holds ROOT's headers and libraries (its root-config names its build tree)

    top = Path(ROOT.__file__).parent
    libs = ["-lCore", "-lRIO", "-lTree", "-lNet", "-lThread", "-lMathCore", "-lImt"]
    sh(
        [
            "g++",
            "-O2",
            "-std=c++17",
            str(HERE / "plain_loop.cxx"),
            "-o",
            str(exe),
            f"-I{top / 'include'}",
            f"-L{top / 'lib'}",
            *libs,
            f"-Wl,-rpath,{top / 'lib'}",
        ]
    )
    return exe


def make_file(size_mb: float) -> Path:
    out = BUILD / f"files-{size_mb:g}mb"
    path = out / "ordered-r0.root"
    if not path.exists():
        t0 = time.perf_counter()
        sh(
            [
                sys.executable,
                "-m",
                "instore.cli",
                "generate",
                "--layouts",
                "ordered",
                "--size-mb",
                str(size_mb),
                "--out",
                str(out),
            ]
        )
        print(
            f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s"
        )
    with path.open("rb") as f:  # warm: both contenders read from the page cache
        while f.read(1 << 24):
            pass
    return path


def engine(path: Path, *args: str) -> dict:
    out = sh([sys.executable, "-m", "instore.cli", "read", str(path), "--warm", *args])
    return json.loads(out)


def machine() -> dict:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    mem = next(
        line.split()[1]
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "mem_gib": round(int(mem) / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=300)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    exe, path = build_plain_loop(), make_file(args.size_mb)
    samples: dict[str, list[float]] = {
        "plain": [],
        "root": [],
        "uproot": [],
        "root_sparse": [],
        "uproot_sparse": [],
    }
    for i in range(args.runs):
        plain = json.loads(sh([str(exe), str(path), "events"]))
        samples["plain"].append(plain["wall_s"])
        r = engine(path, "--engine", "root")
        assert r["events"] == plain["events"] and r["bytes_read"] == plain["bytes_read"], (r, plain)
        samples["root"].append(r["wall_s"])
        samples["uproot"].append(engine(path, "--engine", "uproot")["wall_s"])
        samples["root_sparse"].append(
            engine(path, "--engine", "root", "--branches", "fraction:0.1")["wall_s"]
        )
        samples["uproot_sparse"].append(
            engine(path, "--engine", "uproot", "--branches", "fraction:0.1")["wall_s"]
        )
        print(
            f"run {i + 1}/{args.runs}: "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in samples.items())
        )
    med = {k: statistics.median(v) for k, v in samples.items()}
    result = {
        "machine": machine(),
        "file": {
            "path": str(path),
            "mb": round(path.stat().st_size / 1e6, 1),
            "events": plain["events"],
        },
        "runs": args.runs,
        "median_wall_s": med,
        "samples_wall_s": samples,
        "root_engine_vs_plain_loop": round(med["plain"] / med["root"], 3),
        "uproot_vs_root_all_branches": round(med["root"] / med["uproot"], 3),
        "uproot_vs_root_10pct_branches": round(med["root_sparse"] / med["uproot_sparse"], 3),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (HERE / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {
                k: result[k]
                for k in (
                    "root_engine_vs_plain_loop",
                    "uproot_vs_root_all_branches",
                    "uproot_vs_root_10pct_branches",
                )
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
