"""The basket map of a file as ``instore inspect`` opens it, and the order an entry-ordered
reader needs its baskets in.

The maps themselves (a TTree's baskets, an RNTuple's pages, one frame shape) are built in
``instore.payload.maps``, which the engines share; ``format`` says which a frame is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from instore.payload import objects
from instore.payload.maps import COLUMNS, basket_map

__all__ = ["COLUMNS", "basket_map", "open_tree", "read_order", "select"]


def open_tree(path: str, tree: str | None = None, **options: Any) -> tuple[Any, Any]:
    """Open ``path`` and return (file, tree): the named TTree or RNTuple, else the largest,
    chosen as the payload chooses it (TDirectories searched, a name or a path).

    An RNTuple comes back as uproot's RNTuple object (``maps.is_rntuple`` tells).
    """
    file = objects.open_file(path, **options)
    try:
        chosen = objects.choose_from(file, path, tree, objects.classnames(file, path))
        return file, objects.get(file, path, chosen)
    except BaseException:
        file.close()
        raise


def read_order(baskets: pd.DataFrame) -> pd.DataFrame:
    """Baskets in the order an entry-ordered reader needs them.

    A reader processing entries in order needs the baskets starting at each entry together;
    within that group it reads them in file order (as TTreeCache sorts its requests, and as
    RNTuple sorts a cluster's page reads). A byte range listed twice (an RNTuple page shared by
    identical columns, "same-page merging") is read once, and so is the TTree's key, which holds
    its embedded baskets: first, since a reader reads it when it opens the tree.
    """
    embedded = baskets.get("embedded", pd.Series(False, index=baskets.index))
    keyed = baskets.assign(_late=~embedded.astype(bool))
    ordered = keyed.sort_values(["_late", "entry_start", "offset"], kind="stable")
    ordered = ordered.drop_duplicates(["offset", "compressed_bytes"]).drop(columns="_late")
    return ordered.reset_index(drop=True)


def select(
    baskets: pd.DataFrame, branches: Iterable[str] | None, entry_start: int, entry_stop: int
) -> pd.DataFrame:
    """Baskets of ``branches`` (all if None) that overlap entries [entry_start, entry_stop)."""
    mask = (baskets["entry_stop"] > entry_start) & (baskets["entry_start"] < entry_stop)
    if branches is not None:
        mask &= baskets["branch"].isin(list(branches))
    return baskets[mask]
