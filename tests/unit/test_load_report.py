"""The load page's verdicts from a point's rows: each resource's use of its limit (the disk's
against the emulated spindle's IOPS, rescaled to the span the clients ran), the one nearest
its limit named as saturated at 80%, slow opens named when nothing is full, the most
clients served at 80% CPU efficiency, and events per second and HEPiX's fixed-time figure."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
from instore.report.load import bottleneck, capacity, points

CONDITIONS = json.dumps({"emulation": {"disk": {"read_iops": 150, "read_mbps": 120}}})


def _rows(clients: int, efficiency: float, disk_iops: float, open_s: float) -> pd.DataFrame:
    start = pd.Timestamp("2026-11-25T12:00:00Z")
    return pd.DataFrame({
        "point_key": f"p{clients}", "trace": "t", "protocol": "xrootd", "io_scheduler": None,
        "jobs": clients, "status": "ok", "wall_s": 2.0, "start_time": str(start),
        "bytes_read": 1_000_000, "predicted_cpu_efficiency": efficiency, "open_s": open_s,
        "read_latency_p50_s": 0.001, "read_latency_p95_s": 0.01, "read_latency_p99_s": 0.02,
        "host_cpu_busy": 0.2, "xrootd_cpu_share": 0.01, "delay_cpu_share": None,
        "disk_iops": disk_iops, "disk_mb_per_s": 1.0, "io_stall": 0.1,
        "link_utilisation": 0.01, "usage_wall_s": 4.0, "conditions": CONDITIONS,
    }, index=range(clients))  # fmt: skip


def test_the_resource_nearest_its_limit_is_named_and_capacity_follows() -> None:
    rows = pd.concat([_rows(1, 0.95, 40.0, 0.01), _rows(16, 0.30, 70.0, 0.01),
                      _rows(64, 0.10, 75.0, 15.0)])  # fmt: skip
    table = points(rows)
    assert list(table["clients"]) == [1, 16, 64]
    # 70 IOPS over the 4 s the counters ran is 140/s over the 2 s the clients ran: 93% of 150
    assert table.loc[1, "use: disk IOPS"] == np.float64(70.0 * 4 / 2 / 150)
    assert table.loc[1, "saturated"] == "disk IOPS (93%)"
    assert table.loc[0, "saturated"].startswith("none at 80%; nearest: disk IOPS (53%)")
    assert np.isnan(table.loc[0, "use: link emulator CPU"])  # a site without a delayer
    assert table.loc[0, "aggregate_mb_per_s"] == 0.5  # 1 MB in 2 s
    assert table.loc[2, "saturated"] == "disk IOPS (100%)"  # slow opens, but the disk is full
    cap = capacity(table).iloc[0]
    assert cap["clients at >= 80% efficiency"] == 1 and cap["first load under 80%"] == 16


def test_slow_opens_are_named_when_no_resource_is_full() -> None:
    table = points(_rows(64, 0.2, 10.0, 15.0))
    assert table.loc[0, "saturated"].endswith("opens slow (p95 15.0 s)")
    assert bottleneck({"host CPU": float("nan")}) == "unknown (no counters)"


def test_slow_opens_name_the_accept_queue_when_the_server_turned_connections_away() -> None:
    table = points(_rows(64, 0.2, 10.0, 15.0).assign(listen_overflows=37))
    assert table.loc[0, "saturated"].endswith(
        "opens slow (p95 15.0 s, server's accept queue full 37 times)"
    )
    assert table.loc[0, "accept_queue_overflows"] == 37


def test_listen_overflows_are_read_from_the_servers_network_namespace() -> None:
    """/proc/PID/net/netstat: a header line and a value line per group."""
    from instore.site import usage

    assert usage.listen_overflows(os.getpid()) is not None  # this process's namespace
    assert usage.listen_overflows(None) is None
    assert usage.listen_overflows(2**22 + 12345) is None  # no such process


def test_events_per_second_and_the_hepix_figure_in_fixed_time_mode() -> None:
    """4 clients started 0.5 s apart, each running 2 s and standing for 2.5 passes of a
    1000-event job; the last failed and does not count, so the others span 3 s."""
    start = pd.Timestamp("2026-11-25T12:00:00Z")
    rows = _rows(4, 0.9, 10.0, 0.01).assign(
        start_time=[(start + pd.Timedelta(seconds=0.5 * i)).isoformat(timespec="milliseconds")
                    for i in range(4)],
        events=2500.0, passes=2.5, fixed_time_s=2.0, status=["ok", "ok", "ok", "failed"],
    )  # fmt: skip
    row = points(rows).iloc[0]
    assert row["aggregate_events_per_s"] == 3 * 2500 / 3.0
    assert row["fixed_time_s"] == 2.0 and row["events_in_fixed_time"] == 7500.0


def test_no_events_known_and_no_fixed_time() -> None:
    """Records of traces without events (or from before they were recorded): NaN, not 0."""
    row = points(_rows(2, 0.9, 10.0, 0.01)).iloc[0]
    assert np.isnan(row["aggregate_events_per_s"])
    assert np.isnan(row["fixed_time_s"]) and np.isnan(row["events_in_fixed_time"])
    unknown = _rows(2, 0.9, 10.0, 0.01).assign(events=None, fixed_time_s=0.0)
    row = points(unknown).iloc[0]
    assert np.isnan(row["aggregate_events_per_s"]) and np.isnan(row["events_in_fixed_time"])
