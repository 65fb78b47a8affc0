"""Real sites: nothing to start. Check the credential the site needs is there and valid, that
every endpoint answers, and that the test files behind each are there, equal to the local
copies and readable with the jobs' credentials, before any measurement; say, one line per
endpoint, which does not and why."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from instore import access, credentials, pagecache
from instore.errors import InstoreError
from instore.site import upload
from instore.site.config import SiteConfig
from instore.site.live import DEFAULT_RESULTS, FIO_MAX_MB, FioTarget, LiveSite
from instore.site.verify import VerifiedCopies, verify_endpoint
from instore.storage import StorageError, fetch, storage_for

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from instore.site.dataset.model import Dataset


class PreflightError(InstoreError):
    """Some endpoints of a real site fail; ``lines`` has one line per endpoint, with its cause."""

    def __init__(self, site: SiteConfig, lines: list[str]) -> None:
        self.lines = lines
        super().__init__(
            f"site {site.name}: {len(lines)} endpoint(s) failed preflight: " + "; ".join(lines),
            f"act on each endpoint's cause, then check with `instore site preflight {site.name}`",
        )


def preflight(site: SiteConfig) -> list[str]:
    """One line per failing endpoint of a real site (empty = all answer)."""
    return RealLive(site, []).preflight()


def site_dataset(site: SiteConfig, results: Path = DEFAULT_RESULTS) -> Dataset:
    """A real site's own dataset, for a sweep to plan with: the description kept in
    ``results`` if current, else surveyed now (the only network I/O before planning)."""
    from instore.site.dataset.store import require  # numpy and pandas: dataset sites only

    return require(RealLive(site, [], results), results)


class RealLive(LiveSite):
    """A real site: its endpoints, given (``open_real`` checks first that they answer)."""

    def __init__(
        self,
        config: SiteConfig,
        files: list[str],
        results: Path = DEFAULT_RESULTS,
        verified: VerifiedCopies | None = None,
        empties_stale_cache: bool = False,
    ) -> None:
        super().__init__(config, results)
        self.files = files
        self.verified = verified  # None: every check is a full one
        # a sweep's check (not a preflight, which changes nothing) runs tuning.xcache_purge
        # where the XCache serves an older copy than its origin
        self.empties_stale_cache = empties_stale_cache
        self.notes: list[str] = []  # what the checks did besides passing (one line each)
        self._readahead_before: str | None = None  # tuning.block_readahead's own value

    def _url(self, protocol: str, file: str) -> str:
        return self.config.endpoints[protocol].format(file=file)

    def _endpoints(self) -> dict[str, str]:
        return dict(self.config.endpoints)

    def preflight(self) -> list[str]:
        """The credential the site needs (``auth``) is here and valid, checked before any
        network call (a missing one is the only line), and every endpoint answers."""
        problem = credentials.problem(self.config.auth)
        if problem is not None:
            return [f"credentials: {problem}"]
        return super().preflight()

    def check(self, files: Sequence[Path]) -> list[str]:
        """The whole preflight: credential, endpoints, then ``files`` behind those that answer."""
        failures = self.preflight()
        if failures and failures[0].startswith("credentials:"):
            return failures  # no network call with a credential known to be missing
        down = {p for p in self.config.endpoints if any(f.startswith(f"{p} ") for f in failures)}
        return failures + self.check_files(files, skip=down)

    def check_files(self, files: Sequence[Path], skip: Collection[str] = ()) -> list[str]:
        """One line per endpoint (but those in ``skip``) that does not serve ``files`` as they
        are here (missing, different size or adler32), or through which the first cannot be
        opened and read with the jobs' credentials. Local paths that do not exist are only
        looked for there; an XCache's copies (its origin's) by size. Endpoints are checked in
        parallel; an endpoint whose copies had to be read back to checksum them adds a line to
        ``notes``."""
        items = sorted((p, t) for p, t in self._endpoints().items() if p not in skip)
        timeout = self.config.preflight_timeout_s
        notes: dict[tuple[str, str], list[str]] = {it: [] for it in items}

        def one(it: tuple[str, str]) -> str | None:
            return verify_endpoint(it[1], files, timeout, self.verified, notes=notes[it],
                                   checksum=it[0] != access.XCACHE)  # fmt: skip

        if items and files:  # minutes for a full profile's first sweep: say what it waits on
            log.info("site %s: checking %d test files behind %d endpoint(s): size and adler32 "
                     "of each copy (a copy verified before and unchanged, or an XCache's: its "
                     "size only)",
                     self.config.name, len(files), len(items))  # fmt: skip

        with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
            causes = list(pool.map(one, items))
        stale = [i for i, ((p, _), why) in enumerate(zip(items, causes, strict=True))
                 if p == access.XCACHE and why and upload.STALE_CACHE in why]  # fmt: skip
        if (
            stale
            and self.empties_stale_cache
            and self.config.tuning.xcache_purge
            and not any(why for i, why in enumerate(causes) if i not in stale)
        ):  # the origin serves the files as they are here; the cache an older copy: empty it
            log.info("site %s: its XCache held an older copy than its origin (%s); emptying it "
                     "with tuning.xcache_purge, then checking again", self.config.name,
                     causes[stale[0]].split(" -- ")[0])  # fmt: skip
            purge_xcache(self.config)
            for i in stale:
                causes[i] = one(items[i])
        if self.verified is not None:
            self.verified.save()
        self.notes += [f"{p} {t}: {line}" for (p, t), lines in notes.items() for line in lines]
        return [f"{p} {t}: {why}" for (p, t), why in zip(items, causes, strict=True) if why]

    def drop_caches(self) -> None:
        """We cannot drop a remote server's cache; drop this node's page cache for the files
        on POSIX-like endpoints, which is the part a rerun would otherwise hit."""
        for proto in access.MOUNTED:
            if proto not in self.config.endpoints:
                continue
            for name in self.files:
                pagecache.drop(self._url(proto, name))

    def set_block_readahead(self, kb: int | None) -> None:
        """Write the readahead file the site file's tuning.block_readahead names (None: put
        back the value it held before the sweep first wrote it)."""
        path = self.config.tuning.block_readahead
        if path is None:
            if kb is None:  # the site's own setting: nothing to put back
                return
            raise InstoreError(
                f"site {self.config.name} is real: its file names no tuning.block_readahead",
                "add tuning: {block_readahead: /sys/block/DEV/queue/read_ahead_kb} where the "
                "worker may write it, or leave block_readahead_kb out of its sections",
            )
        if kb is None and self._readahead_before is None:
            return
        try:
            if self._readahead_before is None:
                self._readahead_before = path.read_text().strip()
            path.write_text(f"{kb}\n" if kb is not None else f"{self._readahead_before}\n")
        except OSError as err:
            raise InstoreError(
                f"site {self.config.name}: cannot set block readahead in {path}: {err.strerror}",
                "let the sweep's user write it (a udev rule or group write), or remove "
                "tuning.block_readahead from the site file",
            ) from None
        if kb is None:
            self._readahead_before = None

    def prepare_cache(self, cache_state: str | None, files: list[str]) -> None:
        """cold: run the site file's tuning.xcache_purge; warm: read each file whole through
        the XCache, so it holds them all (the plan skips cold points without a purge)."""
        if cache_state == "cold":
            self._purge_xcache()
        elif cache_state == "warm":
            for file in files:
                fetch(self.url(access.XCACHE, file), Path(os.devnull), timeout=600)
        elif cache_state is not None:
            raise InstoreError(f"unknown cache state {cache_state!r}", "use cold or warm")

    def _purge_xcache(self) -> None:
        if not self.config.tuning.xcache_purge:
            raise InstoreError(
                f"site {self.config.name}: its file names no tuning.xcache_purge to empty its XCache",
                "add tuning: {xcache_purge: [COMMAND, ARGS...]}, or leave cold out of cache_state",
            )
        purge_xcache(self.config)

    def calibration_file(self) -> tuple[str, int]:
        """The site file's calibration.file; its size is known where a POSIX endpoint shows it.
        A site with its own dataset and no calibration.file: the dataset's first file."""
        cfg = self.config
        if not cfg.calibration.file and cfg.dataset is not None:
            first = site_dataset(cfg, self.results).files[0]
            return first.name, first.size
        if not cfg.calibration.file:
            raise InstoreError(f"{cfg.path}: field calibration.file is missing",
                               "name a file that exists behind every endpoint")  # fmt: skip
        return cfg.calibration.file, self._size_of(cfg.calibration.file)

    def _size_of(self, file: str) -> int:
        """The file's size: from its POSIX endpoint, else as the first storage endpoint that
        answers reports it (0: none does)."""
        endpoints = self.config.endpoints
        if access.POSIX in endpoints:
            return Path(endpoints[access.POSIX].format(file=file)).stat().st_size
        urls = [endpoints[p].format(file=file) for p in STAT_ORDER if p in endpoints]
        for url in urls:
            try:
                size = storage_for(url).stat(url)
            except StorageError:
                continue
            if size:
                return size
        return 0

    def fio_target(self) -> FioTarget | None:
        posix_dir = self.config.calibration.posix_dir
        if not posix_dir:
            return None
        fix = (f"calibration.posix_dir in {self.config.path} names it: set it to a directory on "
               "your POSIX mount that you may write, or leave it out to measure no disk (a site "
               "without a POSIX mount)")  # fmt: skip
        return FioTarget(Path(posix_dir), FIO_MAX_MB, fix=fix)

    def job_env(self) -> dict[str, str]:
        return {}

    def _emulation(self) -> dict[str, Any]:
        return {"endpoints": dict(self.config.endpoints)}


# The endpoints asked for the calibration file's size where the site has no POSIX endpoint.
STAT_ORDER = (access.XROOTD, access.HTTP, access.STAGE_IN)


def open_real(
    site: SiteConfig,
    files: Sequence[Path],
    results: Path = DEFAULT_RESULTS,
    remote: Sequence[str] = (),
) -> RealLive:
    """The real site, once its credential is valid, every endpoint answers and serves the
    local ``files`` unchanged (copies this results directory saw verified recently: the
    same size). ``remote``: the site's own dataset files to be read (found behind every
    endpoint when the dataset was described, ``instore.site.dataset``)."""
    credentials.require(site.auth, site.name)
    verified = VerifiedCopies(Path(results) / site.name / "verified.json")
    live = RealLive(site, [f.name for f in files] + list(remote), results, verified,
                    empties_stale_cache=True)  # fmt: skip
    failures = live.check(files)
    if failures:
        raise PreflightError(site, failures)
    return live


def purge_xcache(config: SiteConfig) -> None:
    """Run the site file's tuning.xcache_purge (a cold point's, or after its origin's copies
    changed under the cache); one line naming the command where it fails."""
    command = list(config.tuning.xcache_purge)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise InstoreError(
            f"site {config.name}: tuning.xcache_purge {' '.join(command)} exited "
            f"{done.returncode}: {last[0]}",
            "run it by hand until it empties the XCache, then rerun the sweep",
        )
