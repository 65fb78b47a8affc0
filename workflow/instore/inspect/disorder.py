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
    """``baskets`` counts every basket (an RNTuple page stored once for two columns, once);
    ``embedded_baskets`` those of them stored in the TTree's record, not in keys of their own;
    the byte figures are over the ranges a reader fetches (the TTree's key once for all of its
    embedded baskets, see ``instore.payload.maps``)."""

    baskets: int
    embedded_baskets: int
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
    n_embedded = int(baskets["embedded"].sum()) if "embedded" in baskets else 0
    own_keys = int((~ordered["embedded"].astype(bool)).sum()) if n_embedded else len(ordered)
    return Disorder(
        baskets=own_keys + n_embedded,
        embedded_baskets=n_embedded,
        branches=int(baskets["branch"].nunique()),
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
