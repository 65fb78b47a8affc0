"""Where a file's data sits: a TTree's basket map and an RNTuple's page map, one row per basket
(or page) on disk, in one frame shape (``COLUMNS``).

Both engines measure "bytes needed" with these frames and ``instore inspect`` draws its figures
from them. This module imports neither ``instore.payload``'s other modules nor
``instore.inspect``, so either can import it without a cycle.

An RNTuple's page map has the basket map's columns, so the disorder figures and the access map
read it unchanged: ``branch`` is the top-level field a page belongs to (the name a reader
selects), ``basket`` the page's index within its column over the whole file, ``offset`` and
``compressed_bytes`` its bytes on storage (the locator's, plus the page checksum a reader reads
with it). ``entry_start``/``entry_stop`` are its cluster's entries: an RNTuple reader loads a
cluster's pages of the selected columns together (the cluster is the unit of reading, as
TTreeCache's cluster is), and a page of a collection's values has no entry range of its own
without reading the offsets. Extra columns say which cluster, column and elements a page holds;
``shared`` marks a page whose bytes an earlier row already lists (ROOT's same-page merging
stores identical pages once, e.g. the offsets of one collection's fields).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
PAGE_COLUMNS = [
    *COLUMNS,
    "cluster",
    "page",
    "column",
    "column_index",
    "column_type",
    "element_start",
    "elements",
    "shared",
    "format",
]
RNTUPLE_CLASS = "ROOT::RNTuple"
CHECKSUM_BYTES = 8  # a checksummed page is stored with its xxhash3 checksum behind it


def basket_frame(
    names: Sequence[str],
    index: Iterable[int],
    basket: Iterable[int],
    entry_start: Iterable[int],
    entry_stop: Iterable[int],
    offset: Iterable[int],
    compressed_bytes: Iterable[int],
) -> pd.DataFrame:
    """The ``COLUMNS`` frame from per-row sequences (ROOT's row vectors): ``index`` indexes
    ``names`` (the branch, or an RNTuple's top-level field), ``basket`` numbers the basket (page)."""
    indices = list(index)
    values = ([names[i] for i in indices], indices, basket, entry_start, entry_stop, offset,
              compressed_bytes)  # fmt: skip
    return pd.DataFrame({c: list(v) for c, v in zip(COLUMNS, values, strict=True)})


# --- TTree (uproot) ---------------------------------------------------------------------------


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

    Given an RNTuple, its page map (``page_map``).
    """
    if is_rntuple(tree):
        return page_map(tree)
    rows: list[tuple[Any, ...]] = []
    for index, branch in enumerate(tree.itervalues(recursive=True)):
        rows.extend(_branch_rows(index, branch))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["format"] = "ttree"
    frame.attrs["format"] = "ttree"
    return frame


# --- RNTuple (uproot) -------------------------------------------------------------------------


def is_rntuple(obj: Any) -> bool:
    """True for uproot's RNTuple model (a TTree has branches instead)."""
    return getattr(obj, "classname", "") == RNTUPLE_CLASS


def _column_type_names() -> dict[int, str]:
    import uproot

    return {v: k for k, v in uproot.const.rntuple_col_type_to_num_dict.items()}


def _field_paths(ntuple: Any) -> tuple[list[str], list[int]]:
    """Each field's dotted path and the index of its top-level field (a top field is its own
    parent)."""
    records = ntuple.field_records
    paths: list[str] = []
    tops: list[int] = []
    for i, rec in enumerate(records):
        parent = rec.parent_field_id
        if parent == i:
            paths.append(rec.field_name)
            tops.append(i)
        else:  # parents precede their children in the header
            paths.append(f"{paths[parent]}.{rec.field_name}")
            tops.append(tops[parent])
    return paths, tops


def _columns(ntuple: Any) -> list[tuple[str, str, int, str]]:
    """Per physical column: (column path, top-level field, top-level index, column type)."""
    paths, tops = _field_paths(ntuple)
    names = _column_type_names()
    top_order = {top: k for k, top in enumerate(dict.fromkeys(tops))}
    out = []
    for col in ntuple.column_records:
        fid = col.field_id
        top = tops[fid]
        suffix = f"#{col.repr_idx}" if col.repr_idx else ""
        out.append(
            (
                paths[fid] + suffix,
                paths[top],
                top_order[top],
                names.get(col.type, str(col.type)),
            )
        )
    return out


def _page_rows(ntuple: Any) -> Iterator[tuple[Any, ...]]:
    columns = _columns(ntuple)
    next_page = [0] * len(columns)
    for cluster, (summary, links) in enumerate(
        zip(ntuple.cluster_summaries, ntuple.page_link_list, strict=True)
    ):
        first = int(summary.num_first_entry)
        stop = first + int(summary.num_entries)
        for ci, pages in enumerate(links):
            if ci >= len(columns) or pages.suppressed:
                continue
            path, field, field_index, ctype = columns[ci]
            element = int(pages.element_offset)
            for page, desc in enumerate(pages.pages):
                n = abs(int(desc.num_elements))
                loc = desc.locator
                yield (
                    field,
                    field_index,
                    next_page[ci],
                    first,
                    stop,
                    int(loc.offset),
                    int(loc.num_bytes) + (CHECKSUM_BYTES if desc.has_checksum else 0),
                    cluster,
                    page,
                    path,
                    ci,
                    ctype,
                    element,
                    n,
                    False,
                    "rntuple",
                )
                next_page[ci] += 1
                element += n


def page_map(ntuple: Any) -> pd.DataFrame:
    """One row per page written to disk, in cluster then column order."""
    frame = pd.DataFrame(list(_page_rows(ntuple)), columns=PAGE_COLUMNS)
    frame["shared"] = frame.duplicated(["offset", "compressed_bytes"])
    frame.attrs["format"] = "rntuple"
    return frame


def rntuple_clusters(ntuple: Any) -> int:
    """Number of clusters listed in the footer's page lists."""
    return max(1, len(ntuple.cluster_summaries))
