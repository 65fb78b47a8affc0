"""Where a file's baskets sit, and how far a reader jumps to read them in entry order."""

from instore.inspect.basketmap import basket_map, open_tree, read_order
from instore.inspect.disorder import Disorder, disorder

__all__ = ["Disorder", "basket_map", "disorder", "open_tree", "read_order"]
