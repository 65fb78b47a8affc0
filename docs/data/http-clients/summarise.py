"""The load section's replay clients, from a run's job records (run-logs/<site>-records.jsonl.xz):
per site, protocol and number of clients, the replayer's own CPU per request, the host's CPU
busy, the sleeps' overshoot, and the reads' latency per request against one client's; beside
them the time the node's cores need to clear one request from every client at once
(clients x CPU per request / cores), which is what a client waits when the clients' requests
come together (the load section starts them together, on one trace).

    python docs/data/http-clients/summarise.py docs/data/reference/run-logs
"""

from __future__ import annotations

import json
import lzma
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path

CORES = 2


def rows(run_logs: Path) -> list[str]:
    out = [
        "site | protocol | clients | jobs | replayer CPU per request (us) | host CPU busy | "
        "overshoot per pass (s) | read per request (ms) | clients x CPU / cores (ms)"
    ]
    for path in sorted(run_logs.glob("*-records.jsonl.xz")):
        groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
        with lzma.open(path, "rt") as f:
            for line in f:
                r = json.loads(line)
                if (
                    r.get("section") == "load"
                    and r.get("status") == "ok"
                    and r.get("requests_done")
                ):
                    groups[(r["protocol"], r["jobs"])].append(r)
        for (protocol, clients), rs in sorted(groups.items()):
            cpu_us = st.median(r["client_cpu_s"] / r["requests_done"] * 1e6 for r in rs)
            read_ms = st.median(r["read_time_s"] / r["requests_done"] * 1e3 for r in rs)
            over = st.median(r["sleep_overshoot_s"] / r["passes"] for r in rs if r["passes"])
            busy = st.median(r["host_cpu_busy"] for r in rs)
            burst = clients * cpu_us / CORES / 1e3
            out.append(
                f"{rs[0]['site']} | {protocol} | {clients} | {len(rs)} | {cpu_us:.0f} | "
                f"{busy:.2f} | {over:.3f} | {read_ms:.2f} | {burst:.2f}"
            )
    return out


if __name__ == "__main__":
    print("\n".join(rows(Path(sys.argv[1]))))
