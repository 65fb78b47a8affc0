"""Does an analysis's own CPU grow with the storage's round trip? The recordings of
record-pairs.sh (2026-11-28 06:36-06:42, quiet): each analysis recorded over root:// on
lan-ssd and on the WAN site at 50 ms (wan-rtt50.yaml), alternating, three times. Prints each
recording's wall, CPU, XRootD operations and time inside requests, and the medians per site.
Usage: python docs/data/trials/cpu-by-rtt/summarise.py"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent / "pairs"


def row(trace: Path) -> dict[str, float]:
    meta = json.loads((trace / "trace.json").read_text())
    with (trace / "xrdcl.csv").open() as f:
        in_requests = sum(float(r[4]) - float(r[2]) for r in csv.reader(f))
    return {"wall_s": meta["wall_s"], "cpu_s": meta["cpu_s"], "ops": meta["operations"],
            "in_requests_s": in_requests}  # fmt: skip


def main() -> None:
    by: dict[tuple[str, str], list[dict[str, float]]] = {}
    for trace in sorted(HERE.iterdir()):
        analysis, rest = trace.name.split("-", 1)
        site = rest.rsplit("-", 1)[0]
        r = row(trace)
        by.setdefault((analysis, site), []).append(r)
        print(f"{trace.name:22} wall {r['wall_s']:6.2f} s  CPU {r['cpu_s']:6.2f} s  "
              f"{r['ops']:4d} ops, {r['in_requests_s']:5.2f} s inside them")  # fmt: skip
    for (analysis, site), rows in sorted(by.items()):
        med = {k: statistics.median(r[k] for r in rows) for k in ("wall_s", "cpu_s")}
        print(f"{analysis} on {site}: median wall {med['wall_s']:.2f} s, CPU {med['cpu_s']:.2f} s "
              f"({len(rows)} recordings)")  # fmt: skip


if __name__ == "__main__":
    main()
