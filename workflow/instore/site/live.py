"""What the sweep holds while a site is open: URLs per protocol, cache drops, job environment
and the conditions recorded with every run."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from instore.errors import InstoreError
from instore.site.config import REPO_ROOT, SiteConfig

RESULTS_DIR = REPO_ROOT / "results"


def calibration_path(site: str) -> Path:
    return RESULTS_DIR / site / "calibration.json"


def load_calibration(site: str) -> dict[str, Any] | None:
    """The stored calibration of a site, or None if it was never calibrated."""
    try:
        return json.loads(calibration_path(site).read_text())
    except (OSError, ValueError):
        return None


class LiveSite(ABC):
    """An open site: emulated (running now) or real (preflight passed)."""

    def __init__(self, config: SiteConfig) -> None:
        self.config = config

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

    @abstractmethod
    def drop_caches(self) -> None: ...

    @abstractmethod
    def set_block_readahead(self, kb: int | None) -> None:
        """Set the storage disk's block readahead for the next point (None: the site's own)."""

    def disk_bytes_read(self) -> int | None:
        """Bytes the site's disk has read so far, where they can be counted (None: they
        cannot, e.g. a real site's disks). A point's difference shows what block readahead
        reads beyond the client's requests."""
        return None

    @abstractmethod
    def job_env(self) -> dict[str, str]: ...

    def heal(self) -> list[str]:
        """Put the site back in its declared state between points; say what was repaired.
        A real site's servers are its admins' to restart: nothing to do here."""
        return []

    @abstractmethod
    def _emulation(self) -> dict[str, Any]: ...

    def conditions(self) -> dict[str, Any]:
        """JSON-able description of what a result was measured on."""
        cfg = self.config
        return {
            "site": cfg.name,
            "kind": cfg.kind,
            "profile": cfg.profile,
            "description": cfg.description,
            "workers": {"nodes": cfg.nodes, "cores": cfg.cores},
            "protocols": self.protocols,
            "emulation": self._emulation(),
            "calibration": load_calibration(cfg.name),
        }
