"""The intervals every figure carries: a median's bootstrap interval over repetitions and
jobs, a ratio's, and the verdict a comparison may draw from it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from instore.summary.interval import (
    BASIS_BOTH,
    BASIS_JOBS,
    BASIS_REPETITIONS,
    ONE_MEASUREMENT,
    change,
    median_interval,
    ratio_interval,
)


def test_one_measurement_has_no_interval_and_says_so() -> None:
    interval = median_interval([[2.5]])
    assert interval.median == 2.5 and interval.n == 1 and interval.basis == ONE_MEASUREMENT
    assert not interval.has_interval and math.isnan(interval.half_width)
    assert interval.text() == "2.5 (one measurement)"


def test_interval_holds_the_median_and_names_what_was_resampled() -> None:
    runs = [[1.0, 1.1, 0.9], [1.2, 1.0], [0.95]]
    interval = median_interval(runs)
    assert interval.basis == BASIS_BOTH and interval.n == 6
    assert interval.lo <= interval.median <= interval.hi
    assert min(min(r) for r in runs) <= interval.lo and interval.hi <= max(max(r) for r in runs)
    assert median_interval([[1.0, 1.2, 1.1]]).basis == BASIS_JOBS
    assert median_interval([[1.0], [1.2], [1.1]]).basis == BASIS_REPETITIONS
    assert median_interval(runs) == interval  # seeded: a report renders the same twice


def test_interval_narrows_with_more_measurements_and_covers_the_truth() -> None:
    rng = np.random.default_rng(1)
    few = median_interval([list(rng.normal(10, 1, 3)) for _ in range(2)])
    many = median_interval([list(rng.normal(10, 1, 30)) for _ in range(5)])
    assert many.half_width < few.half_width
    assert many.lo < 10 < many.hi


def test_nan_values_are_left_out() -> None:
    interval = median_interval([[1.0, float("nan")], [float("nan")]])
    assert interval.n == 1 and interval.median == 1.0


def test_ratio_names_a_change_only_when_its_interval_excludes_one() -> None:
    before = [[1.0, 1.02], [0.99, 1.01], [1.0]]
    slower = [[1.3, 1.31], [1.29, 1.3], [1.32]]
    ratio = ratio_interval(slower, before)
    assert ratio.value == pytest.approx(1.3) and ratio.differs and ratio.lo > 1
    assert change(ratio) == "slower" and change(ratio, higher_is_better=True) == "faster"
    assert change(ratio, noise=0.5) == "unchanged"  # within the machine's own drift
    same = ratio_interval(before, before)
    assert same.value == 1.0 and not same.differs and change(same) == "unchanged"
    overlapping = ratio_interval([[1.0, 1.4], [0.8]], [[1.1, 0.9], [1.2]])
    assert not overlapping.differs and change(overlapping) == "unchanged"


def test_ratio_from_a_single_measurement_has_no_interval() -> None:
    ratio = ratio_interval([[2.6]], [[1.0], [1.1]])
    assert ratio.value == pytest.approx(2.6 / 1.05) and not ratio.has_interval
    assert not ratio.differs and change(ratio) == "unchanged"
    assert "single measurement" in ratio.text()
    assert ratio.inverse().value == pytest.approx(1.05 / 2.6)


def test_a_bound_that_is_not_1_never_reads_as_1() -> None:
    """The run of 323eb56, lan-ssd's readahead advice: "the worst setting takes 1.02x [1-1.07]
    as long", its lower bound 1.0006: a difference, written as if the interval held none."""
    from instore.summary.interval import Ratio

    assert Ratio(1.0196, 1.000638, 1.0722, 9, 9).text() == "1.02x [1.001-1.07]"
    assert Ratio(0.99, 0.9996, 0.9999, 3, 3).text() == "0.99x [0.9996-0.9999]"
    assert Ratio(1.05, 1.0, 1.1, 3, 3).text() == "1.05x [1-1.1]"  # 1 itself stays 1
    assert Ratio(2.6, 2.1, 3.04, 3, 3).text() == "2.6x [2.1-3.04]"
