"""``instore inspect``: basket map, disorder figures and the access map of ROOT files."""

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
        help="show where a file's baskets sit and how scattered entry-ordered reading is",
        description="Print disorder figures (total seek distance and backward jumps reading in "
        "entry order, clusters, mean basket size) for each file; optionally write the basket map "
        "and the access map plot.",
    )
    p.add_argument("files", nargs="+", help="ROOT files (paths or root:// / http:// URLs)")
    p.add_argument("--tree", help="TTree name (default: the largest TTree)")
    p.add_argument(
        "--baskets", type=Path, help="write the basket map of each file as CSV into this directory"
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
        label = Path(path).name
        maps[label] = baskets
        if args.baskets:
            args.baskets.mkdir(parents=True, exist_ok=True)
            baskets.to_csv(args.baskets / f"{Path(path).stem}.baskets.csv", index=False)
        if args.json:
            print(json.dumps({"file": path, "tree": tree.name, **figures.as_dict()}))
        else:
            _print_table(path, tree.name, figures.as_dict())
    if args.plot:
        print(f"access map: {plot_access_maps(maps, args.plot)}")
    return 0


def _print_table(path: str, tree: str, figures: dict[str, float]) -> None:
    print(f"{path} (tree {tree})")
    for key, value in figures.items():
        shown = f"{value:,.0f}" if isinstance(value, (int, float)) else value
        print(f"  {key:<18} {shown}")
