"""A TCP connection's window in the model: a new or idle connection's response ramps up by
round trips (slow start), a busy one's flows at the path's rate, and a LAN hardly notices."""

from __future__ import annotations

import pytest
from instore.predict.tcp import INITIAL_WINDOW_BYTES, Connection, retransmission_timeout

WAN_RTT, WAN_RATE = 0.025, 100e6 / 8  # the emulated WAN: 25 ms, 100 Mbit/s (312 kB in flight)


def test_a_256kB_response_on_a_new_25ms_connection_takes_four_round_trips_more() -> None:
    """14.5, 29, 58 and 116 kB go in four rounds (217 kB), the rest at the rate: 103.6 ms where
    the bytes alone take 21 ms. The reference run's WAN replay of the uproot analysis saw a 99th
    percentile read of 103 ms at a median of 26 ms."""
    size = 256 * 1024
    sent = INITIAL_WINDOW_BYTES * (1 + 2 + 4 + 8)
    took = Connection(WAN_RTT, WAN_RATE).flow_time(size, start=0.0)
    assert took == pytest.approx(4 * WAN_RTT + (size - sent) / WAN_RATE)
    assert took > 4 * size / WAN_RATE


def test_a_busy_connection_flows_at_the_rate_and_a_pause_under_its_timeout_keeps_it() -> None:
    conn = Connection(WAN_RTT, WAN_RATE)
    first = conn.flow_time(10e6, start=0.0)  # the window grows to fill the path
    assert first > 10e6 / WAN_RATE
    assert conn.flow_time(1e6, start=conn.sent_until) == pytest.approx(1e6 / WAN_RATE)
    pause = retransmission_timeout(WAN_RTT) * 0.9
    assert conn.flow_time(1e6, start=conn.sent_until + pause) == pytest.approx(1e6 / WAN_RATE)


def test_an_idle_connection_ramps_up_again_unless_the_server_keeps_its_window() -> None:
    """Linux halves the window for every retransmission timeout of idleness (down to the
    initial one); with net.ipv4.tcp_slow_start_after_idle = 0 it keeps it."""
    size = 1e6
    walls = {}
    for restart in (True, False):
        conn = Connection(WAN_RTT, WAN_RATE, restart_after_idle=restart)
        conn.flow_time(10e6, start=0.0)
        walls[restart] = conn.flow_time(size, start=conn.sent_until + 2.0)  # 2 s of think
    assert walls[False] == pytest.approx(size / WAN_RATE)
    assert walls[True] >= size / WAN_RATE + 3 * WAN_RTT  # back from 14.5 kB: 5 round trips


def test_on_a_lan_the_ramp_costs_under_a_millisecond() -> None:
    rtt, rate = 0.0001, 10e9 / 8  # 0.1 ms, 10 Gbit/s
    took = Connection(rtt, rate).flow_time(4e6, start=0.0)
    assert 4e6 / rate < took < 4e6 / rate + 0.001
