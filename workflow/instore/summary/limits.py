"""The site's calibrated physical limits, so every figure can say how close it gets to them.

``instore site calibrate`` measures what the storage can deliver with no ROOT in the way
(whole-file reads of an open file per protocol, fio sequential throughput and random-read
IOPS). The summary expresses each result as a fraction of the matching limit; without
calibration there is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from instore.calibration import read_rate


@dataclass(frozen=True)
class Limits:
    """Throughput per protocol (MB/s) and random-read IOPS; empty when uncalibrated."""

    mb_per_s: Mapping[str, float] = field(default_factory=dict)
    read_iops: float | None = None
    source: str = "uncalibrated"
    held: tuple[str, ...] = ()  # a calibration without limits: what it did hold, and why not more

    def describe(self) -> str:
        """One sentence for a report header: the limits each figure is measured against."""
        if not self.mb_per_s and not self.read_iops:
            if self.source == "uncalibrated":
                return "No usable limits: the site was not calibrated"
            return "No throughput limits: its calibration holds " + "; ".join(self.held)
        rates = [f"{rate:.0f} MB/s {'disk (fio sequential)' if name == 'fio' else name}"
                 for name, rate in sorted(self.mb_per_s.items())]  # fmt: skip
        iops = [f"{self.read_iops:.0f} random-read IOPS"] if self.read_iops else []
        return "Calibrated limits: " + ", ".join(rates + iops)

    def throughput(self, protocol: str) -> float | None:
        """The protocol's own limit, else the storage's sequential (fio) limit."""
        return self.mb_per_s.get(protocol, self.mb_per_s.get("fio"))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _find(data: Mapping[str, Any], *names: str) -> float | None:
    for name in names:
        found = _number(data.get(name))
        if found is not None:
            return found
    return None


def from_calibration(calibration: Mapping[str, Any] | None) -> Limits:
    """Read the calibration JSON: each protocol's rate (the faster of ``mb_per_s``, a
    whole-file copy's, and ``read_mb_per_s``, the open file's read) and ``fio`` read figures."""
    if not calibration:
        return Limits()
    rates: dict[str, float] = {}
    for name, entry in (calibration.get("protocols") or {}).items():
        # the faster of the whole-file copy and the open file's read, each a lower bound of
        # what the storage delivers (instore.calibration.read_rate says why)
        rate = ((read_rate(entry) or _find(entry, "throughput_mb_s"))
                if isinstance(entry, Mapping) else None)  # fmt: skip
        if rate is not None:
            rates[name] = rate
    fio = calibration.get("fio") or {}
    sequential = _find(fio, "seq_read_mb_per_s", "read_mb_per_s", "seq_mb_per_s")
    if sequential is not None:
        rates["fio"] = sequential
    iops = _find(fio, "rand_read_iops", "read_iops", "iops")
    # Say so when a calibration exists but holds none of the figures read here, rather than
    # showing its absence as if the site had never been calibrated.
    source = "calibration" if rates or iops else "calibration without usable limits"
    return Limits(mb_per_s=rates, read_iops=iops, source=source, held=_held(calibration))


def _held(calibration: Mapping[str, Any]) -> tuple[str, ...]:
    """What a calibration without throughput figures did hold, and why it holds no more."""
    rtt = _number(calibration.get("rtt_ms"))
    protocols = calibration.get("protocols") or {}
    return (
        f"an RTT of {rtt:.3g} ms to the storage" if rtt else "no RTT (no endpoint answered one)",
        f"whole-file reads through {', '.join(sorted(protocols))} without a rate"
        if protocols
        else "no whole-file read (the calibration file's size was unknown: no posix endpoint "
        "and no storage endpoint reported it)",
        "no disk figure (fio needs the site file's calibration.posix_dir)"
        if not calibration.get("fio")
        else "a fio run without read figures",
    )
