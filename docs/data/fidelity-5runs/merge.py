"""Merge the two 5-run invocations of the fidelity bench into one results file, in the bench's
own format, for the Results page (``bench/fidelity_results.json``).

- ``fidelity5.json`` (14:49-15:14): lan-hdd and the WAN at 25 ms over XRootD; its lan-hdd rows
  are kept (their model columns as it computed them: TCP's window moves a LAN's prediction by
  less than 0.1%);
- ``fidelity5b.json`` (from 15:51): the WAN at 25 ms and at 50 ms, over XRootD and through a
  warm XCache; every row kept, their model columns computed again by the current model from
  the traces that invocation recorded (kept in ``traces-b/``) and the reference run's profiles
  refitted by the current fit (kept in ``profiles/``): ``replay_fidelity.py --model-only``.

Usage (from the repository root): python docs/data/fidelity-5runs/merge.py OUT
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parents[2]


def _modelled_again(rows: list[dict]) -> list[dict]:
    """The rows with the model's columns computed by this checkout (``--model-only``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "b.json"
        out.write_text(json.dumps({"rows": rows}))
        subprocess.run([sys.executable, str(REPO / "bench" / "replay_fidelity.py"), "--model-only",
                        "--profiles", str(HERE / "profiles"), "--out", str(out)],
                       check=True, cwd=REPO)  # fmt: skip
        return json.loads(out.read_text())["rows"]


def main(out: Path) -> None:
    first = json.loads((HERE / "fidelity5.json").read_text())
    second = json.loads((HERE / "fidelity5b.json").read_text())
    kept = [
        {"measured_at": first["measured_at"], **r} for r in first["rows"] if r["site"] == "lan-hdd"
    ]
    rows = []
    for r in second["rows"]:
        r = dict(r)
        r.setdefault("measured_at", second["measured_at"])
        if r.get("trace_dir"):
            r["trace_dir"] = str(HERE / "traces-b" / Path(r["trace_dir"]).name)
        rows.append(r)
    rows = _modelled_again(rows)
    merged = {
        **second,
        "commands": [
            "python bench/replay_fidelity.py --sites lan-hdd wan --runs 5",
            *second.get(
                "commands",
                ["python bench/replay_fidelity.py --sites wan --wan-rtt 50 --xcache --runs 5"],
            ),
        ],
        "merged": "the first's lan-hdd rows, every row of the second, whose model columns the "
        "model of the day computed again: docs/data/fidelity-5runs/merge.py",
        "rows": kept + rows,
    }
    out.write_text(json.dumps(merged, indent=1) + "\n")
    print(f"written {out}: {len(kept)} rows of the first invocation, {len(rows)} of the second")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
