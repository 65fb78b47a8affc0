"""Access patterns: which branches and entries a job reads, and what that needs from disk.

Both engines select with these functions from their own view of the file's metadata, so
"bytes needed" means the same thing for both.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from instore.errors import InstoreError
from instore.payload.branchsets import BRANCH_SETS

ENTRY_MODES = ("stride", "range")


@dataclass(frozen=True)
class Pattern:
    """``branches``: "all", "fraction:F" (an evenly spread F of the branches), a named set
    (``BRANCH_SETS``: the AGC's) or "a,b,c" where each item is a name or a glob ("Jet_*")."""

    branches: str = "all"
    entry_fraction: float = 1.0
    entry_mode: str = "stride"  # stride: every k-th entry (a selection); range: the first F
    cpu_us: float = 0.0  # synthetic CPU time per event, microseconds

    def __post_init__(self) -> None:
        if not 0 < self.entry_fraction <= 1:
            raise InstoreError(
                f"entry fraction {self.entry_fraction} is outside (0, 1]",
                "give --entries between 0 (excluded) and 1",
            )
        if self.entry_mode not in ENTRY_MODES:
            raise InstoreError(
                f"unknown entry mode {self.entry_mode!r}", f"choose one of {', '.join(ENTRY_MODES)}"
            )
        if self.cpu_us < 0:
            raise InstoreError("CPU cost per event is negative", "give --cpu-us 0 or more")
        if self.branches.startswith("fraction:"):
            f = _fraction(self.branches)
            if not 0 < f <= 1:
                raise InstoreError(
                    f"branch fraction {f} is outside (0, 1]",
                    "use --branches fraction:0.1 (for example)",
                )


def _fraction(text: str) -> float:
    try:
        return float(text.split(":", 1)[1])
    except ValueError as err:
        raise InstoreError(
            f"bad branch fraction {text!r}", "use --branches fraction:0.1 (for example)"
        ) from err


def select_branches(names: Sequence[str], counters: Mapping[str, str], spec: str) -> list[str]:
    """Branches to read, in file order, with the counter branch of every jagged one added."""
    if spec == "all":
        chosen = list(names)
    elif spec.startswith("fraction:"):
        k = max(1, round(_fraction(spec) * len(names)))
        step = len(names) / k
        chosen = [names[int(i * step)] for i in range(k)]
    else:
        chosen = _named(names, spec)
    wanted = set(chosen) | {counters[b] for b in chosen if b in counters}
    return [n for n in names if n in wanted]


def _named(names: Sequence[str], spec: str) -> list[str]:
    """Branches named by a set's name, names or globs; one line naming what the file lacks."""
    items = list(BRANCH_SETS.get(spec, ())) or [b.strip() for b in spec.split(",") if b.strip()]
    chosen, missing = [], []
    for item in items:
        hits = (
            fnmatch.filter(names, item)
            if any(c in item for c in "*?[")
            else [item] * (item in names)
        )
        chosen.extend(hits) if hits else missing.append(item)
    if missing:
        what = f"pattern {spec} needs" if spec in BRANCH_SETS else "the pattern names"
        raise InstoreError(
            f"{what} {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}, which the file "
            f"lacks ({len(missing)} of {len(items)} missing)",
            "choose branches the file has (uproot.open(FILE)[TREE].keys() lists them), or a pattern for its schema",
        )
    return chosen


def entry_selection(entries: int, pattern: Pattern) -> tuple[int, int, int]:
    """(first, stop, stride) of the entries the job processes."""
    if pattern.entry_mode == "range":
        return 0, max(1, math.ceil(entries * pattern.entry_fraction)) if entries else 0, 1
    return 0, entries, max(1, round(1 / pattern.entry_fraction))


def bytes_needed(
    baskets: pd.DataFrame, branches: Sequence[str], first: int, stop: int, stride: int
) -> int:
    """Compressed bytes of the baskets (RNTuple pages) holding at least one entry the job reads.

    A page stored once for two columns (RNTuple deduplicates identical pages) counts once. A
    basket embedded in the TTree's record counts as the TTree's key, once for all of them: a
    reader gets those baskets only by reading that key (compressed as one), and always reads it
    when it opens the tree, so it is data the job needs, not overhead (see
    ``instore.payload.maps``)."""
    b = baskets[baskets["branch"].isin(list(branches))]
    lo = np.maximum(b["entry_start"].to_numpy(), first)
    hi = np.minimum(b["entry_stop"].to_numpy(), stop)
    first_hit = first + np.ceil((lo - first) / stride).astype(np.int64) * stride
    touched = b[first_hit < hi].drop_duplicates("offset")
    return int(touched["compressed_bytes"].sum())
