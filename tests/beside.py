"""Run a test session beside the integration tests as background work that yields every core
they want (``make test``): ``python -m tests.beside --lock L --log F -- COMMAND...``.

Nice alone does not do it here: with the kernel's autogroups (``sched_autogroup_enabled``), a
process's nice weighs only against its own session's, and the sweeps, servers and builds each
run in a session of their own. So the command runs in a CPU cgroup of the least weight
(``cpu.shares`` 2, against 1024 for everything else), which holds all its descendants whatever
session they start; where no such cgroup can be made (not root, no cgroup-v1 CPU controller),
in a session whose autogroup has nice 19, in the idle scheduling class. It holds ``L`` (flock)
while it runs, which the ``quiet`` integration tests wait for (tests/conftest.py); its output
goes to ``F``. Ctrl-C or SIGTERM is passed to it, and the cgroup is removed however it ends."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

CPU_CGROUPS = Path("/sys/fs/cgroup/cpu")
LEAST_SHARES = 2  # the least cgroup v1 takes


def lowest_priority() -> None:
    """In a child, after setsid: nice 19, and its session's autogroup nice 19 too (the
    background builds of tests/conftest.py take this alone)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text("19")
    os.nice(19)


def _lowest_in_session() -> None:
    """In the child, after setsid: ``lowest_priority``, and itself in the idle class."""
    lowest_priority()
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


@contextlib.contextmanager
def least_weight_cgroup() -> Iterator[Path | None]:
    """A CPU cgroup of the least weight, removed on exit once its tasks are gone (None where
    none can be made)."""
    group = CPU_CGROUPS / f"instore-tests-beside-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cpu.shares").write_text(str(LEAST_SHARES))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        yield None
        return
    try:
        yield group
    finally:
        _empty_and_remove(group)


def _empty_and_remove(group: Path) -> None:
    """SIGKILL whatever of the session outlived it, then remove the group."""
    for _ in range(50):
        pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        group.rmdir()


def run_beside(command: list[str], lock: Path, log: Path) -> int:
    """Run ``command`` as above; its exit status (128 + N for a signal N)."""
    with lock.open("w") as held, log.open("wb") as out, least_weight_cgroup() as group:
        fcntl.flock(held, fcntl.LOCK_EX)

        def enter() -> None:
            # a background job of make's shell starts with SIGINT ignored, which the command
            # would inherit: Ctrl-C, passed on, must reach it (pytest then tears down)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if group is None:
                _lowest_in_session()
            else:
                (group / "cgroup.procs").write_text(str(os.getpid()))
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))

        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=enter)  # fmt: skip

        def forward(signum: int, _frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, forward)
        code = proc.wait()
    return code if code >= 0 else 128 - code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.beside", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--lock", type=Path, required=True, help="held (flock) while it runs")
    parser.add_argument("--log", type=Path, required=True, help="the command's output")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    return run_beside(command, args.lock, args.log)


if __name__ == "__main__":
    sys.exit(main())
