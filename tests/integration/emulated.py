"""Emulated sites for integration tests: a built-in site under a test name, and the guard that
no such site is left behind. Bringing one up needs root."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml
from instore.site import load_site
from instore.site.emulated import clear_abandoned, existing, teardown
from instore.site.emulated.names import SiteNames


def site_file(
    directory: Path,
    name: str,
    like: str,
    protocols: Sequence[str],
    disk_mb: int,
    *,
    rtt_ms: float | None = None,
    read_iops: int | None = None,
) -> Path:
    """The built-in site ``like`` as ``directory/<name>.yaml``, named ``name``: a disk of
    ``disk_mb``, only ``protocols``, no stage-in; a network RTT of ``rtt_ms`` and a random-read
    IOPS limit of ``read_iops`` where given."""
    data = yaml.safe_load(load_site(like).path.read_text())
    data.update(name=name, protocols=list(protocols))
    data.pop("stage_in", None)
    data["disk"]["size_mb"] = disk_mb
    if rtt_ms is not None:
        data["network"]["rtt_ms"] = rtt_ms
    if read_iops is not None:
        data["disk"]["limits"]["read_iops"] = read_iops
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@contextmanager
def torn_down_after(names: SiteNames, what: str) -> Iterator[None]:
    """No ``names`` site left by a previous run before (one whose owner is gone, as a killed
    session leaves it, is removed as a bring-up would; one that a live process holds fails the
    test); whatever happens inside, the site is torn down after, and gone. ``what``: the
    test's name for it, for the message."""
    clear_abandoned(names)
    assert not existing(names), f"a previous run left the {what} test site behind"
    try:
        yield
    finally:
        teardown(names)
    assert not existing(names)
