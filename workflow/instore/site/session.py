"""``open_site``: the one way the sweep opens a site, emulated or real; ``site_as_it_is`` for
the site commands that work on a site already up; ``bring_down`` for a study that failed."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import FrameType

from instore.site import emulated
from instore.site.config import SiteConfig, load_site
from instore.site.emulated.names import SiteNames
from instore.site.live import DEFAULT_RESULTS, LiveSite
from instore.site.real import RealLive, open_real


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt so `finally` blocks (our teardown) run.
    Signal handlers can only be set from the main thread; elsewhere the caller owns signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _no_interrupts() -> Iterator[None]:
    """Let teardown finish even if a second SIGTERM or Ctrl-C arrives."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def open_site(
    site: SiteConfig | str | Path,
    files: Iterable[Path] = (),
    results: Path = DEFAULT_RESULTS,
    remote: Sequence[str] = (),
) -> Iterator[LiveSite]:
    """Open a site for measurement; its conditions carry the calibration found in ``results``.
    Emulated: bring it up with ``files`` on its disk (removing what a crashed owner left) and
    tear it down on exit, exception, Ctrl-C or SIGTERM. Real: run the preflight only;
    ``remote`` names files of the site's own dataset the sweep reads (their page cache here
    is dropped between points, as the test files' is)."""
    cfg = site if isinstance(site, SiteConfig) else load_site(site)
    files = [Path(f) for f in files]
    if not cfg.emulated:
        live = open_real(cfg, files, results, remote)
        try:
            yield live
        finally:
            live.set_block_readahead(None)  # the disk's own readahead back, where it was set
        return
    with _sigterm_unwinds():
        live = emulated.bring_up(cfg, files, results)
        try:
            yield live
        finally:
            with _no_interrupts():
                emulated.teardown(live.names)


def site_as_it_is(cfg: SiteConfig, results: Path = DEFAULT_RESULTS) -> LiveSite:
    """The site without opening it: an emulated one must be up already (`instore site up`);
    a real one is taken as given, before any preflight."""
    if cfg.emulated:
        return emulated.attach(cfg.name, results)
    return RealLive(cfg, [], results)


@contextlib.contextmanager
def using_site(
    cfg: SiteConfig, results: Path = DEFAULT_RESULTS, files: Iterable[Path] = ()
) -> Iterator[LiveSite]:
    """The site if someone holds it up already (it stays up afterwards), else opened for the
    duration of the block, with ``files`` on an emulated site's disk, and closed after."""
    if cfg.emulated and emulated.is_held(cfg.name):
        yield emulated.attach(cfg.name, results)
        return
    with open_site(cfg, files=files, results=results) as live:
        yield live


def bring_down(configs: Iterable[SiteConfig]) -> list[str]:
    """Tear down whatever exists of the emulated sites among ``configs``, so a study that failed
    leaves none running; one line per site found. Real sites have nothing to bring down."""
    lines = []
    for cfg in configs:
        names = SiteNames(cfg.name)
        if not cfg.emulated or not emulated.existing(names):
            continue
        try:
            left = emulated.teardown(names)
        except Exception as err:  # report and go on: the other sites still need bringing down
            lines.append(f"could not bring site {cfg.name} down: {err}")
            continue
        lines.append(
            f"site {cfg.name} brought down" + (f"; left: {', '.join(left)}" if left else "")
        )
    return lines
