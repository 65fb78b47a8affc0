"""Real sites: nothing to start. Check the credential the site needs is there and valid, and
every endpoint answers, before any measurement; say, one line per endpoint, which does not."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from instore import credentials
from instore.errors import InstoreError
from instore.site.config import SiteConfig
from instore.site.endpoints import check_files
from instore.site.live import DEFAULT_RESULTS, FIO_MAX_MB, FioTarget, LiveSite


class PreflightError(InstoreError):
    """Some endpoints of a real site do not answer; ``lines`` has one line per endpoint."""

    def __init__(self, site: SiteConfig, lines: list[str]) -> None:
        self.lines = lines
        super().__init__(
            f"{site.path}: {len(lines)} endpoint(s) failed preflight: " + "; ".join(lines),
            "fix or remove those endpoints in the site file, then run `instore site preflight "
            f"{site.name}`",
        )


def preflight(site: SiteConfig) -> list[str]:
    """One line per failing endpoint of a real site (empty = all answer)."""
    return RealLive(site, []).preflight()


class RealLive(LiveSite):
    """A real site: its endpoints, given (``open_real`` checks first that they answer)."""

    def __init__(
        self, config: SiteConfig, files: list[str], results: Path = DEFAULT_RESULTS
    ) -> None:
        super().__init__(config, results)
        self.files = files

    def _url(self, protocol: str, file: str) -> str:
        return self.config.endpoints[protocol].format(file=file)

    def _endpoints(self) -> dict[str, str]:
        return dict(self.config.endpoints)

    def preflight(self) -> list[str]:
        """Every endpoint answers, and the credential the site needs (``auth``) is here."""
        lines = super().preflight()
        problem = credentials.problem(self.config.auth)
        if problem is not None:
            lines.insert(0, f"credentials: {problem}")
        return lines

    def check_file(self, file: str, skip: Collection[str] = ()) -> list[str]:
        """One line per network endpoint (but those in ``skip``) through which ``file`` cannot
        be opened with the jobs' credentials (auth refused / no such file / unreachable)."""
        endpoints = {p: t for p, t in self._endpoints().items() if p not in skip}
        return check_files(endpoints, file, self.config.preflight_timeout_s)

    def drop_caches(self) -> None:
        """We cannot drop a remote server's cache; drop this node's page cache for the files
        on POSIX-like endpoints, which is the part a rerun would otherwise hit."""
        for proto in ("posix", "fuse"):
            if proto not in self.config.endpoints:
                continue
            for name in self.files:
                _fadvise_dontneed(Path(self._url(proto, name)))

    def set_block_readahead(self, kb: int | None) -> None:
        if kb is None:  # the site's own setting: nothing to put back
            return
        raise InstoreError(
            f"site {self.config.name} is real: its block devices are not ours to tune",
            "leave block readahead out of the sweep for real sites",
        )

    def calibration_file(self) -> tuple[str, int]:
        """The site file's calibration.file; its size is known where a POSIX endpoint shows it."""
        cfg = self.config
        if not cfg.calibration.file:
            raise InstoreError(f"{cfg.path}: field calibration.file is missing",
                               "name a file that exists behind every endpoint")  # fmt: skip
        posix = cfg.endpoints.get("posix")
        size = Path(posix.format(file=cfg.calibration.file)).stat().st_size if posix else 0
        return cfg.calibration.file, size

    def fio_target(self) -> FioTarget | None:
        posix_dir = self.config.calibration.posix_dir
        return FioTarget(Path(posix_dir), FIO_MAX_MB) if posix_dir else None

    def job_env(self) -> dict[str, str]:
        return {}

    def _emulation(self) -> dict[str, Any]:
        return {"endpoints": dict(self.config.endpoints)}


def _fadvise_dontneed(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def open_real(site: SiteConfig, files: list[str], results: Path = DEFAULT_RESULTS) -> RealLive:
    """The real site, once its credential is valid and every endpoint answers."""
    credentials.require(site.auth, site.name)
    live = RealLive(site, files, results)
    failures = live.preflight()
    if failures:
        raise PreflightError(site, failures)
    return live
