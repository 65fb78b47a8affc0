"""Merge the RNTuple points of two ``bench/fork_bias.py`` results files (paired samples
concatenated in order: each file's pairs stay pairs), for ``fork_bias.py --reanalyse``.

Made 2026-11-29: python docs/data/fork-bias/merge.py \
    docs/data/fork-bias/2026-11-29-3000-events-25-runs.json \
    docs/data/fork-bias/2026-11-29-rntuple-40-runs.json merged.json
then python bench/fork_bias.py --reanalyse merged.json --out 2026-11-29-rntuple-65-runs-merged.json
"""

import json
import sys
from pathlib import Path

out = Path(sys.argv[3])
first, second = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
merged = json.loads(json.dumps(second))
for rt, points in second["runtimes"].items():
    for label, p in points.items():
        if not label.startswith("RNTuple"):
            continue
        old = first["runtimes"][rt][label]
        for way in ("exec", "fork", "fork_shared"):
            for metric, m in p[way].items():
                if isinstance(m, dict) and "samples" in m:
                    merged["runtimes"][rt][label][way][metric]["samples"] = (
                        old[way][metric]["samples"] + m["samples"]
                    )
merged["runs"] = first["runs"] + second["runs"]
merged["merged_from"] = [sys.argv[1], sys.argv[2]]
out.write_text(json.dumps(merged, indent=1))
