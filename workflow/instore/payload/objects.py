"""Which object of a file a job reads: a TTree or an RNTuple, named or the largest, in any
TDirectory. Both engines read what this chooses, so they never disagree on the object.

The choice uses uproot's key listing (fast, engine-independent) through the counting source, so
remote endpoints are reached exactly as the uproot engine reaches them. It runs before the
measurement starts: knowing what to read is the job's configuration, not its I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from instore.errors import InstoreError
from instore.payload.maps import page_map
from instore.vocabulary import RNTUPLE, TTREE

_TTREE_CLASSES = {"TTree", "TNtuple", "TNtupleD"}
_RNTUPLE_CLASSES = {"ROOT::RNTuple", "ROOT::Experimental::RNTuple"}


@dataclass(frozen=True)
class DataObject:
    """A readable object: its path in the file (``analysis/nominal``) and its format."""

    path: str
    format: str

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def format_of(classname: str) -> str | None:
    if classname in _TTREE_CLASSES:
        return TTREE
    if classname in _RNTUPLE_CLASSES:
        return RNTUPLE
    return None


_SHOWN = {TTREE: "a TTree", RNTUPLE: "an RNTuple"}


def check_format(url: str, obj: DataObject, classname: str) -> None:
    """Raise the one line for an object of another kind than the job was told (``--format``)."""
    found = format_of(classname)
    if found == obj.format:
        return
    raise InstoreError(
        f"{url}: the object at {obj.path!r} is a {classname}, not {_SHOWN[obj.format]}",
        f"give --format {found}, or leave --format out"
        if found is not None
        else "give the path of a TTree or an RNTuple (--tree), or leave it out",
    )


def root_class_name(found: Any) -> str:
    """ROOT's class of an object ``TFile::Get`` returned: a TObject's, or the C++ type's (an
    RNTuple's anchor is no TObject)."""
    return str(found.ClassName()) if hasattr(found, "ClassName") else type(found).__cpp_name__


def open_file(url: str, **options: Any) -> Any:
    """``uproot.open`` with every failure turned into one line with a fix."""
    import uproot

    try:
        return uproot.open(url, **options)
    except InstoreError:  # our own sources say why in one line already (e.g. a credential)
        raise
    except FileNotFoundError as err:
        raise InstoreError(f"{url}: no such file", "check the path or URL") from err
    except OSError as err:
        raise InstoreError(
            f"{url}: cannot open ({err})".splitlines()[0],
            "check the endpoint is up and the path exists",
        ) from err
    except Exception as err:  # uproot raises plain ValueError/KeyError on bad headers
        broken = connection_failure(err)
        if broken is not None:  # an HTTP client's ProtocolError around a reset: not the file
            raise InstoreError(
                f"{url}: the connection failed ({type(broken).__name__}: {broken})".splitlines()[0],
                "check the endpoint's host, port and protocol: a server of that protocol must "
                "listen there",
            ) from err
        raise InstoreError(
            f"{url}: not a readable ROOT file ({type(err).__name__}: {err})".splitlines()[0],
            "regenerate or re-copy the file; it may be truncated or corrupt",
        ) from err


def connection_failure(err: BaseException, depth: int = 4) -> BaseException | None:
    """The connection error inside ``err`` (its cause, context or arguments), if any: HTTP
    clients wrap a reset or a reply in another protocol in errors of their own."""
    import http.client

    if isinstance(err, ConnectionError | http.client.HTTPException):
        return err
    if depth == 0:
        return None
    inner = [err.__cause__, err.__context__, *(a for a in err.args if isinstance(a, BaseException))]
    for e in inner:
        found = connection_failure(e, depth - 1) if e is not None else None
        if found is not None:
            return found
    return None


def classnames(file: Any, url: str) -> dict[str, str]:
    """Every key's path and class, TDirectories searched."""
    try:
        return dict(file.classnames(recursive=True, cycle=False))
    except Exception as err:
        raise InstoreError(
            f"{url}: cannot list its objects ({err})".splitlines()[0],
            "the file may be truncated or corrupt; regenerate or re-copy it",
        ) from err


def _size(file: Any, obj: DataObject) -> int:
    """Compressed bytes of the object's data, to find the largest."""
    if obj.format == TTREE:
        return int(file[obj.path].member("fZipBytes"))
    pages = page_map(file[obj.path])
    return int(pages.loc[~pages["shared"], "compressed_bytes"].sum())


def _holds(names: Mapping[str, str]) -> str:
    shown = [f"{cls} {path}" for path, cls in names.items()][:12]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "") if shown else "nothing"


def _match(objects: list[DataObject], name: str) -> list[DataObject]:
    """The object at path ``name``, or those whose own name is ``name`` (in any directory)."""
    exact = [o for o in objects if o.path == name.strip("/")]
    return exact or [o for o in objects if o.name == name]


def choose_from(file: Any, url: str, name: str | None, names: Mapping[str, str]) -> DataObject:
    """The named object, or the largest TTree or RNTuple of ``names`` (path -> class)."""
    objects = [DataObject(p, f) for p, c in names.items() if (f := format_of(c)) is not None]
    if not objects:
        raise InstoreError(
            f"{url}: holds no TTree or RNTuple; it holds: {_holds(names)}",
            "point at a file with a TTree or an RNTuple",
        )
    if name is None:
        if len(objects) == 1:
            return objects[0]
        return max(objects, key=lambda o: _size(file, o))
    found = _match(objects, name)
    if len(found) != 1:
        problem = "no TTree or RNTuple named" if not found else "several objects named"
        raise InstoreError(
            f"{url}: {problem} {name!r}",
            f"choose one of (--tree PATH): {', '.join(o.path for o in objects)}",
        )
    return found[0]


def choose(url: str, name: str | None, timeout: float = 60.0, via_root: bool = False) -> DataObject:
    """Open ``url`` with the counting source and choose the object a job reads; ``via_root``
    (the root engine's jobs) reaches root:// through ROOT, never loading a second XRootD client."""
    from uproot.source.coalesce import CoalesceConfig

    from instore.storage.source import source_class

    file = open_file(url, handler=source_class(CoalesceConfig(), timeout, via_root))
    with file:
        return choose_from(file, url, name, classnames(file, url))


def get(file: Any, url: str, obj: DataObject) -> Any:
    """The chosen object from an open uproot file, a corrupt one said in one line."""
    try:
        return file[obj.path]
    except Exception as err:
        raise InstoreError(
            f"{url}: cannot read the {obj.format} {obj.path!r} ({type(err).__name__}: {err})".splitlines()[
                0
            ],
            "the file may be truncated or corrupt; regenerate or re-copy it",
        ) from err


def _cluster_bounds(ntuple: Any) -> list[tuple[int, int]]:
    return [
        (int(c.num_first_entry), int(c.num_first_entry + c.num_entries))
        for c in ntuple.cluster_summaries
    ]


def cluster_bounds(ntuple: Any) -> list[int]:
    """Entry boundaries of the RNTuple's clusters: [0, ..., num_entries]."""
    bounds = _cluster_bounds(ntuple)
    return [0] + [stop for _, stop in bounds] if bounds else [0, int(ntuple.num_entries)]
