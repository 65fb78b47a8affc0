"""Generated against template, per branch: do drawn events compress as the real ones did?

Both sides are measured the same way: a tree of the template's entry count, every basket a key
of its own, at the template's compression (the template's bytes were measured so when it was
derived). A ratio near 1 for the branches that hold most bytes means reads of the generated
files move as many bytes per event as reads of the real ones would.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pandas as pd

from instore.generate.like import fill_tree
from instore.generate.template import Template, branch_bytes

log = logging.getLogger(__name__)
TOLERANCE = 1.5  # the bar: the bulk of the bytes within this factor


def comparison(template: Template, seed: int = 1, compression: int | None = None) -> pd.DataFrame:
    """One row per branch: template and generated compressed bytes per event, and their ratio."""
    compression = template.compression if compression is None else compression
    with tempfile.TemporaryDirectory(prefix="instore-compare-") as tmp:
        path = Path(tmp) / "generated.root"
        fill_tree(path, template, template.entries, seed, 0, compression, "{}")
        generated = branch_bytes(path, template.tree_name)
    frame = pd.DataFrame(
        {
            "branch": [b.name for b in template.branches],
            "template_bytes_per_event": [b.template_bytes_per_event for b in template.branches],
            "generated_bytes_per_event": [
                generated.get(b.name, 0) / template.entries for b in template.branches
            ],
        }
    )
    frame["ratio"] = frame["generated_bytes_per_event"] / frame["template_bytes_per_event"]
    return frame


def share_within(frame: pd.DataFrame, factor: float = TOLERANCE) -> float:
    """The share of the template's bytes held by branches whose generated size is within ``factor``."""
    ok = (frame["ratio"] <= factor) & (frame["ratio"] >= 1 / factor)
    total = frame["template_bytes_per_event"].sum()
    return float(frame.loc[ok, "template_bytes_per_event"].sum() / total) if total else 0.0


def compare_to_template(template: Template, out: Path, seed: int, compression: int | None) -> int:
    frame = comparison(template, seed, compression)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{template.name}-comparison.csv"
    frame.to_csv(path, index=False, float_format="%.2f")
    share = share_within(frame)
    t, g = frame["template_bytes_per_event"].sum(), frame["generated_bytes_per_event"].sum()
    print(f"{template.name}: {len(frame)} branches; compressed bytes per event: template {t:.0f}, "
          f"generated {g:.0f} ({g / t:.2f}x); {share:.0%} of the template's bytes are in branches "
          f"within {TOLERANCE}x; per branch: {path}")  # fmt: skip
    top = frame.sort_values("template_bytes_per_event", ascending=False).head(10)
    print(top.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    return 0
