"""The trace: XRootD's recorder CSV plus the job's times and provenance, in one directory.

``xrdcl.csv`` is what XrdClRecorder writes (the ROOT wheel's 5.x and PyPI xrootd's 6.x write
the same seven columns: object id, operation, start time, arguments ending in the time-out, end
time, status, response), with every credential removed, so Debian's ``xrdreplay`` reads it too.
``trace.json`` holds the job's wall and CPU time, exit code, events (when the job said how many
it processed; older traces have none), command and provenance. Parsing
refuses what is not a trace in one line, naming the cause and the fix; stripping runs on every
line before anything is written, so no credential reaches a trace.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from instore.errors import InstoreError

TRACE_VERSION = 1
CSV_NAME = "xrdcl.csv"
META_NAME = "trace.json"
COLUMNS = 7
COLUMN_NAMES = "object id, operation, start, arguments;timeout, end, status, response"
# Every operation XrdClRecorder (XrdClAction.hh) writes; the first six are replayed.
REPLAYED_OPS = ("Open", "Close", "Stat", "Read", "PgRead", "VectorRead")
KNOWN_OPS = (*REPLAYED_OPS, "Write", "PgWrite", "VectorWrite", "Sync", "Truncate", "Fcntl")
READ_OPS = ("Read", "PgRead", "VectorRead")
REDACTED = "REDACTED"
RECORD_HINT = "record it with `instore record -- COMMAND...`"
NEWER_HINT = (
    "record with the XRootD recorder of the ROOT wheel or PyPI xrootd pinned in "
    "envs/requirements.lock, or teach instore.replay.trace the new format"
)

# A URL's query or fragment (XRootD CGI, presigned URLs): from "?" or "#" to the end of the
# URL, which in a recorder line ends at a ";" or "," separator or a quote.
_URL_QUERY = re.compile(r"([a-z][a-z0-9+.-]*://[^\s?#\"',;]*)[?#][^\s\"',;]*", re.IGNORECASE)
_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)[^/@\s\"',;]*@", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"((?:authz|access_token|bearer_token|token|password|passwd|secret|signature|credential)=)"
    r"[^&\s\"',;]*",
    re.IGNORECASE,
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_SECRET_FLAG = re.compile(r"^--?[\w.-]*(?:token|authz|password|passwd|secret)[\w.-]*$", re.I)


def strip_credentials(text: str) -> str:
    """``text`` without anything a URL or an argument can carry as a credential: user info,
    the whole query of every URL (``authz=``, ``access_token=``, any CGI), ``name=value``
    pairs named like secrets, and JSON Web Tokens wherever they stand."""
    text = _USERINFO.sub(r"\1", text)
    text = _URL_QUERY.sub(r"\1", text)
    text = _SECRET_VALUE.sub(rf"\1{REDACTED}", text)
    return _JWT.sub(REDACTED, text)


def strip_url(url: str) -> str:
    """The URL with no user info, query or fragment (a local path: unchanged but for those)."""
    parts = urlsplit(url)
    if not parts.scheme:
        return strip_credentials(url.split("?", 1)[0].split("#", 1)[0])
    netloc = parts.netloc.rpartition("@")[2]
    return strip_credentials(urlunsplit((parts.scheme, netloc, parts.path, "", "")))


def strip_command(argv: Sequence[str]) -> list[str]:
    """The command as a trace keeps it: the value after a secret-named option (``--token X``,
    ``--password=X``) redacted, and every argument stripped like a URL."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _SECRET_FLAG.match(name):
            out.append(f"{name}={REDACTED}" if eq else arg)
            hide_next = not eq
            continue
        out.append(strip_credentials(arg))
    return out


def split_open_args(args: str) -> tuple[str, str]:
    """An Open line's arguments are ``url;flags;mode;timeout``: the URL, and the rest."""
    parts = args.rsplit(";", 3)
    if len(parts) < 4:
        return args, ""
    return parts[0], ";" + ";".join(parts[1:])


def sanitize_row(row: Sequence[str]) -> list[str]:
    """One recorder row with its credentials removed: the Open URL cut to scheme, host and
    path, then every field stripped (error messages can quote URLs too)."""
    fields = list(row)
    if len(fields) >= 4 and fields[1] == "Open":
        url, rest = split_open_args(fields[3])
        fields[3] = strip_url(url) + rest
    return [strip_credentials(f) for f in fields]


def sanitize_line(line: str) -> str:
    """One raw recorder line (no newline) as the trace keeps it, quoted like the recorder's."""
    rows = list(csv.reader([line]))
    if len(rows) != 1:
        return strip_credentials(line)
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="").writerow(sanitize_row(rows[0]))
    return out.getvalue()


@dataclass(frozen=True)
class Request:
    """One recorded operation on one opened file, as the replay issues it."""

    op: str
    file: int  # index into Trace.files
    handle: int  # which open of a file (the recorder's object), numbered in the trace
    start: float  # Unix time the client issued it
    end: float  # Unix time its response came
    chunks: tuple[tuple[int, int], ...] = ()  # (offset, size) asked, for reads
    nbytes: int = 0  # bytes the storage returned
    force: bool = False  # a Stat sent to the server; False: answered from the client's cache

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class ThinkTimes:
    """The job's time away from storage, from the recording: ``before[i]`` is the gap between
    the latest response before request i and its issue (CPU between reads; 0 for requests the
    client issued while another was still in flight)."""

    lead_s: float  # the job's start to its first request (start-up: imports, JIT, local work)
    before: tuple[float, ...]
    tail_s: float  # its last response to its end
    overlapping: int  # requests issued while an earlier one was in flight

    @property
    def between_s(self) -> float:
        return sum(self.before)

    @property
    def total_s(self) -> float:
        return self.lead_s + self.between_s + self.tail_s


def think_times(
    requests: Sequence[Request], job_start: float | None = None, job_end: float | None = None
) -> ThinkTimes:
    """Think times of requests sorted by start; ``job_start``/``job_end`` (Unix times) add the
    lead-in and the tail (none for a bare recorder CSV)."""
    before: list[float] = []
    overlapping = 0
    last_end: float | None = None
    for r in requests:
        if last_end is None:
            before.append(0.0)
            last_end = r.end
            continue
        gap = r.start - last_end
        overlapping += gap < 0
        before.append(max(0.0, gap))
        last_end = max(last_end, r.end)
    lead = tail = 0.0
    if requests and job_start is not None:
        lead = max(0.0, requests[0].start - job_start)
    if last_end is not None and job_end is not None:
        tail = max(0.0, job_end - last_end)
    return ThinkTimes(lead, tuple(before), tail, overlapping)


@dataclass(frozen=True)
class Trace:
    """A parsed trace: the files it opened, its replayable requests sorted by start, what it
    recorded but a replay does not issue, and the job's metadata (empty for a bare CSV)."""

    path: Path
    csv_path: Path
    files: tuple[str, ...]
    requests: tuple[Request, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def think(self) -> ThinkTimes:
        return think_times(self.requests, self.meta.get("start_unix"), self.meta.get("end_unix"))

    def reads(self) -> list[Request]:
        return [r for r in self.requests if r.op in READ_OPS]

    def events(self) -> int | None:
        """The events the recorded job processed; None when the trace does not know them."""
        events = self.meta.get("events")
        return events if isinstance(events, int) and not isinstance(events, bool) else None

    def progress(self) -> list[float]:
        """How much of one pass's data the job had read once request i had completed: the
        bytes of the reads up to i over the bytes of all its reads. A replay cut part-way
        stands for the events whose data it has read, never for the job's start-up (imports,
        opening) or its think time: counted along the timeline, 64 clients that each read a
        sixth of a pass were counted as 0.72 of one. A trace that reads nothing: 0 until its
        pass is complete."""
        sizes = [r.nbytes if r.op in READ_OPS else 0 for r in self.requests]
        total = sum(sizes)
        out, done = [], 0
        for size in sizes:
            done += size
            out.append(done / total if total else 0.0)
        return out

    def summary(self) -> dict[str, Any]:
        """What the recording itself says: the job's times and its read figures."""
        reads = self.reads()
        think = self.think()
        span = max(r.end for r in self.requests) - self.requests[0].start if self.requests else 0.0
        keys = ("wall_s", "user_s", "sys_s", "cpu_s", "exit_code")
        return {
            **{k: self.meta.get(k) for k in keys},
            "io_span_s": span,
            "bytes_read": sum(r.nbytes for r in reads),
            "read_calls": len(reads),
            "vector_reads": sum(r.op == "VectorRead" for r in reads),
            "think_s": think.total_s,
            "think_lead_s": think.lead_s,
            "think_tail_s": think.tail_s,
            "overlapping_requests": think.overlapping,
            "files": len(self.files),
            "events": self.events(),
            "recorded_on": self.recorded_on(),
        }

    def recorded_on(self) -> str | None:
        """The site the job was recorded on (``instore record --site``), else None."""
        where = self.meta.get("recorded_on")
        return where.get("site") if isinstance(where, dict) else None


def _fail(where: str, lineno: int, problem: str, fix: str) -> InstoreError:
    return InstoreError(f"{where}: line {lineno}: {problem}", fix)


def _ints(values: Iterable[str], where: str, lineno: int) -> list[int]:
    try:
        return [int(v) for v in values]
    except ValueError as err:
        raise _fail(where, lineno, f"a malformed argument ({err})", RECORD_HINT) from err


def parse_csv(text: str, where: str) -> tuple[list[str], list[Request], dict[str, int]]:
    """The files, the replayable requests (sorted by start) and the skipped operations of a
    recorder CSV; an InstoreError naming the line for anything else."""
    if not text.strip():
        raise InstoreError(
            f"{where}: empty: the job made no XRootD requests",
            "record a job that reads over root:// (local and http reads are not recorded)",
        )
    if not text.endswith("\n"):
        raise InstoreError(
            f"{where}: truncated: the last line is cut off ({text.splitlines()[-1][:60]!r})",
            "copy the whole trace again, or record the job again",
        )
    files: list[str] = []
    requests: list[Request] = []
    skipped: Counter[str] = Counter()
    open_now: dict[str, tuple[int, int] | None] = {}  # recorder object -> (file, handle)
    handles = 0
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row:
            continue
        op = row[1] if len(row) > 1 else ""
        if len(row) != COLUMNS:
            if len(row) > COLUMNS and op in KNOWN_OPS:
                raise _fail(where, lineno, f"{len(row)} columns where XrdClRecorder writes "
                            f"{COLUMNS} ({COLUMN_NAMES}): a newer recorder's format", NEWER_HINT)  # fmt: skip
            raise _fail(where, lineno, f"{len(row)} column(s), not an XrdClRecorder trace "
                        f"({COLUMNS}: {COLUMN_NAMES})", RECORD_HINT)  # fmt: skip
        obj, _, t0, args, t1, status, response = row
        try:
            int(obj)
            start, end = float(t0), float(t1)
        except ValueError as err:
            raise _fail(where, lineno, f"not an XrdClRecorder line ({err})", RECORD_HINT) from err
        if op not in KNOWN_OPS:
            raise _fail(where, lineno, f"operation {op!r} is unknown to this parser "
                        f"(it knows {', '.join(KNOWN_OPS)}): a newer recorder", NEWER_HINT)  # fmt: skip
        if end < start:
            raise _fail(where, lineno, "ends before it starts", RECORD_HINT)
        ok = status.startswith("[SUCCESS]")
        if op == "Open":
            url = split_open_args(args)[0]
            if not ok:
                open_now[obj] = None
                skipped["failed Open"] += 1
                continue
            if url not in files:
                files.append(url)
            handles += 1
            open_now[obj] = (files.index(url), handles)
            requests.append(Request("Open", files.index(url), handles, start, end))
            continue
        if obj not in open_now:
            raise _fail(where, lineno, f"{op} on a file the trace never opened (cut at its "
                        "start, or lines of several traces mixed)", RECORD_HINT)  # fmt: skip
        bound = open_now.pop(obj) if op == "Close" else open_now[obj]
        if bound is None or not ok or op not in REPLAYED_OPS:
            skipped[op if ok else f"failed {op}"] += 1
            continue
        file, handle = bound
        parts = args.split(";")[:-1]  # the last argument is the time-out
        reply = response.split(";")[0]
        if op in ("Read", "PgRead"):
            offset, size = _ints(parts[:2], where, lineno)
            got = _ints([reply], where, lineno)[0] if reply else size
            requests.append(Request(op, file, handle, start, end, ((offset, size),), got))
        elif op == "VectorRead":
            values = _ints(parts, where, lineno)
            if not values or len(values) % 2:
                raise _fail(where, lineno, "a vector read without offset;size pairs", RECORD_HINT)
            chunks = tuple(zip(values[::2], values[1::2], strict=True))
            got = _ints([reply], where, lineno)[0] if reply else sum(s for _, s in chunks)
            requests.append(Request(op, file, handle, start, end, chunks, got))
        elif op == "Stat":
            requests.append(Request(op, file, handle, start, end, force=parts[:1] == ["true"]))
        else:
            requests.append(Request(op, file, handle, start, end))
    if not files:
        raise InstoreError(f"{where}: no file was opened successfully in it", RECORD_HINT)
    requests.sort(key=lambda r: r.start)
    return files, requests, dict(skipped)


def read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InstoreError(f"{path}: not a trace's metadata ({err})", RECORD_HINT) from err
    if not isinstance(meta, dict) or "trace_version" not in meta:
        raise InstoreError(f"{path}: not a trace's metadata (no trace_version)", RECORD_HINT)
    if int(meta["trace_version"]) > TRACE_VERSION:
        raise InstoreError(
            f"{path}: trace version {meta['trace_version']}, newer than this instore reads "
            f"({TRACE_VERSION})",
            "replay it with the instore that recorded it (its version is in the trace's provenance)",
        )
    return meta


def load_trace(path: str | Path) -> Trace:
    """A trace directory (``xrdcl.csv`` and ``trace.json``), its ``trace.json``, or a bare
    recorder CSV (no job times: no lead-in, tail or CPU efficiency)."""
    path = Path(path)
    if path.is_dir():
        csv_path, meta_path = path / CSV_NAME, path / META_NAME
        if not csv_path.exists():
            raise InstoreError(f"{path}: not a trace: it holds no {CSV_NAME}", RECORD_HINT)
    elif path.suffix == ".json":
        csv_path, meta_path = path.parent / CSV_NAME, path
    else:
        csv_path, meta_path = path, None
    meta = read_meta(meta_path) if meta_path is not None and meta_path.exists() else {}
    try:
        text = csv_path.read_bytes().decode()
    except FileNotFoundError as err:
        raise InstoreError(f"{csv_path}: no such trace", RECORD_HINT) from err
    except UnicodeDecodeError as err:
        raise InstoreError(f"{csv_path}: not a trace (not text)", RECORD_HINT) from err
    files, requests, skipped = parse_csv(text, str(csv_path))
    return Trace(path, csv_path, tuple(files), tuple(requests), skipped, meta)


def write_trace(out: Path, lines: Iterable[str], meta: dict[str, Any]) -> Path:
    """Write a trace directory from already sanitized CSV lines and the job's metadata."""
    out.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{line}\n" for line in lines)
    (out / CSV_NAME).write_text(body)
    (out / META_NAME).write_text(json.dumps({"trace_version": TRACE_VERSION, **meta}, indent=1))
    return out
