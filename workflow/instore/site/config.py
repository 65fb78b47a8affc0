"""Site files: load ``config/sites/<name>.yaml``, validate it, and hand back typed settings.

Validation happens before anything is started, so a typo in a site file costs a one-line
error instead of a half-built emulated site.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from instore import access
from instore.configfile import CONFIG_DIR, REPO_ROOT, read_yaml, validate
from instore.errors import InstoreError
from instore.site.loadguard import LoadGuard, load_guard
from instore.vocabulary import CAPABILITIES, PROTOCOLS

# REPO_ROOT is re-exported: results live under it (instore.site.live).
__all__ = [
    "CAPABILITIES",
    "PROTOCOLS",
    "REPO_ROOT",
    "SITES_DIR",
    "Cache",
    "Calibration",
    "DatasetSpec",
    "Disk",
    "Network",
    "SiteConfig",
    "Tuning",
    "known_sites",
    "load_site",
    "site_path",
]

SITES_DIR = CONFIG_DIR / "sites"
CACHE_KIND = "xcache"  # a cache's kind: the one the schema allows (site, cache.kind)

# What a site lets the study change or use beyond reading its files: the study file's sections
# say which they need (`needs:`), and a point's knobs which it asks for (instore.sweep.plan).
# An emulated site can all it is built with; a real site what its file declares.
LINK, BLOCK_READAHEAD, IO_SCHEDULER, FILESYSTEM, XCACHE, COLD_CACHE = CAPABILITIES


@dataclass(frozen=True)
class Network:
    """Link between worker and storage: a tbf rate and an optional target round-trip time."""

    bandwidth_mbit: float
    rtt_ms: float | None = None


@dataclass(frozen=True)
class Disk:
    """The emulated disk: loop-device size, file system, block readahead and blkio limits."""

    size_mb: int = 1024
    filesystem: str = "ext4"
    readahead_kb: int = 128
    io_scheduler: str = "none"  # the loop device's default here; mq-deadline, bfq, kyber
    read_iops: int | None = None
    read_mbps: float | None = None


@dataclass(frozen=True)
class Cache:
    """An XCache in front of an emulated site's storage, on the worker side of the link."""

    kind: str = CACHE_KIND
    disk_mb: int = 512
    blocksize_kb: int = 1024
    prefetch: int = 0
    ram_mb: int = 1024  # XRootD 5.5 refuses a pfc.ram under 1 GiB


@dataclass(frozen=True)
class Calibration:
    """What ``instore site calibrate`` reads: a whole file, and a directory fio may write to."""

    file: str | None = None
    posix_dir: str | None = None
    file_mb: int = 64
    fio_seconds: float = 5.0


@dataclass(frozen=True)
class Tuning:
    """What a real site's file lets the study change (site file ``tuning:``): a block-device
    readahead file the sweep may write (``/sys/block/DEV/queue/read_ahead_kb``, on the node that
    runs ``instore sweep``), and a command that empties the site's XCache."""

    block_readahead: Path | None = None
    xcache_purge: tuple[str, ...] = ()


@dataclass(frozen=True)
class DatasetSpec:
    """A real site's own dataset, read instead of the generated files: exactly one of
    ``files`` (paths under the site's data path, or URLs of its endpoints), ``directory`` (a
    path under the data path, listed through the storage) or ``list`` (a local file of such
    paths or URLs); ``tree`` names the object to read (None: the one the files hold)."""

    files: tuple[str, ...] = ()
    directory: str | None = None
    list: Path | None = None
    tree: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The spec as the site file gave it (the list's path resolved): what a dataset
        description was made for."""
        spec = {"files": list(self.files), "directory": self.directory,
                "list": str(self.list) if self.list else None, "tree": self.tree}  # fmt: skip
        return {k: v for k, v in spec.items() if v}


@dataclass(frozen=True)
class SiteConfig:
    """One validated site file."""

    name: str
    kind: str
    path: Path
    profile: str
    description: str
    nodes: int
    cores: int
    protocols: tuple[str, ...]
    stage_in_source: str
    network: Network | None = None
    disk: Disk | None = None
    endpoints: dict[str, str] = field(default_factory=dict)
    calibration: Calibration = field(default_factory=Calibration)
    cache: Cache | None = None  # emulated sites: an XCache, read with protocol xcache
    preflight_timeout_s: float = 5.0
    auth: str = "none"  # the credential the endpoints need: x509, token or none
    upload: bool = False  # real sites: the pipeline puts the files there (instore site upload)
    dataset: DatasetSpec | None = None  # real sites: their own files, read instead of ours
    tuning: Tuning = field(default_factory=Tuning)  # real sites: what the study may change
    load: LoadGuard = field(default_factory=LoadGuard)  # how hard the study may load it

    @property
    def emulated(self) -> bool:
        return self.kind == "emulated"

    def lacks(self, capability: str) -> str | None:
        """Why this site cannot do what the capability says (None: it can): the reason the
        site has, said as the page and the sweep's log name it."""
        real = f"site {self.name} is real: "
        if capability == LINK:
            return None if self.emulated else real + "its link's RTT and bandwidth are its own"
        if capability == BLOCK_READAHEAD:
            if self.emulated or self.tuning.block_readahead is not None:
                return None
            return real + "its file names no tuning.block_readahead the worker may set"
        if capability == IO_SCHEDULER:
            return (
                None if self.emulated else real + "its disks' I/O scheduler is not ours to switch"
            )
        if capability == FILESYSTEM:
            return None if self.emulated else real + "its disks' file system is not ours to choose"
        if capability == XCACHE:
            if access.XCACHE in self.protocols:
                return None
            where = "cache:" if self.emulated else "xcache endpoint"
            return f"site {self.name} has no XCache (its file names no {where})"
        if capability == COLD_CACHE:
            if (lack := self.lacks(XCACHE)) is not None:
                return lack
            if self.emulated or self.tuning.xcache_purge:
                return None
            return real + "its file names no tuning.xcache_purge command to empty its XCache"
        raise ValueError(f"unknown capability {capability!r}")  # the schema lists them

    @property
    def capabilities(self) -> tuple[str, ...]:
        """What the site can, of CAPABILITIES."""
        return tuple(c for c in CAPABILITIES if self.lacks(c) is None)

    def fallback_protocol(self) -> str | None:
        """The most direct protocol the site offers (None: none it could read with): what a
        section runs over where its grid names none the site offers."""
        return next((p for p in FALLBACK_ORDER if p in self.protocols), None)

    def rules_out(self, protocol: str, needs: tuple[str, ...] = ()) -> str | None:
        """Why this site cannot run a point over ``protocol`` that ``needs`` these capabilities
        (None: it can)."""
        if protocol not in self.protocols:
            return f"site offers no {protocol}"
        return next((lack for need in needs if (lack := self.lacks(need)) is not None), None)


# The order in which a section falls back to a protocol the site offers: the most direct
# first (a file system, then the storage protocols read in place, then a copy); never through
# a cache, which is a section's own subject.
FALLBACK_ORDER = (access.POSIX, access.FUSE, access.XROOTD, access.HTTP, access.STAGE_IN)


def _names_a_file(text: str) -> bool:
    """A bare name means ``config/sites/<name>.yaml``; anything with a slash or suffix is a path."""
    return "/" in text or text.endswith((".yaml", ".yml"))


def site_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    return Path(text) if _names_a_file(text) else SITES_DIR / f"{text}.yaml"


def site_name(name_or_path: str) -> str:
    """The site's name, also when given as its file's path (as `site up` takes it): a path
    used as a name would find nothing of the site and say nothing."""
    return load_site(name_or_path).name if _names_a_file(name_or_path) else name_or_path


def known_sites() -> list[str]:
    """The shipped site names, for the error that says a site does not exist."""
    return sorted(p.stem for p in SITES_DIR.glob("*.yaml"))


def _read(path: Path) -> Any:
    known = ", ".join(known_sites())
    return read_yaml(path, "site file", f"pass a path to a site YAML or one of: {known}")


def _build(data: dict[str, Any], path: Path) -> SiteConfig:
    net = data.get("network")
    disk = data.get("disk")
    limits = (disk or {}).get("limits") or {}
    endpoints = dict(data.get("endpoints", {}))
    protocols = tuple(data.get("protocols") or [p for p in PROTOCOLS if p in endpoints])
    cache = data.get("cache")
    if cache and access.XCACHE not in protocols:  # a declared cache is read through with xcache
        protocols += (access.XCACHE,)
    calibration = data.get("calibration", {})
    dataset = data.get("dataset")
    return SiteConfig(
        name=data["name"],
        kind=data["kind"],
        path=path,
        profile=data.get("profile", data["name"]),
        description=data.get("description", ""),
        nodes=data["workers"]["nodes"],
        cores=data["workers"]["cores"],
        protocols=protocols,
        stage_in_source=data.get("stage_in", {}).get("source", access.STAGE_IN_SOURCE),
        network=Network(**net) if net else None,
        disk=Disk(**{k: v for k, v in disk.items() if k != "limits"}, **limits) if disk else None,
        endpoints=endpoints,
        calibration=Calibration(**calibration),
        cache=Cache(**cache) if cache else None,
        preflight_timeout_s=data.get("timeouts", {}).get("preflight_s", 5.0),
        auth=data.get("auth", "none"),
        upload=bool(data.get("upload", False)),
        dataset=_dataset(dataset, path) if dataset else None,
        tuning=_tuning(data.get("tuning") or {}),
        load=load_guard(data.get("load"), data["kind"] == "emulated"),
    )


def _tuning(data: dict[str, Any]) -> Tuning:
    """The site file's ``tuning:`` (the schema holds the readahead file's path absolute)."""
    readahead = data.get("block_readahead")
    return Tuning(
        block_readahead=Path(readahead) if readahead else None,
        xcache_purge=tuple(data.get("xcache_purge", ())),
    )


def _dataset(data: dict[str, Any], path: Path) -> DatasetSpec:
    """A list file is found beside the site file unless its path is absolute."""
    listed = data.get("list")
    return DatasetSpec(
        files=tuple(data.get("files", ())),
        directory=data.get("directory"),
        list=(path.parent / listed).resolve() if listed else None,
        tree=data.get("tree"),
    )


def _check_consistency(cfg: SiteConfig) -> None:
    """Rules the schema cannot say: stage-in needs its source protocol, names match files."""
    if (
        access.STAGE_IN in cfg.protocols
        and cfg.emulated
        and cfg.stage_in_source not in cfg.protocols
    ):
        raise InstoreError(
            f"{cfg.path}: field stage_in.source: {cfg.stage_in_source} is not among protocols",
            f"add {cfg.stage_in_source} to protocols or change stage_in.source",
        )
    if access.XCACHE in cfg.protocols and cfg.emulated and cfg.cache is None:
        raise InstoreError(
            f"{cfg.path}: field protocols: xcache needs a cache",
            f"add cache: {{kind: {CACHE_KIND}}} or remove xcache from protocols",
        )
    if cfg.dataset is not None and cfg.upload:
        raise InstoreError(
            f"{cfg.path}: fields dataset and upload: a site that reads its own dataset gets "
            "none of the generated files",
            "remove upload: true, or remove dataset: to measure the generated files",
        )
    if cfg.path.parent.resolve() == SITES_DIR.resolve() and cfg.path.stem != cfg.name:
        raise InstoreError(
            f"{cfg.path}: field name: {cfg.name!r} differs from the file name",
            f"rename the file to {cfg.name}.yaml or set name: {cfg.path.stem}",
        )


def load_site(name_or_path: str | Path) -> SiteConfig:
    """Load and validate a site by name (``config/sites/<name>.yaml``) or by path."""
    path = site_path(name_or_path)
    data = _read(path)
    validate(data, "site", path)
    cfg = _build(data, path)
    _check_consistency(cfg)
    return cfg
