"""`instore record -- COMMAND...`: run any analysis with XRootD's recorder on in both clients.

Both XRootD clients read one variable, ``XRD_PLUGIN``, and XRootD's plug-in loader
(XrdOucPinLoader) puts its own major version into the library name it is given: with
``XRD_PLUGIN=DIR/libXrdClRecorder.so`` ROOT's client (5.x) loads ``DIR/libXrdClRecorder-5.so``
and PyPI xrootd's (6.x) ``DIR/libXrdClRecorder-6.so``. So DIR holds links to the ROOT wheel's
and PyPI xrootd's recorder and every process of the job gets its own client's recorder (tried
here: a PyROOT and an uproot read each wrote their lines; the 5.x recorder alone records nothing
for uproot). ``XRD_RECORDERPATH`` is a FIFO this process drains, stripping credentials line by
line, so the recorder's raw lines (tokens in URLs included) never reach a disk, and the several
processes of one job append instead of truncating each other's file (the recorder opens it with
O_TRUNC). Which recorder each process loaded is read from its memory map while it runs.

The job's stdout passes through this process to ours unchanged (through a pipe: a job that
buffers its output when it is not a terminal prints it in larger pieces), so the trace learns
how many events the job processed: the ``events`` of the last line it prints that is a JSON
object with an integer ``events`` key (what analyses/ print as their result), unless given.

Only XRootD requests are recorded: local (POSIX) and http(s) reads do not pass through XrdCl.

``warm_up`` runs the job first, unrecorded, as a worker node that has run it before holds
its software (a site's CVMFS cache, the page cache): measured here, a recording made with
the software cold had 11% more CPU and 18% more wall (RDataFrame) than the same job warm, so
its think times, and every replay of it, were too long.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import socket
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from instore import __version__
from instore.errors import InstoreError
from instore.record import XROOTD_PACKAGE
from instore.replay.trace import sanitize_line, strip_command, write_trace
from instore.rootenv import root_version

RECORDER_GLOB = "libXrdClRecorder-*.so"
_RECORDER_NAME = re.compile(r"libXrdClRecorder-(\d+)\.so$")
NOT_RECORDED = (
    "local (POSIX) and http(s) reads are not recorded: they do not pass through XrdCl, and "
    "tracing system calls (strace) is not part of instore's set-up and would slow the very "
    "gaps between reads that a replay reproduces. The root:// reads recorded here replay over "
    "every protocol (instore replay --protocol)."
)

EVENTS_CONVENTION = (
    'the last line the job prints on stdout that is a JSON object with an integer "events" '
    "key (as analyses/agc_ttbar_*.py print their result)"
)


def recorder_libraries() -> dict[str, Path]:
    """XrdCl major version -> its recorder, from the installed ROOT wheel and PyPI xrootd
    (found without importing either: their clients cannot share a process)."""
    found: dict[str, Path] = {}
    for package, sub in (("ROOT", "lib"), ("pyxrootd", "")):
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            continue
        for lib in sorted((Path(spec.origin).parent / sub).glob(RECORDER_GLOB)):
            match = _RECORDER_NAME.search(lib.name)
            if match:
                found.setdefault(match.group(1), lib.resolve())
    if not found:
        raise InstoreError(
            "no XRootD recorder (libXrdClRecorder-N.so) in the ROOT wheel or PyPI xrootd",
            "install the environment with `make venv` (envs/requirements.lock has both)",
        )
    return found


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


class _Drain(threading.Thread):
    """Reads the recorder's FIFO until every writer has closed it; keeps each line sanitized."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True, name="recorder-drain")
        self.fd = fd
        self.lines: list[str] = []
        self._rest = b""

    def run(self) -> None:
        while chunk := os.read(self.fd, 1 << 16):
            self.feed(chunk)

    def feed(self, chunk: bytes) -> None:
        *complete, self._rest = (self._rest + chunk).split(b"\n")
        self.lines.extend(sanitize_line(c.decode(errors="replace")) for c in complete if c)

    def finish(self) -> None:
        """Keep a last line the writer never ended (the trace's parser then calls it cut)."""
        if self._rest:
            self.lines.append(sanitize_line(self._rest.decode(errors="replace")))
            self._rest = b""


def events_in_line(line: bytes | str) -> int | None:
    """The integer ``events`` of one stdout line that is a JSON object (None for any other
    line): how a job tells the trace how many events it processed."""
    text = line.strip()
    if not text.startswith(b"{" if isinstance(text, bytes) else "{"):
        return None  # most lines: not worth a JSON parse
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    events = obj.get("events") if isinstance(obj, dict) else None
    if isinstance(events, int) and not isinstance(events, bool) and events >= 0:
        return events
    return None


class _Tee(threading.Thread):
    """Passes the job's stdout on unchanged, byte for byte, and keeps the events of the last
    line stating them. A closed stdout of ours (a pipe's reader gone) stops the passing on,
    not the reading: the job is never blocked on a full pipe."""

    def __init__(self, fd: int, out: BinaryIO) -> None:
        super().__init__(daemon=True, name="record-stdout")
        self.fd, self.out = fd, out
        self.events: int | None = None
        self._rest = b""
        self._passing = True

    def run(self) -> None:
        while chunk := os.read(self.fd, 1 << 16):
            self.pass_on(chunk)
            self.feed(chunk)

    def pass_on(self, chunk: bytes) -> None:
        if not self._passing:
            return
        try:
            self.out.write(chunk)
            self.out.flush()
        except (OSError, ValueError):  # broken pipe, or a stream closed under us
            self._passing = False

    def feed(self, chunk: bytes) -> None:
        *complete, self._rest = (self._rest + chunk).split(b"\n")
        for line in complete:
            self._see(line)

    def finish(self) -> None:
        """A last line the job never ended counts too."""
        self._see(self._rest)
        self._rest = b""

    def _see(self, line: bytes) -> None:
        found = events_in_line(line)
        if found is not None:
            self.events = found


class _MapWatch(threading.Thread):
    """Which recorder libraries the job's processes mapped, polled from /proc while it runs."""

    def __init__(self, pid: int, period_s: float = 0.2) -> None:
        super().__init__(daemon=True, name="recorder-watch")
        self.pid = pid
        self.period_s = period_s
        self.seen: set[str] = set()
        self.stop = threading.Event()

    def _tree(self) -> list[int]:
        pids, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*/children"):
                with contextlib.suppress(OSError):  # the process ended meanwhile
                    todo.extend(int(c) for c in task.read_text().split())
        return pids

    def poll(self) -> None:
        for pid in self._tree():
            try:
                maps = Path(f"/proc/{pid}/maps").read_text()
            except OSError:
                continue
            self.seen.update(
                line.split()[-1] for line in maps.splitlines() if "libXrdClRecorder-" in line
            )

    def run(self) -> None:
        while not self.stop.wait(self.period_s):
            self.poll()


def _fifo(directory: Path) -> tuple[Path, int, int]:
    """A FIFO, its read end and a write end of ours: the reader sees no end of file before
    this process closes its end, however often the job's processes open and close theirs."""
    path = directory / "recorder.fifo"
    os.mkfifo(path, 0o600)
    read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    write_fd = os.open(path, os.O_WRONLY)
    flags = fcntl.fcntl(read_fd, fcntl.F_GETFL)
    fcntl.fcntl(read_fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    assert stat.S_ISFIFO(os.fstat(read_fd).st_mode)
    return path, read_fd, write_fd


def _wait(pid: int) -> tuple[int, os.struct_rusage, bool]:
    """The child's status and resource use (its own and its reaped descendants'); Ctrl-C
    reaches the child too (one process group), so keep waiting for it to end."""
    interrupted = False
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            return status, usage, interrupted
        except KeyboardInterrupt:
            interrupted = True


def check_counts(events: int | None, warm_up: int) -> None:
    """Refuse a negative --events or --warm-up before anything runs (a site is brought up, a
    job runs)."""
    if events is not None and events < 0:
        raise InstoreError("events is negative", "give --events 0 or more (what the job processes)")
    if warm_up < 0:
        raise InstoreError("warm-up is negative", "give --warm-up 0 (none) or more runs")


def _spawn(command: list[str], env: dict[str, str] | os._Environ[str], stdout_fd: int) -> int:
    """Start ``command`` with its stdout on ``stdout_fd``; its PID, or one line on why not."""
    try:
        return os.posix_spawnp(command[0], command, env,
                               file_actions=[(os.POSIX_SPAWN_DUP2, stdout_fd, 1)])  # fmt: skip
    except OSError as err:
        raise InstoreError(
            f"cannot run {command[0]!r}: {err.strerror}", "check the command and its PATH"
        ) from err


def warm_up_runs(command: list[str], runs: int) -> list[dict[str, Any]]:
    """Run ``command`` ``runs`` times unrecorded, its stdout to our stderr (file descriptor 2:
    the job's events come from the recorded run); each run's wall, CPU and exit code. A run
    that fails stops the recording: its trace would be of a job that does not work."""
    done: list[dict[str, Any]] = []
    for k in range(runs):
        sys.stderr.flush()
        start = time.perf_counter()
        pid = _spawn(command, os.environ, 2)
        status, usage, interrupted = _wait(pid)
        code = os.waitstatus_to_exitcode(status)
        done.append({"wall_s": time.perf_counter() - start, "exit_code": code,
                     "cpu_s": usage.ru_utime + usage.ru_stime})  # fmt: skip
        if interrupted:  # Ctrl-C: the user stopped it, the command is not at fault
            raise InstoreError(
                f"interrupted during warm-up run {k + 1} of {runs}; nothing was recorded",
                "run instore record again when the job may run to its end",
            )
        if code != 0:
            raise InstoreError(
                f"warm-up run {k + 1} of the command exited with {code}; nothing was recorded",
                "run the command by hand to see why it fails",
            )
    return done


def _stdout_pipe() -> tuple[int, int]:
    """A pipe for the job's stdout (both ends closed on exec; the spawn dups the write end to
    the job's fd 1), after flushing ours so what we printed comes before the job's output."""
    sys.stdout.flush()
    return os.pipe()


def record(
    command: list[str],
    out: Path,
    drain_timeout_s: float = 10.0,
    where: dict[str, Any] | None = None,
    events: int | None = None,
    stdout: BinaryIO | None = None,
    warm_up: int = 0,
) -> tuple[int, Path]:
    """Run ``command`` with the recorder on; write the trace to ``out``. Returns the command's
    exit code and the trace directory. ``where``: the site and protocol it read, if known;
    ``events``: how many the job processes (None: read from its stdout, see EVENTS_CONVENTION);
    ``stdout``: where its output is passed on (default: ours); ``warm_up``: runs of the
    command before the recorded one, unrecorded, their output to stderr."""
    if not command:
        raise InstoreError("no command to record", "give it after --: instore record -- CMD...")
    check_counts(events, warm_up)
    if os.environ.get("XRD_PLUGIN"):
        raise InstoreError(
            f"XRD_PLUGIN is already set ({os.environ['XRD_PLUGIN']}); an XRootD client takes "
            "one default plug-in, and the recorder must be it",
            "unset XRD_PLUGIN for the recording",
        )
    libs = recorder_libraries()
    warm = warm_up_runs(command, warm_up)
    with tempfile.TemporaryDirectory(prefix="instore-record-") as tmp:
        tmpdir = Path(tmp)
        for major, lib in libs.items():
            (tmpdir / f"libXrdClRecorder-{major}.so").symlink_to(lib)
        fifo, read_fd, write_fd = _fifo(tmpdir)
        env = {
            **os.environ,
            "XRD_PLUGIN": str(tmpdir / "libXrdClRecorder.so"),
            "XRD_RECORDERPATH": str(fifo),
        }
        drain = _Drain(read_fd)
        drain.start()
        out_read, out_write = _stdout_pipe()
        start_unix, start = time.time(), time.perf_counter()
        try:
            pid = _spawn(command, env, out_write)
        except InstoreError:
            for fd in (write_fd, read_fd, out_write, out_read):
                os.close(fd)
            raise
        os.close(out_write)  # the job holds the only write end: its exit ends the output
        tee = _Tee(out_read, stdout or sys.stdout.buffer)
        tee.start()
        watch = _MapWatch(pid)
        watch.start()
        status, usage, interrupted = _wait(pid)
        wall = time.perf_counter() - start
        end_unix = time.time()
        watch.stop.set()
        watch.join()
        os.close(write_fd)
        drain.join(drain_timeout_s)
        # A process of the job that outlives it with the FIFO open: keep what came until now
        # (its thread, a daemon, reads on until that process ends; its end is not recorded).
        lingering = drain.is_alive()
        if not lingering:
            drain.finish()
            os.close(read_fd)
        lines = list(drain.lines)
        # As for the FIFO: a process outliving the job with its stdout open is not waited for
        tee.join(drain_timeout_s)
        if not tee.is_alive():
            tee.finish()
            os.close(out_read)
    exit_code = os.waitstatus_to_exitcode(status)
    source, found = ("--events", events) if events is not None else ("stdout", tee.events)
    meta: dict[str, Any] = {
        "command": strip_command(command),
        "exit_code": exit_code,
        "interrupted": interrupted,
        "start_unix": start_unix,
        "end_unix": end_unix,
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "cpu_note": "user+sys of the command and every descendant it waited for (os.wait4)",
        "software_warm": bool(warm),
        "warm_up": warm,
        "events": found,
        "events_from": source if found is not None else None,
        "events_note": f"--events N, otherwise {EVENTS_CONVENTION}",
        "operations": len(lines),
        "recorder": {
            "offered": {f"XrdCl {major}": str(lib) for major, lib in libs.items()},
            "loaded": sorted(watch.seen),
            "lingering_writer": lingering,
        },
        "not_recorded": NOT_RECORDED,
        "recorded_on": where,
        "provenance": {
            "instore": __version__,
            "root": root_version(),
            "root_wheel": _version("root"),
            XROOTD_PACKAGE: _version(XROOTD_PACKAGE),
            "host": socket.gethostname(),
            "kernel": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(),
        },
    }
    return exit_code, write_trace(out, lines, meta)
