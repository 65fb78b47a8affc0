"""Intervals: the 95% range a point's median (or a ratio of two points' medians) lies in.

A point's measurements are its jobs, grouped by repetition. The bootstrap resamples the
repetitions and, within each, its jobs (a two-level bootstrap: what varies between runs and
what varies between the jobs of one run both widen the interval); a point measured once with
one job has no interval and says so. The generator is seeded, so a report is reproducible.

A comparison of two points is their ratio of medians with its own bootstrap interval; it names
a winner only when that interval excludes 1 (and, where the machine's own drift is known, when
the change exceeds it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
SEED = 20261126
ONE_MEASUREMENT = "one measurement"
BASIS_REPETITIONS = "repetitions"
BASIS_JOBS = "jobs"
BASIS_BOTH = "repetitions and jobs"

Groups = Sequence[Sequence[float]]


@dataclass(frozen=True)
class Interval:
    """A median with its 95% bootstrap interval; ``lo``/``hi`` are NaN when ``n`` is 1."""

    median: float
    lo: float
    hi: float
    n: int  # measurements it rests on (jobs of all repetitions)
    basis: str  # what was resampled: repetitions, jobs, both, or "one measurement"

    @property
    def half_width(self) -> float:
        """Half the interval's width relative to the median (NaN without an interval)."""
        if not self.has_interval or self.median == 0:
            return math.nan
        return (self.hi - self.lo) / 2 / abs(self.median)

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.lo) or math.isnan(self.hi))

    def text(self, fmt: str = "{:.3g}") -> str:
        """``median [lo, hi]`` or ``median (one measurement)``."""
        if not self.has_interval:
            return f"{fmt.format(self.median)} ({ONE_MEASUREMENT})"
        return f"{fmt.format(self.median)} [{fmt.format(self.lo)}, {fmt.format(self.hi)}]"


def clean(groups: Groups) -> list[np.ndarray]:
    """The groups as float arrays without NaN, empty groups dropped."""
    out = []
    for group in groups:
        values = np.asarray(list(group), dtype=float)
        values = values[~np.isnan(values)]
        if values.size:
            out.append(values)
    return out


def basis(groups: Groups) -> str:
    """What a bootstrap of ``groups`` resamples."""
    kept = clean(groups)
    several_runs = len(kept) > 1
    several_jobs = any(g.size > 1 for g in kept)
    if several_runs and several_jobs:
        return BASIS_BOTH
    if several_runs:
        return BASIS_REPETITIONS
    return BASIS_JOBS if several_jobs else ONE_MEASUREMENT


def resample_medians(
    groups: Groups, resamples: int = RESAMPLES, rng: np.random.Generator | None = None
) -> np.ndarray:
    """``resamples`` bootstrap medians: repetitions drawn with replacement, then each drawn
    repetition's jobs with replacement, pooled. Empty when there is nothing to resample."""
    kept = clean(groups)
    if not kept:
        return np.array([])
    rng = rng or np.random.default_rng(SEED)
    sizes = np.array([g.size for g in kept])
    if len(kept) == 1:  # jobs of one run: a plain bootstrap, vectorised
        values = kept[0]
        draws = rng.integers(0, values.size, size=(resamples, values.size))
        return np.median(values[draws], axis=1)
    # Vectorised over resamples: slot j of each resample holds a drawn run's jobs, drawn
    # again, padded with NaN to the largest run so ragged runs pool into one matrix.
    padded = np.full((len(kept), sizes.max()), np.nan)
    for i, g in enumerate(kept):
        padded[i, : g.size] = g
    slots = []
    for _ in kept:
        runs = rng.integers(0, len(kept), size=resamples)
        picks = (rng.random((resamples, sizes.max())) * sizes[runs, None]).astype(int)
        drawn = padded[runs[:, None], picks]
        drawn[np.arange(sizes.max())[None, :] >= sizes[runs, None]] = np.nan
        slots.append(drawn)
    return np.nanmedian(np.concatenate(slots, axis=1), axis=1)


def _bounds(samples: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)


def median_interval(groups: Groups, level: float = LEVEL) -> Interval:
    """The median of all measurements and its bootstrap interval (NaN for one measurement)."""
    kept = clean(groups)
    n = int(sum(g.size for g in kept))
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, ONE_MEASUREMENT)
    median = float(np.median(np.concatenate(kept)))
    if n == 1:
        return Interval(median, math.nan, math.nan, 1, ONE_MEASUREMENT)
    lo, hi = _bounds(resample_medians(kept), level)
    return Interval(median, lo, hi, n, basis(kept))


@dataclass(frozen=True)
class Ratio:
    """``a / b`` of two points' medians, with its bootstrap interval (NaN: a side measured once)."""

    value: float
    lo: float
    hi: float
    n_a: int
    n_b: int

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.lo) or math.isnan(self.hi))

    @property
    def differs(self) -> bool:
        """True when the interval excludes 1: a measurable difference."""
        return self.has_interval and (self.lo > 1 or self.hi < 1)

    def text(self) -> str:
        """``2.6x [2.1-3.0]``, or a note that it rests on a single measurement."""
        if not self.has_interval:
            return f"{self.value:.3g}x (single measurements, no interval)"
        return f"{self.value:.3g}x [{_bound(self.lo)}-{_bound(self.hi)}]"

    def inverse(self) -> Ratio:
        """``b / a``."""
        return Ratio(1 / self.value, 1 / self.hi, 1 / self.lo, self.n_b, self.n_a)


def _bound(x: float) -> str:
    """A ratio's interval bound to 3 significant digits, or as many more as keep a bound that
    is not 1 from reading as 1: ``[1-1.07]`` for a lower bound of 1.0006 read as an interval
    that includes no difference, beside advice that named one (the run of 323eb56)."""
    for digits in range(3, 8):
        text = f"{x:.{digits}g}"
        if text != "1" or x == 1:
            return text
    return text


def ratio_interval(a: Groups, b: Groups, level: float = LEVEL) -> Ratio:
    """The ratio of ``a``'s median to ``b``'s, each side bootstrapped on its own."""
    ka, kb = clean(a), clean(b)
    na, nb = int(sum(g.size for g in ka)), int(sum(g.size for g in kb))
    if not na or not nb:
        return Ratio(math.nan, math.nan, math.nan, na, nb)
    value = float(np.median(np.concatenate(ka)) / np.median(np.concatenate(kb)))
    if na < 2 or nb < 2:
        return Ratio(value, math.nan, math.nan, na, nb)
    rng = np.random.default_rng(SEED)
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = resample_medians(ka, rng=rng) / resample_medians(kb, rng=rng)
    samples = samples[np.isfinite(samples)]
    if not samples.size:
        return Ratio(value, math.nan, math.nan, na, nb)
    lo, hi = _bounds(samples, level)
    return Ratio(value, lo, hi, na, nb)


# At most this many measurements on a side, a bootstrapped median takes only their values: the
# interval spans about their range, and a median beside the largest sits on its edge.
FEW_RUNS = 3


def few_runs(ratio: Ratio) -> str:
    """``, from 3 and 2 runs: a wide interval`` when a side rests on FEW_RUNS measurements or
    fewer (seen: 1.08x [0.974-1.08], two of three runs 0.396 s and 0.397 s, the third 0.357 s:
    the estimate is the data's, the interval their range); empty otherwise."""
    if not ratio.has_interval or min(ratio.n_a, ratio.n_b) > FEW_RUNS:
        return ""
    return f", from {ratio.n_a} and {ratio.n_b} runs: a wide interval"


def change(ratio: Ratio, noise: float = 0.0, higher_is_better: bool = False) -> str:
    """``faster``, ``slower`` or ``unchanged`` for a ratio after/before of a figure: a change
    counts only when its interval excludes 1 and it exceeds the machine's drift ``noise`` (a
    fraction). ``higher_is_better``: a rate or an efficiency, where a rise is the good news."""
    if not ratio.differs or abs(ratio.value - 1) <= noise:
        return "unchanged"
    up = ratio.value > 1
    return "faster" if up == higher_is_better else "slower"
