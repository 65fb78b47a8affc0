"""``open_site``: the one way the sweep opens a site, emulated or real."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import FrameType

from instore.site.config import SiteConfig, load_site
from instore.site.emulated import bring_up, teardown
from instore.site.live import LiveSite
from instore.site.real import open_real


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
def open_site(site: SiteConfig | str | Path, files: Iterable[Path] = ()) -> Iterator[LiveSite]:
    """Open a site for measurement. Emulated: bring it up with ``files`` on its disk and tear
    it down on exit, exception, Ctrl-C or SIGTERM. Real: run the preflight only."""
    cfg = site if isinstance(site, SiteConfig) else load_site(site)
    files = [Path(f) for f in files]
    if not cfg.emulated:
        yield open_real(cfg, [f.name for f in files])
        return
    with _sigterm_unwinds():
        live = bring_up(cfg, files)
        try:
            yield live
        finally:
            with _no_interrupts():
                teardown(live.names)
