"""Where a file's baskets (or RNTuple pages) sit, and how far an entry-ordered reader jumps."""

from instore.inspect.basketmap import basket_map, open_tree, read_order
from instore.inspect.disorder import Disorder, disorder
from instore.payload.maps import is_rntuple, page_map

__all__ = [
    "Disorder",
    "basket_map",
    "disorder",
    "is_rntuple",
    "open_tree",
    "page_map",
    "read_order",
]
