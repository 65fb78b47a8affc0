"""Bandwidth limit: a token-bucket filter (tc tbf) on both ends of the veth pair."""

from __future__ import annotations

from instore.site.emulated.system import run

KERNEL_HZ = 250


def tbf_args(rate_mbit: float) -> list[str]:
    """tbf parameters for a rate: a burst of one timer tick (at least 64 KiB, one GSO
    packet) keeps the average within a few percent; 20 ms of queue avoids tail drops."""
    rate_bytes = rate_mbit * 1e6 / 8
    burst = max(int(rate_bytes / KERNEL_HZ), 65536)
    return ["tbf", "rate", f"{rate_mbit:g}mbit", "burst", str(burst), "latency", "20ms"]


def _tc(netns: str | None) -> list[str]:
    return ["tc", "-n", netns] if netns else ["tc"]


def limit(dev: str, rate_mbit: float, netns: str | None = None) -> None:
    """Cap egress of ``dev`` (in ``netns`` if given) at ``rate_mbit``."""
    run([*_tc(netns), "qdisc", "replace", "dev", dev, "root", *tbf_args(rate_mbit)])


def show(dev: str, netns: str | None = None) -> str:
    """The qdisc line of a device, for status output."""
    return run([*_tc(netns), "qdisc", "show", "dev", dev]).stdout.strip()
