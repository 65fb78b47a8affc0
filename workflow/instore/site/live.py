"""What a caller holds while a site is open: URLs per protocol, cache drops, preflight, what
calibration measures, the job environment and the conditions recorded with every run.

Callers ask the live site; they never check whether it is emulated or real.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from instore.calibration import read_calibration
from instore.errors import InstoreError
from instore.site.config import SiteConfig
from instore.site.endpoints import check_all
from instore.site.usage import Counters, read_counters

# Where results go unless a caller says otherwise: `results/` of the current directory, as
# `instore sweep --results` (so `snakemake --directory` moves them too).
DEFAULT_RESULTS = Path("results")
# fio writes a file this large at most: enough to defeat the disk's own cache, quick to lay out.
FIO_MAX_MB = 256
FIO_QUEUE_DEPTH = 16  # random reads in flight at once: many jobs reading one disk


@dataclass(frozen=True)
class FioTarget:
    """Where fio may measure a site's disk: a writable directory on it, the size of the file
    to lay out there, and the blkio cgroup its reads join (None: no throttle of ours)."""

    directory: Path
    size_mb: int
    cgroup: Path | None = None
    fix: str = "check the directory is writable and has space"  # where a failure sends the user


class LiveSite(ABC):
    """An open site: emulated (running now) or real (its endpoints given)."""

    def __init__(self, config: SiteConfig, results: Path = DEFAULT_RESULTS) -> None:
        self.config = config
        self.results = Path(results)

    @property
    def protocols(self) -> list[str]:
        return list(self.config.protocols)

    def url(self, protocol: str, file: str) -> str:
        """Where a job reads ``file`` with ``protocol``; stage-in gives the copy source."""
        if protocol not in self.config.protocols:
            raise InstoreError(
                f"site {self.config.name} does not offer protocol {protocol!r}",
                f"use one of {', '.join(self.config.protocols)}",
            )
        return self._url(protocol, file)

    @abstractmethod
    def _url(self, protocol: str, file: str) -> str: ...

    def _endpoints(self) -> dict[str, str]:
        """Protocol -> URL template (``{file}`` for the file) that preflight checks."""
        return {p: self.url(p, "{file}") for p in self.protocols}

    def preflight(self) -> list[str]:
        """One line per endpoint that does not answer within the site's preflight time-out
        (empty: all answer)."""
        return check_all(self._endpoints(), self.config.preflight_timeout_s)

    def check(self, files: Sequence[Path]) -> list[str]:
        """The whole preflight before measuring ``files``; one line per failure. An emulated
        site put the files on its own disk, so its endpoints answering is enough."""
        return self.preflight()

    @abstractmethod
    def drop_caches(self) -> None: ...

    @property
    def can_read_cold(self) -> bool:
        """Whether drop_caches() empties every cache between a reader and the disk, so that a
        read measures the storage (False: a server's cache is not ours to drop)."""
        return False

    @abstractmethod
    def set_block_readahead(self, kb: int | None) -> None:
        """Set the storage disk's block readahead for the next point (None: the site's own)."""

    def disk_bytes_read(self) -> int | None:
        """Bytes the site's disk has read so far, where they can be counted (None: they
        cannot, e.g. a real site's disks). A point's difference shows what block readahead
        reads beyond the client's requests."""
        return None

    def disk_reads(self) -> int | None:
        """Read requests the site's disk has completed so far, where they can be counted (None:
        a real site's disks). A point's difference against the disk's IOPS limit says whether
        the disk's request rate, not its bandwidth, bounded the point."""
        return None

    def set_io_scheduler(self, name: str | None) -> None:
        """Set the storage disk's I/O scheduler for the next point (None: the site's own);
        only an emulated disk's is ours to set (the plan skips such points elsewhere)."""
        if name is not None:
            raise InstoreError(f"site {self.config.name}: the I/O scheduler is only set on "
                               "emulated disks", "drop io_scheduler from its sections")  # fmt: skip

    def counters(self) -> Counters:
        """Cumulative usage counters now (``site.usage``): on a real site, the worker's CPU
        only; an emulated site adds its server's, its disk's and its link's."""
        return read_counters()

    def bandwidth_mbit(self) -> float | None:
        """The link's rate now, where it is ours to know (None: a real site's network)."""
        return None

    def link_bytes(self) -> int | None:
        """Bytes that crossed the link from storage to the workers so far, where they can be
        counted (None: a real site's network). A point's difference is what a cache fetched
        from the origin, or what direct reads moved."""
        return None

    def set_conditions(self, rtt_ms: float | None, bandwidth_mbit: float | None) -> dict[str, Any]:
        """Set the link's RTT and bandwidth for the next point (None: the site's own) and
        return what the link now has, measured: ``rtt_ms_measured``, ``bandwidth_mbit_applied``.
        A real site's network is not ours to change: its RTT is the calibration's probe (none
        where it was not calibrated), so its points say at what RTT they ran."""
        if rtt_ms is not None or bandwidth_mbit is not None:
            raise InstoreError(
                f"site {self.config.name}: RTT and bandwidth are only set on emulated links",
                "leave rtt_ms and bandwidth_mbit out of grids run on real sites",
            )
        probed = (read_calibration(self.results, self.config.name) or {}).get("rtt_ms")
        return {} if probed is None else {"rtt_ms_measured": float(probed)}

    def prepare_cache(self, cache_state: str | None, files: list[str]) -> None:
        """Empty (cold) or fill (warm, with ``files``) the site's own cache before a point."""
        if cache_state is not None:
            raise InstoreError(
                f"site {self.config.name}: a cache state is only set on an emulated XCache",
                "leave cache_state out of grids run on this site",
            )

    def cache_fio_target(self) -> FioTarget | None:
        """The site cache's disk, where calibration may measure it (None: no cache of ours)."""
        return None

    @abstractmethod
    def calibration_file(self) -> tuple[str, int]:
        """The file calibration reads whole (a name for ``url``) and its size in bytes
        (0: unknown here, so no throughput can be computed)."""

    def fio_target(self) -> FioTarget | None:
        """Where fio may measure the site's disk (None: nowhere we may write)."""
        return None

    @abstractmethod
    def job_env(self) -> dict[str, str]:
        """Environment a payload job needs on this site (e.g. the blkio cgroup to join)."""

    def heal(self) -> list[str]:
        """Put the site back in its declared state between points; say what was repaired.
        A real site's servers are its admins' to restart: nothing to do here."""
        return []

    @abstractmethod
    def _emulation(self) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]:
        """JSON-able description of the site as it is now (no calibration)."""
        cfg = self.config
        return {
            "site": cfg.name,
            "kind": cfg.kind,
            "profile": cfg.profile,
            "description": cfg.description,
            "workers": {"nodes": cfg.nodes, "cores": cfg.cores},
            "protocols": self.protocols,
            "emulation": self._emulation(),
        }

    def conditions(self) -> dict[str, Any]:
        """What a result was measured on: the description plus the site's calibration from
        the results directory this site was opened with."""
        return {**self.describe(), "calibration": read_calibration(self.results, self.config.name)}
