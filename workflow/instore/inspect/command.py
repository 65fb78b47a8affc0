"""``instore inspect``: basket (or page) map, disorder figures and the access map of ROOT files.

A TTree's baskets and an RNTuple's pages give the same figures: a page plays a basket's part.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from instore.inspect.accessmap import plot_access_maps
from instore.inspect.basketmap import basket_map, open_tree
from instore.inspect.disorder import clusters_of, disorder


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="show where a file's baskets (or RNTuple pages) sit and how scattered "
        "entry-ordered reading is",
        description="Print disorder figures (total seek distance and backward jumps reading in "
        "entry order, clusters, mean basket size) for each file; optionally write the basket map "
        "and the access map plot. RNTuple files are read the same way: one row per page "
        "(basket = page, branch = top-level field, entries = the page's cluster).",
    )
    p.add_argument("files", nargs="+", help="ROOT files (paths or root:// / http:// URLs)")
    p.add_argument("--tree", help="TTree or RNTuple name (default: the largest TTree or RNTuple)")
    p.add_argument(
        "--baskets",
        type=Path,
        help="write the basket (or page) map of each file as CSV into this directory",
    )
    p.add_argument(
        "--plot", type=Path, help="write the access map of all files side by side to this PNG"
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON object per file instead of a table"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    maps = {}
    for path in args.files:
        file, tree = open_tree(path, args.tree)
        with file:
            baskets = basket_map(tree)
            figures = disorder(baskets, clusters_of(tree))
        fmt = baskets.attrs.get("format", "ttree")
        label = Path(path).name
        maps[label] = baskets
        if args.baskets:
            args.baskets.mkdir(parents=True, exist_ok=True)
            baskets.to_csv(args.baskets / f"{Path(path).stem}.baskets.csv", index=False)
        if args.json:
            print(json.dumps({"file": path, "tree": tree.name, "format": fmt, **figures.as_dict()}))
        else:
            _print_table(path, tree.name, fmt, figures.as_dict())
    if args.plot:
        print(f"access map: {plot_access_maps(maps, args.plot)}")
    return 0


def _print_table(path: str, tree: str, fmt: str, figures: dict[str, float]) -> None:
    kind = "RNTuple" if fmt == "rntuple" else "tree"
    print(f"{path} ({kind} {tree})")
    for key, value in figures.items():
        shown = f"{value:,.0f}" if isinstance(value, (int, float)) else value
        print(f"  {key:<18} {shown}")
