"""Start-up measurement and run records, through the host runtime (no container needed)."""

from __future__ import annotations

import sys

import pytest
from instore.container.measure import measure_startup, parse_record, run_payload
from instore.container.runtime import Access, Runtime, Target
from instore.errors import InstoreError

HOST = Target(Runtime.NONE)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_startup_is_the_median_of_the_samples():
    startup = measure_startup(HOST, runs=3)
    assert len(startup.samples_s) == 3
    assert sorted(startup.samples_s)[1] == startup.median_s
    assert 0 < startup.median_s < 5


def test_startup_failure_names_the_runtime(monkeypatch):
    monkeypatch.setattr("instore.container.measure.STARTUP_PROBE", ("false",))
    with pytest.raises(InstoreError, match="the none container did not start"):
        measure_startup(HOST, runs=1)
    with pytest.raises(InstoreError, match="at least 1"):
        measure_startup(HOST, runs=0)


def test_record_keeps_payload_wall_apart_from_startup_and_outer_wall():
    code = "import json, time; time.sleep(0.3); print(json.dumps({'wall_s': 0.1, 'events': 7}))"
    record = run_payload(HOST, python(code), startup_s=0.25)
    assert record["events"] == 7
    assert record["wall_s"] == 0.1
    assert record["container_startup_s"] == 0.25
    assert record["outer_wall_s"] >= 0.3
    assert (record["runtime"], record["image_digest"], record["exit_status"]) == ("none", None, 0)


def test_only_named_env_reaches_the_payload(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "x")
    code = "import json, os; print(json.dumps({'seen': sorted(os.environ)}))"
    record = run_payload(HOST, python(code), Access(env={"XRD_TIMEOUT": "5"}))
    assert "XRD_TIMEOUT" in record["seen"]
    assert "SECRET_TOKEN" not in record["seen"]


def test_a_payload_without_record_is_recorded_with_its_reason():
    code = "import sys; print('boom happened', file=sys.stderr); sys.exit(3)"
    record = run_payload(HOST, python(code))
    assert record["error"] == "payload exited 3 without a run record: boom happened"
    assert record["exit_status"] == 3
    assert record["runtime"] == "none"


def test_a_payload_that_hangs_is_recorded_as_timed_out():
    record = run_payload(HOST, python("import time; time.sleep(5)"), timeout=0.5)
    assert record["error"] == "payload timed out after 0.5 s"


def test_parse_record_takes_the_last_json_object_line():
    stdout = 'Info in <TFile>: chatter\n{"events": 1}\nnot json\n{"events": 2}\n[1, 2]\n'
    assert parse_record(stdout) == {"events": 2}
    assert parse_record("{broken\n") is None
    assert parse_record("") is None
