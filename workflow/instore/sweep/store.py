"""Run records on disk: an append-only log, and the tidy Parquet tables derived from it.

Each finished point is appended to ``records.jsonl`` in one ``write`` and fsynced, so a sweep
killed at any moment loses at most the point in flight. The Parquet tables are rebuilt from the
log (written to a temporary name, then renamed), so they are never half-written either.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from instore.errors import InstoreError
from instore.vocabulary import SECTIONS

# Nested parts of a record, kept as JSON strings in the tables.
# (A replay's record adds the recording's figures, its command and URLs.)
NESTED = ("read_size_hist", "counters", "provenance", "conditions", "recorded", "skipped_recorded",
          "xrdreplay", "command", "urls")  # fmt: skip


class RecordStore:
    def __init__(self, results: Path, site: str) -> None:
        self.dir = results / site
        self.log = self.dir / "records.jsonl"

    def records(self) -> list[dict[str, Any]]:
        """Every complete line of the log (a line torn by a crash is ignored)."""
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def current(self) -> list[dict[str, Any]]:
        """The records the section tables hold: the latest complete measurement of each point
        the study that wrote them asked for. The log also keeps other profiles' points and
        measurements a rerun superseded (a real site's quick profile before its full one),
        which a fit or a check of the study's points must not take as the study's. Before any
        table is written, every record."""
        keys = self.table_keys()
        records = self.records()
        if keys is None:
            return records
        return [records[i] for i in _latest_complete(records) if records[i]["point_key"] in keys]

    def table_keys(self) -> set[str] | None:
        """The points the section tables hold (None: no table written yet)."""
        tables = [self.dir / f"{section}.parquet" for section in SECTIONS]
        tables = [t for t in tables if t.exists()]
        if not tables:
            return None
        return {k for t in tables for k in pd.read_parquet(t, columns=["point_key"])["point_key"]}

    def done_keys(self, records: list[dict[str, Any]] | None = None) -> set[str]:
        """Points whose every job has a record, in at least one measurement (``records``: the
        log's, where the caller has read it already)."""
        records = self.records() if records is None else records
        return {records[i]["point_key"] for i in _latest_complete(records)}

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Append one point's records in a single write, then fsync."""
        append_jsonl(self.log, records, "the last point's records")

    def table(self) -> pd.DataFrame:
        """One row per job of the latest complete measurement of every point."""
        return _complete(self.records())

    def write_tables(
        self, sections: Iterable[str], keys: Collection[str] | None = None
    ) -> dict[str, Path]:
        """``<section>.parquet`` for each section (an empty table when nothing was measured),
        holding only the points ``keys`` when given: the log keeps every point ever measured
        (another profile's, other files'), a table shows the study that asked for it."""
        table = self.table()
        if keys is not None and len(table):
            table = table[table["point_key"].isin(set(keys))]
        written = {}
        for section in sections:
            part = table[table["section"] == section] if len(table) else table
            written[section] = _write_parquet(
                part.reset_index(drop=True), self.dir / f"{section}.parquet"
            )
        return written


def append_jsonl(path: Path, records: Iterable[dict[str, Any]], what: str) -> None:
    """Append JSON lines to a log in a single write, then fsync (a line torn by an earlier
    crash stays on its own line); a full disk is one line naming ``what`` was lost."""
    data = "".join(json.dumps(r, default=str) + "\n" for r in records).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a line torn by a crash or a full disk stays on its own
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(errno.ENOSPC, "short write")
        os.fsync(fd)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InstoreError(
                f"the results disk is full: {what} could not be written to {path}",
                f"free space under {path.parent} and rerun: measured points are kept, only missing ones run",
            ) from err
        raise
    finally:
        os.close(fd)


# The columns even an empty table has, so readers can select them without a special case.
EMPTY_COLUMNS = ("point_key", "section", "measured_at", "jobs", "job", "status")


def failed_jobs(table: Path) -> int:
    """Jobs recorded as failed in one section table (0 for a section measured nowhere)."""
    status = pd.read_parquet(table, columns=["status"])["status"]
    return int((status != "ok").sum())


def _complete(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per job of the latest complete measurement of every point, nested parts as JSON."""
    if not records:
        return pd.DataFrame(columns=list(EMPTY_COLUMNS))
    df = pd.DataFrame.from_records(records).iloc[_latest_complete(records)]
    for col in NESTED:
        if col in df:
            df[col] = df[col].map(
                lambda v: v if v is None or isinstance(v, str) else json.dumps(v, sort_keys=True)
            )
    return df


def _latest_complete(records: list[dict[str, Any]]) -> list[int]:
    """Positions in ``records`` of the latest complete measurement of each point: a measurement
    is complete when it has a record for each of its ``jobs``, and the latest one wins."""
    if not records:
        return []
    df = pd.DataFrame(
        {c: [r.get(c) for r in records] for c in ("point_key", "measured_at", "jobs")}
    )
    sizes = df.groupby(["point_key", "measured_at"])["jobs"].transform("size")
    df = df[sizes == df["jobs"]]
    latest = df.groupby("point_key")["measured_at"].transform("max")
    return df.index[df["measured_at"] == latest].tolist()


def _write_parquet(df: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return path


def records_older_than(
    results: Path, site: str, sections: Collection[str], inputs: Iterable[Path]
) -> bool:
    """True when these sections already have records and the newest is older than one of
    ``inputs`` (site file, data, calibration): those were measured under other conditions, so
    the sweep measures again. With no records, or records newer than every input, it resumes."""
    times = [
        _utc(pd.Timestamp(r["start_time"]))
        for r in RecordStore(results, site).records()
        if r.get("section") in sections and r.get("start_time")
    ]
    changed = [pd.Timestamp(Path(p).stat().st_mtime, unit="s", tz="UTC") for p in inputs]
    return bool(times) and bool(changed) and max(times) < max(changed)


def _utc(time: pd.Timestamp) -> pd.Timestamp:
    """Record times carry UTC; one without a zone is read as UTC."""
    return time.tz_localize("UTC") if time.tzinfo is None else time
