"""A real site's own dataset (the site file's ``dataset:``): files already on its storage, read
instead of the generated ones, so nothing is uploaded.

Names are paths under the site's data path, what ``{file}`` stands for in every endpoint, so
one name reaches the file over every protocol the site offers (a URL of an endpoint is turned
into its name). Before a sweep each file is found behind every endpoint (its size, with the
jobs' credentials), opened through one of them as the payload opens it, and described: format,
entries, size, compression, branches and the layout the study would call it. The description
is kept in ``results/<site>/dataset.json``; the sweep reads from it which files a point reads
and which points the dataset cannot serve (a layout it lacks, a branch a pattern names)."""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from instore.errors import InstoreError
from instore.generate.layouts import TTREE_LAYOUTS
from instore.record import utc_now
from instore.site.config import SiteConfig
from instore.study.config import DEFAULT_FILESET
from instore.urls import FILE, XROOTD, default_port, local_path, protocol_of

if TYPE_CHECKING:
    from instore.site.real import RealLive
    from instore.study import Point

DATASET_FILE = "dataset.json"
RNTUPLE_LAYOUT = "rntuple"  # what the study calls a dataset's RNTuple files
# The endpoint files are opened and described through, the first the site has.
DESCRIBE_ORDER = ("xrootd", "http", "posix", "fuse", "stage-in", "xcache")
OPEN_TIMEOUT_S = 60.0
DESCRIBE_THREADS = 4


@dataclass(frozen=True)
class DatasetFile:
    """One file of the dataset as it was found: ``name`` under the data path, ``url`` where it
    was opened, and what it holds."""

    name: str
    url: str
    size: int
    format: str  # TTree or RNTuple
    object: str  # its path in the file
    entries: int
    compression: str  # the file's setting, e.g. ZLIB(1)
    compression_ratio: float | None  # uncompressed / compressed bytes (TTree)
    layout: str  # unordered, by-branch, ordered (TTree) or rntuple
    clusters: int
    baskets: int  # baskets (pages) on storage, embedded ones included
    branches: tuple[str, ...]  # top-level branches (RNTuple fields): what a pattern selects

    @property
    def label(self) -> str:
        return layout_label(self.layout)

    def line(self) -> str:
        """What the preflight prints for it."""
        ratio = f" (x{self.compression_ratio:.2f})" if self.compression_ratio else ""
        return (f"{self.name}: {self.format} {self.object}, {self.label}, {self.entries:,} entries, "
                f"{_size(self.size)}, {self.compression}{ratio}, {len(self.branches):,} "
                f"branches, {self.clusters:,} cluster(s), {self.baskets:,} "
                f"{'pages' if self.format == 'RNTuple' else 'baskets'}")  # fmt: skip


def _size(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 1e6 else f"{size / 1e3:,.1f} kB"


def layout_label(layout: str) -> str:
    """How a layout is named where a dataset's files are listed: ``ordered TTree``, ``RNTuple``."""
    if layout in TTREE_LAYOUTS:
        return f"{layout} TTree"
    return "RNTuple" if layout == RNTUPLE_LAYOUT else layout


@dataclass(frozen=True)
class Dataset:
    """The described dataset of a site: the spec it was made for, the object read, its files."""

    site: str
    spec: dict[str, Any]
    endpoints: dict[str, str]
    tree: str
    files: tuple[DatasetFile, ...]
    described_at: str = field(default_factory=utc_now)

    def key(self) -> dict[str, Any]:
        """What identifies the files in a point's key: the object and every file's name and size."""
        blob = json.dumps([self.tree, *[(f.name, f.size) for f in self.files]])
        return {"dataset": hashlib.sha256(blob.encode()).hexdigest()[:16]}

    def holds(self) -> str:
        """``3 ordered TTree, 1 RNTuple``: what a skipped point's reason says is there."""
        counts = Counter(f.label for f in self.files)
        return ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))

    def files_of(self, layout: str) -> list[DatasetFile]:
        return [f for f in self.files if f.layout == layout]

    def reads(self, point: Point) -> list[str]:
        """Job j of the point reads file j mod n of the point's layout."""
        files = self.files_of(point.layout)
        return [files[j % len(files)].name for j in range(point.jobs)]

    def skip_reason(self, point: Point) -> str | None:
        """Why the dataset cannot serve the point (None: it can): a generated file set, a
        layout it lacks, a branch the point's pattern names that its files lack."""
        from instore.payload.pattern import select_branches

        if point.fileset not in (None, DEFAULT_FILESET):
            return f"the site reads its own dataset, not the generated file set {point.fileset}"
        files = self.files_of(point.layout)
        if not files:
            return (f"the dataset has no {layout_label(point.layout)} files "
                    f"(it holds: {self.holds()})")  # fmt: skip
        for branches in dict.fromkeys(f.branches for f in files):  # usually one schema
            try:
                select_branches(branches, {}, point.branches)
            except InstoreError as err:
                name = next(f.name for f in files if f.branches == branches)
                return f"{name}: {err.problem}"
        return None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dataset:
        files = tuple(DatasetFile(**{**f, "branches": tuple(f["branches"])}) for f in data["files"])
        return cls(**{**data, "files": files})


# --- layouts -------------------------------------------------------------------------------


def _backward_jumps(baskets: pd.DataFrame) -> int:
    from instore.inspect.basketmap import read_order

    offsets = read_order(baskets)["offset"].to_numpy(dtype=np.int64)
    return int((offsets[1:] < offsets[:-1]).sum())


def classify(baskets: pd.DataFrame, cluster_starts: Sequence[int]) -> str:
    """The study's name for how a TTree's baskets lie (``baskets``: its basket map,
    ``cluster_starts``: the first entry of each cluster, as ``common_entry_offsets`` gives).

    ``ordered``: reading cluster after cluster moves forward through the file (every basket
    of a cluster lies before the next cluster's), and a single cluster reads forward in entry
    order. ``by-branch``: otherwise, if each branch's baskets lie together. ``unordered``: the
    rest (baskets interleaved as they filled, e.g. ``SetAutoFlush(0)``). Baskets embedded in
    the TTree's record are read with it, at once, and do not count."""
    own = baskets[~baskets["embedded"].astype(bool)] if "embedded" in baskets else baskets
    if own.empty:
        return "ordered"
    starts = own["entry_start"].to_numpy(dtype=np.int64)
    cluster = np.searchsorted(np.asarray(cluster_starts, dtype=np.int64), starts, "right") - 1
    offsets = own["offset"].to_numpy(dtype=np.int64)
    ends = offsets + own["compressed_bytes"].to_numpy(dtype=np.int64)
    spans = (
        pd.DataFrame({"cluster": cluster, "lo": offsets, "hi": ends})
        .groupby("cluster")
        .agg(lo=("lo", "min"), hi=("hi", "max"))
        .sort_index()
    )
    forward = bool((spans["lo"].to_numpy()[1:] >= spans["hi"].to_numpy()[:-1]).all())
    if forward and (len(spans) > 1 or _backward_jumps(own) == 0):
        return "ordered"
    in_file = own.sort_values("offset", kind="stable")["branch"].to_numpy()
    runs = 1 + int((in_file[1:] != in_file[:-1]).sum())
    return "by-branch" if runs == own["branch"].nunique() else "unordered"


# --- names ---------------------------------------------------------------------------------


def _normal(url: str) -> str:
    """A URL spelt one way: default port added, runs of slashes in its path made one."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return re.sub("/+", "/", url)
    port = parts.port or default_port(url)
    host = f"{parts.hostname}:{port}" if port else str(parts.hostname)
    return f"{parts.scheme}://{host}{re.sub('/+', '/', '/' + parts.path)}"


def name_of(site: SiteConfig, entry: str) -> str:
    """The name under the site's data path of a dataset entry: a relative path as given, a URL
    (or absolute path) by the endpoint it starts like."""
    entry = entry.strip()
    if "://" not in entry and not entry.startswith("/"):
        return posixpath.normpath(entry)
    for template in site.endpoints.values():
        prefix, _, suffix = template.partition("{file}")
        head, whole = _normal(prefix), _normal(entry)
        if whole.startswith(head) and whole.endswith(suffix) and len(whole) > len(head):
            return whole[len(head) : len(whole) - len(suffix)]
    raise InstoreError(
        f"site {site.name}: {entry} is not under any of its endpoints "
        f"({', '.join(sorted(set(site.endpoints.values())))})",
        "give paths under the site's data path (what {file} stands for), or URLs that start "
        "like one of its endpoints",
    )


def _listed(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise InstoreError(f"{path}: cannot read the dataset's list ({err.strerror or err})",
                           "check dataset.list (relative to the site file's directory)") from err  # fmt: skip
    entries = [line.split("#", 1)[0].strip() for line in lines]
    if not any(entries):
        raise InstoreError(f"{path}: lists no file", "put one path or URL per line")
    return [e for e in entries if e]


def _listing(template: str, directory: str, timeout_s: float) -> list[str]:
    """The files in ``directory`` under the endpoint's data path, asked of its storage."""
    from instore.site.verify import cause
    from instore.storage import StorageError, storage_for

    url = template.partition("{file}")[0] + directory
    try:
        return storage_for(url).listdir(url, timeout_s)
    except StorageError as err:
        if err.reason == "no such directory":
            raise InstoreError(f"{url}: no such directory", "check dataset.directory") from err
        raise InstoreError(cause(url, f"{url}: {err.reason}", timeout_s)) from err


def _list_directory(site: SiteConfig, directory: str) -> list[str]:
    """The directory's ``*.root`` files, listed through the site's xrootd endpoint, else a
    posix or fuse endpoint mounted here."""
    directory = posixpath.normpath(directory.strip("/") or ".")
    sub = "" if directory == "." else directory  # the data path itself
    found: list[str] | None = None
    for proto in ("xrootd", "stage-in", "posix", "fuse"):
        template = site.endpoints.get(proto, "")
        if not template:
            continue
        protocol = protocol_of(template)
        if protocol == XROOTD:
            found = _listing(template, sub, OPEN_TIMEOUT_S)
            break
        if protocol == FILE and Path(local_path(template.partition("{file}")[0] + sub)).is_dir():
            found = _listing(template, sub, OPEN_TIMEOUT_S)
            break
    if found is None:
        raise InstoreError(
            f"site {site.name}: dataset.directory {directory} cannot be listed (no xrootd "
            "endpoint, and no posix or fuse endpoint that shows it here)",
            "give the files as dataset.files or dataset.list instead",
        )
    names = sorted(posixpath.normpath(f"{directory}/{n}") for n in found if n.endswith(".root"))
    if not names:
        raise InstoreError(f"site {site.name}: dataset.directory {directory} holds no .root file",
                           "check dataset.directory")  # fmt: skip
    return names


def resolve(site: SiteConfig) -> list[str]:
    """The dataset's file names under the site's data path, in the order given (a directory's:
    sorted)."""
    spec = site.dataset
    if spec is None:
        raise InstoreError(f"site {site.name} names no dataset", "add dataset: to its site file")
    if spec.directory is not None:
        return _list_directory(site, spec.directory)
    entries = list(spec.files) if spec.files else _listed(spec.list)  # type: ignore[arg-type]
    return list(dict.fromkeys(name_of(site, e) for e in entries))


# --- what each file holds ------------------------------------------------------------------


def describe_file(name: str, url: str, size: int, tree: str | None,
                  timeout_s: float = OPEN_TIMEOUT_S) -> DatasetFile:  # fmt: skip
    """Open ``url`` as the payload opens it (the counting source, the jobs' credentials) and
    say what it holds; one line on a file that is not ROOT or holds no TTree or RNTuple."""
    from uproot.source.coalesce import CoalesceConfig

    from instore.inspect.disorder import clusters_of
    from instore.payload import objects
    from instore.payload.maps import basket_map, is_rntuple
    from instore.payload.source import source_class
    from instore.site.verify import ROOT_MAGIC, first_bytes

    try:
        head = first_bytes(url, timeout_s)
    except InstoreError:
        raise
    except Exception as err:  # a file shorter than the magic, a read refused
        raise InstoreError(f"{url}: cannot read its first bytes ({str(err).splitlines()[0]})",
                           "check the file and the endpoint") from err  # fmt: skip
    if head != ROOT_MAGIC:
        raise InstoreError(f"{url}: not a ROOT file (it starts with {head!r})",
                           "name only ROOT files in the dataset")  # fmt: skip
    file = objects.open_file(url, handler=source_class(CoalesceConfig(), timeout_s))
    with file:
        obj = objects.choose_from(file, url, tree, objects.classnames(file, url))
        data = objects.get(file, url, obj)
        baskets = basket_map(data)
        if is_rntuple(data):
            layout, ratio = RNTUPLE_LAYOUT, None
            branches = tuple(data.keys(recursive=False))
        else:
            layout = classify(baskets, [int(e) for e in data.common_entry_offsets()])
            zipped = int(data.member("fZipBytes"))
            ratio = round(int(data.member("fTotBytes")) / zipped, 3) if zipped else None
            branches = tuple(b.name for b in data.branches)
        compression = file.file.compression
        return DatasetFile(
            name=name, url=url, size=size, format="RNTuple" if is_rntuple(data) else "TTree",
            object=obj.path, entries=int(data.num_entries),
            compression=str(compression) if compression else "uncompressed",
            compression_ratio=ratio, layout=layout, clusters=clusters_of(data),
            baskets=int((~baskets.get("shared", pd.Series(False, index=baskets.index))).sum()),
            branches=branches,
        )  # fmt: skip


def _sizes(
    template: str, names: Sequence[str], timeout_s: float
) -> tuple[dict[str, int], str | None]:
    """Each name's size behind the endpoint, up to the first problem (one line) if any."""
    from instore import credentials
    from instore.site.verify import cause
    from instore.storage import StorageError, storage_for

    sizes: dict[str, int] = {}
    for name in names:
        url = template.format(file=name)
        try:
            size = storage_for(url).stat(url)
        except StorageError as err:
            return sizes, cause(url, str(credentials.diagnosed(err)), timeout_s)
        except InstoreError as err:
            return sizes, cause(url, str(err), timeout_s)
        except Exception as err:  # urllib3/ssl errors: refused, TLS, time-out
            return sizes, cause(url, f"{type(err).__name__}: {str(err).splitlines()[0]}", timeout_s)
        if size is None:
            return sizes, f"{url}: no such file there -- check the dataset's names and endpoints"
        sizes[name] = size
    return sizes, None


def survey(live: RealLive) -> tuple[Dataset | None, list[str]]:
    """The site's dataset, described, or one line per problem: the credential and the
    endpoints (the preflight), the names, each file behind every endpoint (one line per
    endpoint that lacks one or holds another size), each file opened and read through the
    first endpoint (one line per file that is not ROOT or lacks the object)."""
    site = live.config
    problems = live.preflight()
    if problems:
        return None, problems
    try:
        names = resolve(site)
    except InstoreError as err:
        return None, [str(err)]
    order = sorted(site.endpoints, key=lambda p: DESCRIBE_ORDER.index(p))
    templates = {p: site.endpoints[p] for p in order}
    timeout = max(site.preflight_timeout_s, 1.0)
    with ThreadPoolExecutor(max_workers=len(templates)) as pool:
        found = dict(zip(templates, pool.map(lambda t: _sizes(t, names, timeout),
                                             templates.values()), strict=True))  # fmt: skip
    first = order[0]
    sizes, problem = found[first]
    problems = [f"{p} {templates[p]}: {why}" for p, (_, why) in found.items() if why]
    for proto, (other, _) in found.items():
        differ = [n for n in other if n in sizes and other[n] != sizes[n]]
        if differ:
            problems.append(f"{proto} {templates[proto]}: {templates[proto].format(file=differ[0])} "
                            f"holds {other[differ[0]]} bytes, {first} {sizes[differ[0]]}: not "
                            "the same file behind every endpoint")  # fmt: skip
    if problem:
        return None, problems
    tree = site.dataset.tree if site.dataset else None

    def one(name: str) -> DatasetFile | str:
        try:
            return describe_file(name, templates[first].format(file=name), sizes[name], tree)
        except InstoreError as err:
            return str(err)

    with ThreadPoolExecutor(max_workers=DESCRIBE_THREADS) as pool:
        described = list(pool.map(one, names))
    problems += [d for d in described if isinstance(d, str)]
    files = tuple(d for d in described if isinstance(d, DatasetFile))
    objects = dict.fromkeys(f.object for f in files)
    if len(objects) > 1 and tree is None:
        shown = ", ".join(f"{o} in {next(f.name for f in files if f.object == o)}" for o in objects)
        problems.append(f"the dataset's files hold different objects ({shown}) -- set "
                        "dataset.tree to the one to read")  # fmt: skip
    if problems:
        return None, problems
    spec = site.dataset.as_dict() if site.dataset else {}
    name = tree or next(iter(objects))
    return Dataset(site.name, spec, dict(site.endpoints), name, files), []


# --- kept between commands -----------------------------------------------------------------


def path_of(results: Path, site: str) -> Path:
    return Path(results) / site / DATASET_FILE


def save(dataset: Dataset, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dataset.as_dict(), indent=1) + "\n")
    tmp.replace(path)


def load_current(site: SiteConfig, results: Path) -> Dataset | None:
    """The description kept in ``results``, if it was made for the site's dataset and
    endpoints as the site file now gives them (None: there is none, or it is stale)."""
    try:
        dataset = Dataset.from_dict(json.loads(path_of(results, site.name).read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    spec = site.dataset.as_dict() if site.dataset else None
    return dataset if (dataset.spec, dataset.endpoints) == (spec, site.endpoints) else None


def require(site: SiteConfig, results: Path) -> Dataset:
    """The site's dataset for a sweep: the description kept in ``results`` if current, else
    surveyed now (and kept); a problem stops the sweep before anything starts."""
    from instore.site.real import RealLive

    current = load_current(site, results)
    if current is not None:
        return current
    dataset, problems = survey(RealLive(site, [], results))
    if dataset is None:
        raise InstoreError(
            f"site {site.name}: its dataset failed preflight: " + "; ".join(problems),
            f"act on each cause, then check with `instore site preflight {site.name}`",
        )
    save(dataset, path_of(results, site.name))
    return dataset
