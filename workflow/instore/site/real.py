"""Real sites: nothing to start. Check every endpoint answers before any measurement, and
say, one line per endpoint, which does not."""

from __future__ import annotations

import os
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from instore.errors import InstoreError
from instore.site.config import SiteConfig
from instore.site.live import LiveSite

DEFAULT_PORTS = {"root": 1094, "xroot": 1094, "roots": 1094, "xroots": 1094,
                 "http": 80, "https": 443}  # fmt: skip


class PreflightError(InstoreError):
    """Some endpoints of a real site do not answer; ``lines`` has one line per endpoint."""

    def __init__(self, site: SiteConfig, lines: list[str]) -> None:
        self.lines = lines
        super().__init__(
            f"{site.path}: {len(lines)} endpoint(s) failed preflight: " + "; ".join(lines),
            "fix or remove those endpoints in the site file, then run `instore site preflight "
            f"{site.name}`",
        )


def _check_network(url: str, timeout_s: float) -> str | None:
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError as err:  # e.g. a port that is not a number
        return f"not a valid URL ({err})"
    if not host or not port:
        return "cannot tell host and port from the URL"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except socket.gaierror:
        return f"host {host} does not resolve"
    except ConnectionRefusedError:
        return f"{host}:{port} refused the connection"
    except TimeoutError:
        return f"{host}:{port} did not answer within {timeout_s:g} s"
    except OSError as err:
        return f"{host}:{port} unreachable ({err.strerror or err})"


def _check_path(template: str) -> str | None:
    directory = Path(template.split("{file}")[0] or "/")
    if not directory.is_dir():
        return f"{directory} is not a directory here"
    if not os.access(directory, os.R_OK | os.X_OK):
        return f"{directory} is not readable"
    return None


def check_endpoint(protocol: str, template: str, timeout_s: float) -> str | None:
    """None if the endpoint answers, else why not."""
    if template.startswith("/"):
        return _check_path(template)
    return _check_network(template, timeout_s)


def preflight(site: SiteConfig) -> list[str]:
    """One line per failing endpoint (empty = all answer). Checks run in parallel, so a site
    with several dead hosts fails within one timeout."""
    items = sorted(site.endpoints.items())
    with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        results = pool.map(lambda kv: check_endpoint(*kv, site.preflight_timeout_s), items)
    return [
        f"{proto} {tmpl}: {why}" for (proto, tmpl), why in zip(items, results, strict=False) if why
    ]


class RealLive(LiveSite):
    """A real site after a passed preflight."""

    def __init__(self, config: SiteConfig, files: list[str]) -> None:
        super().__init__(config)
        self.files = files

    def _url(self, protocol: str, file: str) -> str:
        return self.config.endpoints[protocol].format(file=file)

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


def open_real(site: SiteConfig, files: list[str]) -> RealLive:
    failures = preflight(site)
    if failures:
        raise PreflightError(site, failures)
    return RealLive(site, files)
