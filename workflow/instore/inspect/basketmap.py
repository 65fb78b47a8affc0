"""The basket map of a TTree: one row per basket on disk, read from the file's metadata.

An RNTuple's page map (``instore.inspect.pagemap``) has the same columns, so ``basket_map``,
``read_order`` and the disorder figures take either; ``format`` says which.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from instore.errors import InstoreError

COLUMNS = [
    "branch",
    "branch_index",
    "basket",
    "entry_start",
    "entry_stop",
    "offset",
    "compressed_bytes",
]


def _uproot_open(path: str, **options: Any) -> Any:
    import uproot

    try:
        return uproot.open(path, **options)
    except FileNotFoundError as err:
        raise InstoreError(f"{path}: no such file", "check the path or URL") from err
    except OSError as err:
        raise InstoreError(
            f"{path}: cannot open ({err})", "check the endpoint is up and the path exists"
        ) from err
    except Exception as err:  # uproot raises plain ValueError/KeyError on bad headers
        raise InstoreError(
            f"{path}: not a readable ROOT file ({type(err).__name__}: {err})".splitlines()[0],
            "regenerate or re-copy the file; it may be truncated or corrupt",
        ) from err


DATA_CLASSES = ("TTree", "ROOT::RNTuple")


def _data_bytes(obj: Any) -> int:
    """Compressed bytes of a TTree's baskets or an RNTuple's pages (to choose the largest)."""
    if obj.classname == "TTree":
        return int(obj.member("fZipBytes"))
    return sum(p.locator.num_bytes for c in obj.page_link_list for col in c for p in col.pages)


def _tree_names(file: Any) -> list[tuple[str, int]]:
    """(name, total compressed bytes) of every TTree and RNTuple in the file, largest first."""
    names = [k.split(";")[0] for k, cls in file.classnames().items() if cls in DATA_CLASSES]
    names = list(dict.fromkeys(names))
    if len(names) == 1:
        return [(names[0], 0)]
    trees = [(n, _data_bytes(file[n])) for n in names]
    return sorted(trees, key=lambda t: -t[1])


def open_tree(path: str, tree: str | None = None, **options: Any) -> tuple[Any, Any]:
    """Open ``path`` and return (file, tree): the named TTree or RNTuple, else the largest.

    An RNTuple comes back as uproot's RNTuple object (``pagemap.is_rntuple`` tells).
    """
    file = _uproot_open(path, **options)
    try:
        trees = _tree_names(file)
    except Exception as err:
        file.close()
        raise InstoreError(
            f"{path}: cannot list its objects ({err})".splitlines()[0],
            "the file may be truncated or corrupt; regenerate or re-copy it",
        ) from err
    if not trees:
        file.close()
        raise InstoreError(
            f"{path}: the file holds no TTree or RNTuple",
            "point at a file with a TTree or an RNTuple",
        )
    name = tree or trees[0][0]
    if name not in {n for n, _ in trees}:
        file.close()
        raise InstoreError(
            f"{path}: no TTree or RNTuple named {name!r}",
            f"choose one of: {', '.join(n for n, _ in trees)}",
        )
    return file, file[name]


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
