"""Where a trace's files are on the storage a replay reads: by URL prefix (``--url-map``) or
by a site's own URL for each file name and protocol (``--site``, as a sweep's jobs find them)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from instore.access import IN_PLACE, XROOTD
from instore.errors import InstoreError


@dataclass(frozen=True)
class Targets:
    """One URL (or local path) per trace file, in the trace's order, and what chose them."""

    urls: tuple[str, ...]
    site: str | None = None
    protocol: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # the site's job environment
    # Fixed-time mode, a one-file trace: the file each later pass reads instead (pass 2 the
    # first, cycling; none: every pass re-reads ``urls``), so a pass does not find its file in
    # the page cache its previous pass filled, as a job reading a dataset would not
    pass_urls: tuple[str, ...] = ()

    def for_pass(self, index: int) -> tuple[str, ...]:
        """The URLs pass ``index`` (0: the first) reads."""
        if index == 0 or not self.pass_urls:
            return self.urls
        return (self.pass_urls[(index - 1) % len(self.pass_urls)],)

    def with_pass_urls(self, urls: Sequence[str]) -> Targets:
        """These targets, later passes reading ``urls`` in turn (a one-file trace only)."""
        if urls and len(self.urls) != 1:
            raise InstoreError(
                f"--pass-target gives later passes one file, but the trace reads {len(self.urls)}",
                "drop --pass-target, or record a job that reads one file",
            )
        return Targets(self.urls, self.site, self.protocol, self.env, tuple(urls))


def file_name(url: str) -> str:
    """The file's name in a recorded URL (``root://host//store/x/f.root`` -> ``f.root``)."""
    return posixpath.basename(urlsplit(url).path) if "://" in url else Path(url).name


def by_url_map(files: Sequence[str], maps: Sequence[str]) -> Targets:
    """Each file's URL with the first matching ``OLD=NEW`` prefix replaced."""
    pairs = []
    for item in maps:
        old, eq, new = item.partition("=")
        if not eq or not old or not new:
            raise InstoreError(f"--url-map {item!r} is not OLD=NEW",
                               "give a prefix of the trace's URLs and its replacement, e.g. "
                               "root://a.example//store/=root://b.example//data/")  # fmt: skip
        pairs.append((old, new))
    urls = []
    for url in files:
        match = next(((o, n) for o, n in pairs if url.startswith(o)), None)
        if match is None:
            raise InstoreError(
                f"the trace's file {url} matches no --url-map prefix "
                f"({', '.join(o for o, _ in pairs)})",
                "add an --url-map OLD=NEW whose OLD starts that URL",
            )
        urls.append(match[1] + url[len(match[0]) :])
    return Targets(tuple(urls))


def by_target(files: Sequence[str], urls: Sequence[str]) -> Targets:
    """The trace's files at these URLs, one per file in the trace's order."""
    if len(urls) != len(files):
        raise InstoreError(
            f"the trace reads {len(files)} file(s) but {len(urls)} --target URL(s) were given",
            "give one --target per file, in the order `instore replay` lists the trace's files",
        )
    return Targets(tuple(urls))


def by_site(files: Sequence[str], site: str, protocol: str | None, results: Path) -> Targets:
    """Each file's URL on ``site`` with ``protocol`` (default: xrootd where offered), checked
    for the site's credential first, as a sweep checks it."""
    from instore import credentials
    from instore.site.config import load_site
    from instore.site.session import site_as_it_is

    cfg = load_site(site)
    if protocol is None:
        protocol = XROOTD if XROOTD in cfg.protocols else cfg.protocols[0]
    if protocol not in cfg.protocols:
        raise InstoreError(
            f"site {cfg.name} does not offer protocol {protocol!r}, so the trace cannot be "
            "replayed over it there",
            f"replay with --protocol one of {', '.join(cfg.protocols)}",
        )
    if protocol not in IN_PLACE:
        raise InstoreError(
            f"protocol {protocol!r} copies the file before the job reads it; a replay reads in "
            "place",
            f"replay with --protocol one of {', '.join(p for p in cfg.protocols if p in IN_PLACE)}",
        )
    credentials.require(cfg.auth, cfg.name)
    live = site_as_it_is(cfg, results)
    urls = tuple(live.url(protocol, file_name(url)) for url in files)
    return Targets(urls, cfg.name, protocol, live.job_env())
