"""The basket map of a TTree: one row per basket on disk, read from the file's metadata.

An RNTuple's page map (``instore.inspect.pagemap``) has the same columns, so ``basket_map``,
``read_order`` and the disorder figures take either; ``format`` says which.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

COLUMNS = [
    "branch",
    "branch_index",
    "basket",
    "entry_start",
    "entry_stop",
    "offset",
    "compressed_bytes",
]


def open_tree(path: str, tree: str | None = None, **options: Any) -> tuple[Any, Any]:
    """Open ``path`` and return (file, tree): the named TTree or RNTuple, else the largest,
    chosen as the payload chooses it (TDirectories searched, a name or a path).

    An RNTuple comes back as uproot's RNTuple object (``pagemap.is_rntuple`` tells).
    """
    from instore.payload import objects  # it uses this package's page map

    file = objects.open_file(path, **options)
    try:
        chosen = objects.choose_from(file, path, tree, objects.classnames(file, path))
        return file, objects.get(file, path, chosen)
    except BaseException:
        file.close()
        raise


def _branch_rows(index: int, branch: Any) -> Iterable[tuple[Any, ...]]:
    n = branch.num_baskets
    if n == 0:
        return []
    seeks = np.asarray(branch.member("fBasketSeek"))[:n]
    sizes = np.asarray(branch.member("fBasketBytes"))[:n]
    entries = np.asarray(branch.member("fBasketEntry"))[: n + 1]
    return (
        (branch.name, index, i, int(entries[i]), int(entries[i + 1]), int(seeks[i]), int(sizes[i]))
        for i in range(n)
    )


def basket_map(tree: Any) -> pd.DataFrame:
    """One row per basket written to disk (baskets embedded in the TTree object are not listed).

    Given an RNTuple, its page map (see ``instore.inspect.pagemap``).
    """
    from instore.inspect.pagemap import is_rntuple, page_map

    if is_rntuple(tree):
        return page_map(tree)
    rows: list[tuple[Any, ...]] = []
    for index, branch in enumerate(tree.itervalues(recursive=True)):
        rows.extend(_branch_rows(index, branch))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["format"] = "ttree"
    frame.attrs["format"] = "ttree"
    return frame


def read_order(baskets: pd.DataFrame) -> pd.DataFrame:
    """Baskets in the order an entry-ordered reader needs them.

    A reader processing entries in order needs the baskets starting at each entry together;
    within that group it reads them in file order (as TTreeCache sorts its requests, and as
    RNTuple sorts a cluster's page reads). A byte range listed twice (an RNTuple page shared by
    identical columns, "same-page merging") is read once.
    """
    ordered = baskets.sort_values(["entry_start", "offset"], kind="stable")
    ordered = ordered.drop_duplicates(["offset", "compressed_bytes"])
    return ordered.reset_index(drop=True)


def select(
    baskets: pd.DataFrame, branches: Iterable[str] | None, entry_start: int, entry_stop: int
) -> pd.DataFrame:
    """Baskets of ``branches`` (all if None) that overlap entries [entry_start, entry_stop)."""
    mask = (baskets["entry_stop"] > entry_start) & (baskets["entry_start"] < entry_stop)
    if branches is not None:
        mask &= baskets["branch"].isin(list(branches))
    return baskets[mask]
