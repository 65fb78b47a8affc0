"""The conditions box says what most of a site's records ran under, and which sections changed
it: lan-hdd's site index said "disk (emulated) xfs", the state its filesystem section left the
site in, while all its other records were measured on ext4."""

from __future__ import annotations

import json

import pandas as pd
from instore.report.conditions import conditions_html, prevailing


def _cond(filesystem: str, rtt_measured: float) -> str:
    return json.dumps({
        "kind": "emulated", "profile": "lan-hdd", "workers": {"nodes": 1, "cores": 2},
        "emulation": {"network": {"bandwidth_mbit": 1000, "rtt_ms_target": 0.5,
                                  "rtt_ms_measured": rtt_measured},
                      "disk": {"filesystem": filesystem, "size_mb": 1024, "readahead_kb": 128}},
        "calibration": None,
    })  # fmt: skip


def _records() -> pd.DataFrame:
    """Layout and protocols on ext4, then the filesystem section (xfs last), as a sweep runs."""
    rows = [("layout", f"2026-11-26T14:{m:02d}:00", _cond("ext4", 0.5 + m / 100)) for m in range(5)]
    rows += [("protocols", f"2026-11-26T14:{m:02d}:00", _cond("ext4", 0.6)) for m in range(5, 9)]
    rows += [("filesystem", "2026-11-26T14:20:00", _cond("ext4", 0.6)),
             ("filesystem", "2026-11-26T14:21:00", _cond("xfs", 0.6)),
             ("filesystem", "2026-11-26T14:22:00", _cond("xfs", 0.6))]  # fmt: skip
    return pd.DataFrame(rows, columns=["section", "start_time", "conditions"])


def test_the_site_index_shows_the_state_most_records_ran_under_not_the_last() -> None:
    """Regression (issue 40): the latest record (xfs) described the site."""
    cond, changed = prevailing(_records())
    assert cond["emulation"]["disk"]["filesystem"] == "ext4"
    assert changed == [("filesystem",
                        "disk (emulated) xfs, 1024 MB, block readahead 128 KB (2 of its 3 records)")]  # fmt: skip
    page = conditions_html(cond, changed)
    assert "ext4" in page.split("<details>")[0]
    assert "filesystem section ran under" in page and "most records" in page


def test_a_section_half_of_whose_records_ran_under_another_state_is_named() -> None:
    """Regression: the reference run of 3cda407 measured its filesystem section's points as
    many on ext4 as on xfs; the section's own majority was a tie, decided for ext4, and the
    box did not say that half of them ran on xfs."""
    rows = _records()
    rows = rows[
        ~((rows["section"] == "filesystem") & (rows["start_time"] == "2026-11-26T14:22:00"))
    ]
    _, changed = prevailing(rows)
    assert changed == [("filesystem",
                        "disk (emulated) xfs, 1024 MB, block readahead 128 KB (1 of its 2 records)")]  # fmt: skip


def test_a_measured_rtt_that_varies_is_not_another_state() -> None:
    cond, changed = prevailing(_records()[lambda r: r["section"] != "filesystem"])
    assert changed == [] and cond["emulation"]["network"]["rtt_ms_measured"] == 0.6
    assert "ran under" not in conditions_html(cond, changed)


def test_no_records_no_conditions() -> None:
    assert prevailing(pd.DataFrame(columns=["section", "start_time", "conditions"])) == ({}, [])
