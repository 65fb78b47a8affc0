"""The conditions a site's results were measured under, as a site admin reads them: a short
table of network, disk, limits and workers with units, and the full record one click away.

The sweep records the conditions as nested JSON (``conditions`` in every row); flattening it
gives dozens of keys like ``calibration.conditions.emulation.network.rtt_ms_bare``. Here each
line is one thing a person checks, and the JSON stays in a collapsed ``<details>`` block.

A site's sections can leave it in another state: the filesystem section formats its disk as xfs,
and the latest record then says xfs while the site's other records were measured on ext4. The
box shows what most records ran under (``prevailing``), and which sections ran under something
else, and what.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pandas as pd

from instore.summary.limits import from_calibration


def _num(value: Any, unit: str, digits: int = 3) -> str | None:
    """``value`` with its unit, or None when it was not recorded."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    text = f"{value:,.0f}" if abs(value) >= 10 ** (digits - 1) else f"{value:.{digits}g}"
    return f"{text} {unit}"


def _joined(*parts: str | None) -> str:
    return ", ".join(p for p in parts if p) or "not recorded"


def _network(net: Mapping[str, Any]) -> str:
    measured = _num(net.get("rtt_ms_measured"), "ms")
    bare = _num(net.get("rtt_ms_bare"), "ms")
    rtt = _num(net.get("rtt_ms_target"), "ms round trip")
    return _joined(
        _num(net.get("bandwidth_mbit"), "Mbit/s", 4),
        rtt,
        f"measured {measured}" if measured else None,
        f"{bare} without the emulated delay" if bare else None,
    )


def _disk(disk: Mapping[str, Any]) -> str:
    readahead = _num(disk.get("readahead_kb"), "KB")
    return _joined(
        disk.get("filesystem"),
        _num(disk.get("size_mb"), "MB", 6),
        f"block readahead {readahead}" if readahead else None,
    )


def _disk_limits(disk: Mapping[str, Any]) -> str:
    found = _joined(_num(disk.get("read_iops"), "random-read IOPS", 6),
                    _num(disk.get("read_mbps"), "MB/s", 4))  # fmt: skip
    return "none (the device's own speed)" if found == "not recorded" else found


def _calibration(cal: Mapping[str, Any] | None) -> str:
    if not cal:
        return "not calibrated: figures show no limit lines"
    rtt = _num(cal.get("rtt_ms"), "ms")
    text = from_calibration(cal).describe().removeprefix("Calibrated limits: ")
    extra = _joined(f"RTT {rtt}" if rtt else None, cal.get("measured_at"))
    return text if extra == "not recorded" else f"{text} ({extra})"


def condition_rows(cond: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(what, value with units) for the conditions a site admin checks first."""
    emulation = cond.get("emulation") or {}
    workers = cond.get("workers") or {}
    rows = [("kind / storage profile", f"{cond.get('kind', '?')} / {cond.get('profile', '?')}")]
    if cond.get("description"):
        rows.append(("description", str(cond["description"])))
    if "network" in emulation:
        rows.append(("network (emulated)", _network(emulation["network"])))
    if "disk" in emulation:
        rows.append(("disk (emulated)", _disk(emulation["disk"])))
        rows.append(("disk limits (emulated)", _disk_limits(emulation["disk"])))
    if emulation.get("endpoints"):
        ends = ", ".join(f"{k}: {v}" for k, v in sorted(emulation["endpoints"].items()))
        rows.append(("endpoints", ends))
    if workers:
        rows.append(("workers", f"{workers.get('nodes', '?')} node(s) x {workers.get('cores', '?')} cores"))  # fmt: skip
    if cond.get("protocols"):
        rows.append(("protocols offered", ", ".join(cond["protocols"])))
    rows.append(("calibrated limits", _calibration(cond.get("calibration"))))
    return rows


# Measured each run (they vary a little from run to run), not a state a section sets
_MEASURED = ("rtt_ms_measured", "rtt_ms_bare")


def _state(cond: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The short table's lines that describe a state (no calibration, no measured RTT)."""
    emulation = dict(cond.get("emulation") or {})
    if "network" in emulation:
        emulation["network"] = {k: v for k, v in emulation["network"].items() if k not in _MEASURED}
    rows = condition_rows({**cond, "emulation": emulation, "calibration": None})
    return tuple(r for r in rows if r[0] != "calibrated limits")


def _parsed(value: Any) -> dict[str, Any]:
    if isinstance(value, str) and value:
        return json.loads(value)
    return dict(value) if isinstance(value, Mapping) else {}


def prevailing(rows: pd.DataFrame) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The conditions most of ``rows`` (a site's records: ``section``, ``start_time``,
    ``conditions``) were measured under, the latest record's of that state; and, for each
    section some of whose records ran under another state, (section, what differed and for
    how many of its records): the filesystem section runs half its points on xfs, a tie that
    a section's own majority hid."""
    if rows.empty or "conditions" not in rows:
        return {}, []
    rows = rows.sort_values("start_time")
    conds = [_parsed(c) for c in rows["conditions"]]
    states = [_state(c) for c in conds]
    common = Counter(states).most_common(1)[0][0]
    latest = max(i for i, s in enumerate(states) if s == common)
    changed = []
    for section, idx in pd.Series(range(len(rows)), index=rows["section"].to_numpy()).groupby(
        level=0, sort=True
    ):
        others = Counter(states[i] for i in idx if states[i] != common)
        for state, count in others.items():
            differs = "; ".join(f"{k} {v}" for k, v in state if (k, v) not in common)
            changed.append((str(section), f"{differs} ({count} of its {len(idx)} records)"))
    return conds[latest], changed


def conditions_html(cond: Mapping[str, Any], changed: list[tuple[str, str]] | None = None) -> str:
    """The short table (``changed``: the sections measured under another state, and what),
    then the full recorded JSON in a collapsed block."""
    left = ' style="text-align:left"'  # a notebook page right-aligns cells: this is prose
    lines = list(condition_rows(cond))
    if changed:
        lines.insert(0, ("measured under", "these conditions, most records"))
        lines += [(f"{section} section ran under", what) for section, what in changed]
    body = "".join(
        f"<tr><th{left}>{html.escape(k)}</th><td{left}>{html.escape(v)}</td></tr>" for k, v in lines
    )
    full = html.escape(json.dumps(cond, indent=2, sort_keys=True))
    return (
        f'<table class="instore-conditions">{body}</table>'
        "<details><summary>All recorded conditions (JSON)</summary>"
        f"<pre>{full}</pre></details>"
    )
