"""How scattered a file is for an entry-ordered reader (the first seed's access-map figures)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from instore.inspect.basketmap import read_order
from instore.payload.maps import is_rntuple, rntuple_clusters


@dataclass(frozen=True)
class Disorder:
    baskets: int
    branches: int
    clusters: int
    mean_basket_bytes: float
    total_seek_bytes: int
    backward_jumps: int
    compressed_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def disorder(baskets: pd.DataFrame, clusters: int) -> Disorder:
    """Seek distance and backward jumps reading every basket in entry order.

    The seek before a basket is the gap between where the previous read ended and where this
    one starts; a perfectly ordered file reads forward with (almost) no gaps.
    """
    ordered = read_order(baskets)
    offsets = ordered["offset"].to_numpy(dtype=np.int64)
    ends = offsets + ordered["compressed_bytes"].to_numpy(dtype=np.int64)
    gaps = offsets[1:] - ends[:-1]
    return Disorder(
        baskets=len(ordered),
        branches=int(ordered["branch"].nunique()),
        clusters=clusters,
        mean_basket_bytes=float(ordered["compressed_bytes"].mean()) if len(ordered) else 0.0,
        total_seek_bytes=int(np.abs(gaps).sum()),
        backward_jumps=int((offsets[1:] < offsets[:-1]).sum()),
        compressed_bytes=int(ordered["compressed_bytes"].sum()),
    )


def clusters_of(tree: Any) -> int:
    """Number of clusters: stretches of entries where every branch starts a basket together.

    For an RNTuple, the clusters its footer lists.
    """
    if is_rntuple(tree):
        return rntuple_clusters(tree)
    return max(1, len(tree.common_entry_offsets()) - 1)
