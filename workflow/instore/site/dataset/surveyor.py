"""Surveying a real site's own dataset: its names resolved (a list, a directory listed through
an endpoint), each file found behind every endpoint (its size, with the jobs' credentials),
opened through one of them as the payload opens it, and described (``model.DatasetFile``).
This is the only part of the dataset that talks to the site's storage."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from instore import access
from instore.errors import InstoreError
from instore.site.config import SiteConfig
from instore.site.dataset.model import RNTUPLE_LAYOUT, Dataset, DatasetFile
from instore.urls import FILE, XROOTD, default_port, local_path, protocol_of


class Surveyed(Protocol):
    """What a survey needs of the open site (``instore.site.real.RealLive`` is one): its
    config and its preflight."""

    config: SiteConfig

    def preflight(self) -> list[str]: ...


# The endpoint files are opened and described through, the first the site has.
DESCRIBE_ORDER = (access.XROOTD, access.HTTP, access.POSIX, access.FUSE, access.STAGE_IN,
                  access.XCACHE)  # fmt: skip
OPEN_TIMEOUT_S = 60.0
DESCRIBE_THREADS = 4


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
    for proto in (access.XROOTD, access.STAGE_IN, *access.MOUNTED):
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
    from instore.site.verify import ROOT_MAGIC, first_bytes
    from instore.storage.source import source_class

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
    from instore.site.verify import cause
    from instore.storage import StorageError, diagnosis, storage_for

    sizes: dict[str, int] = {}
    for name in names:
        url = template.format(file=name)
        try:
            size = storage_for(url).stat(url)
        except StorageError as err:
            return sizes, cause(url, str(diagnosis.diagnosed(err)), timeout_s)
        except InstoreError as err:
            return sizes, cause(url, str(err), timeout_s)
        except Exception as err:  # urllib3/ssl errors: refused, TLS, time-out
            return sizes, cause(url, f"{type(err).__name__}: {str(err).splitlines()[0]}", timeout_s)
        if size is None:
            return sizes, f"{url}: no such file there -- check the dataset's names and endpoints"
        sizes[name] = size
    return sizes, None


def survey(live: Surveyed) -> tuple[Dataset | None, list[str]]:
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
