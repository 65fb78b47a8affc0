"""A real site's own dataset (the site file's ``dataset:``): files already on its storage, read
instead of the generated ones, so nothing is uploaded.

Names are paths under the site's data path, what ``{file}`` stands for in every endpoint, so
one name reaches the file over every protocol the site offers (a URL of an endpoint is turned
into its name). Before a sweep each file is found behind every endpoint (its size, with the
jobs' credentials), opened through one of them as the payload opens it, and described: format,
entries, size, compression, branches and the layout the study would call it. The description
is kept in ``results/<site>/dataset.json``; the sweep reads from it which files a point reads
and which points the dataset cannot serve (a layout it lacks, a branch a pattern names).

Layout: ``model`` (the described dataset, no I/O), ``surveyor`` (resolving, finding and
describing the files: all the network I/O) and ``store`` (the description kept in results, or
surveyed before a sweep plans).
"""

from instore.site.dataset.model import RNTUPLE_LAYOUT, Dataset, DatasetFile, layout_label
from instore.site.dataset.store import DATASET_FILE, load_current, path_of, require, save
from instore.site.dataset.surveyor import classify, describe_file, name_of, resolve, survey

__all__ = [
    "DATASET_FILE",
    "RNTUPLE_LAYOUT",
    "Dataset",
    "DatasetFile",
    "classify",
    "describe_file",
    "layout_label",
    "load_current",
    "name_of",
    "path_of",
    "require",
    "resolve",
    "save",
    "survey",
]
