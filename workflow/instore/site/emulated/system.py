"""Running system programs and stopping our own processes, with errors a user can act on."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from instore.errors import InstoreError


def require_root(what: str) -> None:
    """Emulation changes namespaces, mounts and cgroups: say so before trying."""
    if os.geteuid() != 0:
        raise InstoreError(f"{what} needs root", "run it as root (CI and the study machine are)")


def in_netns(netns: str, cmd: Sequence[str]) -> list[str]:
    """Wrap a command to run in a named network namespace but the host's mount namespace.

    ``ip netns exec`` would give the program a private mount namespace, hiding later mounts.
    """
    return ["nsenter", f"--net=/run/netns/{netns}", "--", *cmd]


def run(
    cmd: Sequence[str], *, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a program; on failure raise an InstoreError carrying its stderr on one line."""
    try:
        proc = subprocess.run(
            list(cmd), capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as err:
        raise InstoreError(
            f"{cmd[0]} is not installed", "run `make system` (envs/apt-packages.txt)"
        ) from err
    if check and proc.returncode != 0:
        detail = " ".join((proc.stderr or proc.stdout).split())[:400]
        raise InstoreError(
            f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {detail}",
            "see the message; `instore site down --all` removes a half-built site",
        )
    return proc


def cmdline(pid: int) -> str:
    """The command line of a live process, or '' if it is gone. A threaded server whose main
    thread has ended (XRootD's, while its other threads shut down) shows an empty one for the
    process: it is read through a thread that still runs."""
    line = _cmdline_at(Path(f"/proc/{pid}"))
    for task, _ in [] if line else _threads(pid):
        line = _cmdline_at(task)
        if line:
            break
    return line


def _cmdline_at(proc: Path) -> str:
    try:
        raw = (proc / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def _stat_fields(stat: Path) -> list[str]:
    """A /proc stat file's fields after the command name (the first is the state letter)."""
    return stat.read_text().rsplit(")", 1)[1].split()


def _threads(pid: int) -> list[tuple[Path, str]]:
    """Each thread of ``pid`` (its /proc task directory) with its state letter."""
    out = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out.append((task, _stat_fields(task / "stat")[0]))
        except (OSError, IndexError):
            continue
    return out


def alive(pid: int) -> bool:
    """True while any thread of ``pid`` runs (a zombie or a dead process is not alive). Its
    main thread alone is not enough: a threaded server's can end first while the others
    still hold its listening socket, and a successor started then finds the port in use."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return any(state not in ("Z", "X") for _, state in _threads(pid))


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (None: no such process). Together with
    the pid it names one process: a pid reused after a crash has a later start time."""
    try:
        # field 22 of proc(5): _stat_fields' first is field 3, the state
        return int(_stat_fields(Path(f"/proc/{pid}/stat"))[19])
    except (OSError, IndexError, ValueError):
        return None


def running(pid: int, expect: str) -> bool:
    """True while our process ``pid`` runs, its command line still containing ``expect``."""
    return alive(pid) and expect in cmdline(pid)


def stop_pid(pid: int, expect: str, grace_s: float = 5.0) -> bool:
    """Stop one process we started, by PID, only if its command line still contains ``expect``.

    The check guards against a recycled PID after a crash. Returns True if it was ours and is gone.
    """
    if expect not in cmdline(pid):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
            while alive(pid):
                time.sleep(0.02)
    except ProcessLookupError:
        pass
    reap(pid)
    return True


def reap(pid: int) -> None:
    """Collect the exit status if the process was our child, so no zombie stays."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str, fix: str) -> None:
    """Poll until ``predicate()`` is true or raise an InstoreError saying what never happened."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise InstoreError(f"{what} did not happen within {timeout_s:g} s", fix)


def instance_log(log: Path, instance: str) -> Path:
    """Where xrootd started with ``-l log -n instance`` writes its log: in a directory named
    after the instance, beside the path it was given."""
    return log.parent / instance / log.name


STDERR = "stderr.log"  # a server's stderr, beside its config: what it says before its log opens
# Words of the lines of an xrootd log that say why it stopped, the likeliest first
_CAUSE = ("error", "fail", "unable", "denied", "in use", "invalid", "not ")


def _said(path: Path) -> str | None:
    """The line of a server's log (or stderr) that says why it stopped, else its last."""
    text = path.read_text(errors="replace") if path.is_file() else ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    cause = next((ln for word in _CAUSE for ln in reversed(lines) if word in ln.lower()), None)
    return (cause or lines[-1])[-300:] if lines else None


def exited_at_start(
    what: str, log: Path, status: int | None = None, stderr: Path | None = None
) -> InstoreError:
    """A server that exited at start, with its exit status and the line of its log that says
    why (or of its stderr, where it stopped before opening its log): both go with the site's
    directory when the site is torn down."""
    if status is not None and status < 0:  # a signal: a crash, whatever its log said last
        return _crashed(what, log, -status)
    exit_ = f" (exit status {status})" if status is not None else ""
    if (line := _said(log)) is not None:
        said = f": its log says {line!r}"
    elif stderr is not None and (line := _said(stderr)) is not None:
        said = f" before writing its log: it said {line!r}"
    else:
        said = " (it wrote no log and nothing on stderr)"
    return InstoreError(
        f"{what} exited at start{exit_}{said}",
        f"its log {log} is removed with the site; `instore site up SITE` leaves it to read",
    )


def _crashed(what: str, log: Path, signum: int) -> InstoreError:
    """A server killed by a signal at start: its log's last line is quoted as what it did
    last, not as a cause (a seen crash's log ended on a warning about its home directory)."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    text = log.read_text(errors="replace") if log.is_file() else ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    last = f"; the last line of its log: {lines[-1][-300:]!r}" if lines else ""
    return InstoreError(
        f"{what} crashed at start ({name}){last}",
        f"a crash of the server itself, not of its configuration: start it again; its log {log} "
        "is removed with the site; `instore site up SITE` leaves it to read",
    )
