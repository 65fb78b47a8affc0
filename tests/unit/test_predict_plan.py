"""A single-stream trace's page cache outcomes are found once per pass plan (``Simulation.
_pass_plan``), not at each request: the predictions must be the very ones the general path,
which asks each client's page cache at each request, gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.predict import simulation
from instore.predict.compiled import chained, compile_trace
from instore.predict.model import predict
from instore.predict.profile import from_dict
from instore.predict.scenario import Scenario
from instore.replay.trace import load_trace

DATA = Path(__file__).parent / "data"
PROTOCOLS = {"xrootd": {"request_ms": 0.3}, "http": {"request_ms": 0.6, "server_read_kb": 128},
             "fuse": {"request_ms": 0.4, "vector": False, "max_read_kb": 128},
             "stage-in": {"request_ms": 0.3}, "posix": {"request_ms": 0.0}}  # fmt: skip


def _profile(**parameters: float) -> object:
    data = {"site": "plan", "kind": "hand-written", "cores": 2, "protocols": PROTOCOLS,
            "parameters": {"rtt_ms": 5.0, "bandwidth_mbit": 1000, "disk_seq_mb_per_s": 120,
                           "disk_random_ms": 1000 / 150, **parameters},
            "xcache": {"block_kb": 1024, "local_mb_per_s": 800, "local_rtt_ms": 0.05}}  # fmt: skip
    return from_dict(data, "test profile")


def test_the_traces_streams_decide_which_path() -> None:
    trace = load_trace(DATA / "rdf-mt2-xrdcl.csv")
    assert not chained(compile_trace(trace))  # two streams: the general path
    assert chained(compile_trace(trace, serialise=True))
    assert chained(compile_trace(load_trace(DATA / "xrootdfs-agc-uproot" / "trace")))


@pytest.mark.parametrize("protocol", ["xrootd", "http", "fuse", "stage-in", "posix"])
def test_a_pass_plan_predicts_what_each_requests_own_page_cache_does(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = [load_trace(DATA / "xrootdfs-agc-uproot" / "trace"),
              load_trace(DATA / "rdf-mt2-xrdcl.csv")]  # fmt: skip
    profiles = [_profile(), _profile(disk_burst_ios=15, rtt_ms=25.0, bandwidth_mbit=100)]
    scenarios = [Scenario(protocol=protocol, xcache=x, clients=n)
                 for x in (None, "cold", "warm") for n in (1, 3)]  # fmt: skip
    scenarios.append(Scenario(protocol=protocol, clients=2, until_s=3.0))

    def predictions() -> list[dict]:
        out = []
        for trace in traces:
            c = compile_trace(trace, serialise=True)
            out += [predict(c, p, sc).as_dict() for p in profiles for sc in scenarios]  # type: ignore[arg-type]
        return out

    planned = predictions()
    monkeypatch.setattr(simulation, "chained", lambda c: False)
    assert predictions() == planned
