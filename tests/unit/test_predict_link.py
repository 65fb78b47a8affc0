"""The link the model's flows share as TCP shares a bottleneck (processor sharing: flows that
start together end together), and a fixed time replayed pass after pass, as the replayer runs
its clients."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.access import XROOTD
from instore.predict.compiled import compile_trace
from instore.predict.link import Flow, SharedLink
from instore.predict.model import predict
from instore.predict.profile import CONNECT_ROUND_TRIPS, Param
from instore.predict.scenario import Scenario
from instore.replay.trace import load_trace

from tests.unit.test_predict_model import FULL_WINDOW, profile, small_reads, write_trace


def _flow(size: float) -> Flow:
    return Flow(0.0, size, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, [0.0] * 6)


def _drain(link: SharedLink) -> list[float]:
    out = []
    while (at := link.next_departure()) is not None:
        link.depart(at)
        out.append(at)
    return out


def test_flows_that_start_together_share_the_link_and_end_together() -> None:
    link = SharedLink(1e6)  # 1 MB/s
    for _ in range(4):
        link.arrive(0.0, _flow(1e6))
    # shared: all four end at 4 s (a queue would end them at 1, 2, 3 and 4 s)
    assert _drain(link) == pytest.approx([4.0] * 4)


def test_a_flow_alone_has_the_whole_link_and_shares_it_from_when_another_comes() -> None:
    link = SharedLink(1e6)
    link.arrive(0.0, _flow(1e6))
    assert link.next_departure() == pytest.approx(1.0)
    link.arrive(0.5, _flow(1e6))  # the first has 0.5 MB left, at half the link now
    assert _drain(link) == pytest.approx([1.5, 2.0])


def test_clients_reading_at_once_each_wait_for_every_clients_bytes(tmp_path: Path) -> None:
    """Eight clients each read 4 MB at the same moment over 100 Mbit/s: the link carries the
    32 MB in 2.7 s and, shared, every client's read ends then (one queue would end the first
    after 0.34 s and the mean client's after 1.5 s): the WAN's load section at 16 and 64
    clients, whose every client's largest read took the link's time for every client's."""
    c = compile_trace(load_trace(write_trace(tmp_path, [[(0, 4_000_000)]], think=0.0)))
    p = profile(rtt_ms=Param(0.1, "given"), bandwidth_mbit=Param(100.0, "given"),
                tcp_window_kb=FULL_WINDOW, disk_seq_mb_per_s=Param(1e9, "given"))  # fmt: skip
    alone = predict(c, p).wall_s
    many = predict(c, p, Scenario(clients=8))
    link_s = 8 * 4e6 / (100e6 / 8)
    assert many.wall_s == pytest.approx(many.wall_max_s, rel=1e-6)
    assert many.wall_s == pytest.approx(alone - 4e6 / (100e6 / 8) + link_s, rel=0.01)
    assert predict(c, p, Scenario(clients=1)).wall_s == pytest.approx(alone)


def test_a_fixed_time_is_replayed_pass_after_pass_on_cold_copies_its_connection_kept(
    tmp_path: Path,
) -> None:
    """Each pass reads its own copy from a cold disk (every read a disk request again), on the
    connection the client keeps (no second connection: XRootD's TCP handshake, handshake and
    login): the passes after the first are three RTTs shorter, and the whole ones within the
    fixed time are the model's pass walls."""
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(20), think=0.01)))
    p = profile(rtt_ms=Param(10.0, "given"), disk_random_ms=Param(5.0, "given"),
                tcp_window_kb=FULL_WINDOW)  # fmt: skip
    first = predict(c, p).wall_s
    fixed = predict(c, p, Scenario(until_s=3.5 * first))
    assert fixed.wall_s == pytest.approx(first)  # the first pass, as alone
    later = first - CONNECT_ROUND_TRIPS[XROOTD] * 0.010
    assert fixed.pass_walls == pytest.approx([first, later, later])
    assert 3.0 < fixed.passes < 4.0  # three whole passes and a share of the fourth's bytes
    assert predict(c, p, Scenario(until_s=0.5 * first)).pass_walls == []  # none whole
