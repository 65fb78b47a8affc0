"""A job that dies before writing its record keeps what it was sent to read: a load point's
client cut by a server that died is still a row naming its URL (no client lost)."""

from __future__ import annotations

import pytest
from instore.study.grid import Point
from instore.sweep import jobs


def _job(point: Point, url: str, later: tuple[str, ...] = ()) -> jobs.Job:
    return jobs.Job("k", 0, 0, ("instore", "replay"), None, None, None, 10.0, retries=0,  # type: ignore[arg-type]
                    reads=jobs.job_reads(point, url, later))  # fmt: skip


@pytest.mark.parametrize("trace", [None, "agc-load"])
def test_a_job_that_dies_without_a_record_keeps_the_urls_it_was_sent(
    monkeypatch: pytest.MonkeyPatch, trace: str | None
) -> None:
    died = {"error": "the warm payload died while the job ran"}
    monkeypatch.setattr(jobs, "run_warm", lambda *a, **k: (dict(died), None, None))
    point = Point(section="load", protocol="xrootd", trace=trace)
    outcome = jobs.run_job(_job(point, "root://h//c-r3.root", ("root://h//c-r4.root",)), 0.0)
    assert outcome.payload["error"] == died["error"]
    if trace:
        assert outcome.payload["urls"] == ["root://h//c-r3.root"]
        assert outcome.payload["pass_urls"] == ["root://h//c-r4.root"]
    else:
        assert outcome.payload["url"] == "root://h//c-r3.root"


def test_a_record_the_job_wrote_is_kept_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    written = {"error": "Open failed", "urls": ["root://h//own.root"], "pass_urls": []}
    monkeypatch.setattr(jobs, "run_warm", lambda *a, **k: (dict(written), None, None))
    point = Point(section="load", protocol="xrootd", trace="agc-load")
    outcome = jobs.run_job(_job(point, "root://h//c-r3.root"), 0.0)
    assert outcome.payload == written
