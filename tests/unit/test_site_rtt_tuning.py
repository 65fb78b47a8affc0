"""Bringing an emulated site's link to its RTT: a tuning that misses (a moment's load on the
machine) is tried again after a pause, with the delayer stopped and its queue rule removed in
between (a rule without a delayer stalls the bare link); a link that misses every time is
refused in one line. No root: the delayer is replaced by a recording fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.site import roles
from instore.site.emulated import build, delay
from instore.site.emulated import names as names_module
from instore.site.emulated.names import SiteNames
from instore.site.emulated.state import SiteState

NAMES = SiteNames("unit-rtt")


class Delayer:
    """``delay.tune`` giving the achieved RTTs in turn; records what the build asked for."""

    def __init__(self, achieved: list[float]) -> None:
        self.achieved, self.calls = list(achieved), []
        self.pid = 4000

    def tune(self, names: SiteNames, target: float, port: int):
        self.calls.append("tune")
        self.pid += 1
        proc = type("Proc", (), {"pid": self.pid})()
        return proc, 0.066, max(target - 0.066, 0.001), self.achieved.pop(0)

    def stop(self, pid: int) -> None:
        self.calls.append(f"stop {pid}")

    def remove_rule(self, names: SiteNames) -> None:
        self.calls.append("remove_rule")


@pytest.fixture
def delayer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(names_module, "STATE_DIR", tmp_path)
    monkeypatch.setattr(build, "TUNE_PAUSE_S", 0.0)
    made = {}

    def with_achieved(*achieved: float) -> Delayer:
        fake = made["fake"] = Delayer(list(achieved))
        for name in ("tune", "stop", "remove_rule"):
            monkeypatch.setattr(delay, name, getattr(fake, name))
        return fake

    return with_achieved


def test_a_missed_rtt_is_tuned_again_with_no_delayer_and_no_rule_between(delayer) -> None:
    fake = delayer(1.208, 0.52)
    state = SiteState(NAMES)
    build.add_latency("unit-rtt", 0.5, NAMES, state)
    assert fake.calls == ["tune", "stop 4001", "remove_rule", "tune"]
    assert state.data["rtt_ms_measured"] == 0.52
    assert state.pids()[roles.DELAYER] == 4002  # the second delayer is the site's


def test_a_link_that_misses_every_tuning_is_refused_in_one_line(delayer) -> None:
    delayer(*[1.2] * build.TUNE_ATTEMPTS)
    with pytest.raises(InstoreError) as err:
        build.add_latency("unit-rtt", 0.5, NAMES, SiteState(NAMES))
    assert str(err.value).startswith("site unit-rtt: measured RTT 1.200 ms, wanted 0.5 ms")
    assert f"in {build.TUNE_ATTEMPTS} tunings" in str(err.value)
    assert "\n" not in str(err.value)
    assert "lower the machine's load" in err.value.fix
