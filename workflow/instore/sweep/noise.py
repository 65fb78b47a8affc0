"""Machine noise: how much the machine itself drifted while a sweep measured.

A storage benchmark on a shared or virtual machine measures the machine too: a neighbour's
load, CPU steal or a busy disk move every point's wall time. So a sweep times two fixed
probes before its first point, between points every ``PROBE_EVERY_S`` (never during one:
points never overlap in time, and the probe runs in the sweep's own process while no job
runs) and after its last point:

* a CPU unit: a fixed pure-Python loop (about 10 ms here), run 5 times, the fastest kept (as
  ``timeit`` does: a run preempted once only adds time);
* a local read: a 32 MB file written once in the results directory (``noise-probe.bin``),
  read whole with its pages dropped first (``posix_fadvise(DONTNEED)``, no root needed).

One probe costs about 80 ms; the sweep's first figure is the median of 3 probes, the
baseline every later probe is compared with. Probes are appended to
``results/<site>/noise.jsonl`` (one JSON line each, fsynced, as the run records).

Each run record carries the last probe before its point started (at most ``PROBE_EVERY_S``
before it):

* ``noise_cpu_s``, ``noise_read_s``: that probe's figures (seconds);
* ``noise_cpu_drift``, ``noise_read_drift``: each over the sweep's baseline, minus 1 (signed:
  0.08 is 8% slower);
* ``noise_drift``: the larger of the two drifts' magnitudes, a fraction;
* ``noise_flagged``: the CPU unit's drift above ``DRIFT_LIMIT`` (5%): the point was measured
  while the machine computed more slowly (or faster) than when the sweep started. This, not
  ``noise_drift``, is the machine's noise for the point (``instore compare`` uses
  ``noise_cpu_drift`` too): the local read follows the study's own writes (in the reference
  study of 2026-11-26 it drifted 28-82% while the CPU unit stayed within 6%), so it is kept
  for information and flags nothing. A probe whose CPU unit crosses the limit is taken again at
  once and the one nearer the baseline kept: one slow probe (seen: 15 ms against 10, once in a
  sweep) would otherwise flag every point until the next probe;
* ``noise_sweep``: the time of the sweep's baseline, naming the sweep (and its probes);
  ``noise_probe_at``: the time of the probe the record keeps.

The probes measure the machine the sweep runs on: with workers on other nodes (SLURM) they
say nothing about those.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from instore import pagecache
from instore.record import utc_now
from instore.summary.noise import DRIFT_LIMIT, NOISE_LOG
from instore.sweep.store import append_jsonl

log = logging.getLogger(__name__)
PROBE_EVERY_S = 60.0  # between points; a probe costs ~80 ms, so 0.15% of a sweep
PROBE_FILE = "noise-probe.bin"
PROBE_BYTES = 32 << 20
CPU_LOOPS = 100_000  # one CPU unit: about 10 ms of pure Python here
CPU_RUNS = 5
BASELINE_PROBES = 3
_CHUNK = 1 << 20


def cpu_unit(loops: int = CPU_LOOPS, runs: int = CPU_RUNS) -> float:
    """Seconds one fixed loop takes, the fastest of ``runs`` (a preempted run only adds)."""
    times = []
    for _ in range(runs):
        start, acc = time.perf_counter(), 0
        for i in range(loops):
            acc = (acc * 1103515245 + i) & 0xFFFFFFFF
        times.append(time.perf_counter() - start)
    return min(times)


def probe_file(results: Path, size: int = PROBE_BYTES) -> Path:
    """The local read's file, written once (random bytes, fsynced, renamed into place)."""
    path = results / PROBE_FILE
    if path.is_file() and path.stat().st_size == size:
        return path
    results.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            f.write(os.urandom(size))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def local_read(path: Path) -> float:
    """Seconds to read the file whole from the disk: its cached pages dropped before (and
    after, so the probe leaves the page cache as it found it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        pagecache.drop_open(fd)
        buf = memoryview(bytearray(_CHUNK))
        start = time.perf_counter()
        while os.readv(fd, [buf]):
            pass
        took = time.perf_counter() - start
        pagecache.drop_open(fd)
        return took
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Probe:
    """One probe, and how far it is from the sweep's baseline."""

    at: str  # UTC, when it was taken
    when: str  # before, during or after the sweep's points
    sweep: str  # the baseline's time: which sweep it belongs to
    cpu_s: float
    read_s: float
    cpu_drift: float = 0.0
    read_drift: float = 0.0

    @property
    def drift(self) -> float:
        """The larger drift's magnitude (a probe whose read could not run: the CPU's)."""
        known = [abs(d) for d in (self.cpu_drift, self.read_drift) if not math.isnan(d)]
        return max(known, default=math.nan)

    def fields(self) -> dict[str, Any]:
        """What a run record keeps of the last probe before its point (module docstring)."""
        return {
            "noise_cpu_s": self.cpu_s,
            "noise_read_s": self.read_s,
            "noise_cpu_drift": self.cpu_drift,
            "noise_read_drift": self.read_drift,
            "noise_drift": self.drift,
            "noise_flagged": bool(abs(self.cpu_drift) > DRIFT_LIMIT),
            "noise_sweep": self.sweep,
            "noise_probe_at": self.at,
        }


Measure = Callable[[], tuple[float, float]]


class NoiseMonitor:
    """The probes of one sweep: a baseline first, then between points when one is due."""

    def __init__(
        self,
        results: Path,
        site: str,
        every_s: float = PROBE_EVERY_S,
        measure: Measure | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = results / site / NOISE_LOG
        self.every_s, self.clock = every_s, clock
        self._measure = measure or self._measure_here(results)
        self.baseline: Probe | None = None
        self.last: Probe | None = None
        self._last_at = 0.0
        self.probes: list[Probe] = []

    @staticmethod
    def _measure_here(results: Path) -> Measure:
        """The probes on this machine; without room for the read's file (a full results
        disk) the read is left out (NaN), saying so once: noise never stops a sweep."""
        try:
            path: Path | None = probe_file(results)
        except OSError as err:
            log.warning("machine noise: no local read probe (%s: %s)", results / PROBE_FILE, err)
            path = None

        def measure() -> tuple[float, float]:
            return cpu_unit(), local_read(path) if path is not None else math.nan

        return measure

    def start(self) -> Probe:
        """The baseline: the median of a few probes, so one unlucky probe does not skew it."""
        taken = [self._measure() for _ in range(BASELINE_PROBES)]
        at = utc_now()
        cpu = statistics.median(t[0] for t in taken)
        read = statistics.median(t[1] for t in taken)
        self.baseline = Probe(at, "before", at, cpu, read)
        return self._keep(self.baseline)

    def probe(self, when: str = "during") -> Probe:
        """One probe now, compared with the baseline (taken first if there is none)."""
        if self.baseline is None:
            return self.start()
        cpu, read = self._measure()
        base = self.baseline
        if abs(cpu / base.cpu_s - 1) > DRIFT_LIMIT:  # confirm before it flags points
            again = self._measure()[0]
            cpu = min(cpu, again, key=lambda c: abs(c / base.cpu_s - 1))
        probe = Probe(
            utc_now(), when, base.sweep, cpu, read, cpu / base.cpu_s - 1, read / base.read_s - 1
        )
        return self._keep(probe)

    def between(self) -> Probe:
        """Before a point: a probe if the last is ``every_s`` old, else the last one."""
        if self.last is None or self.clock() - self._last_at >= self.every_s:
            return self.probe("during")
        return self.last

    def fields(self) -> dict[str, Any]:
        """The record columns of the last probe (none before the first)."""
        return self.last.fields() if self.last is not None else {}

    def _keep(self, probe: Probe) -> Probe:
        self.last, self._last_at = probe, self.clock()
        self.probes.append(probe)
        append_jsonl(self.log, [{**asdict(probe), "drift": probe.drift}], "machine-noise probes")
        return probe

    def close(self) -> None:
        """The probe after the sweep's last point, and one line on how far the machine drifted."""
        if self.baseline is None:
            return
        self.probe("after")
        worst = max(self.probes, key=lambda p: p.drift)
        log.info(
            "machine noise: %d probe(s), the largest drift %.1f%% at %s (cpu %+.1f%%, read %+.1f%%)",
            len(self.probes), worst.drift * 100, worst.at, worst.cpu_drift * 100,
            worst.read_drift * 100,
        )  # fmt: skip
