"""What the kernel says this process spent: CPU, time queued for a CPU, bytes read."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcSnapshot:
    wall: float
    user: float
    sys: float
    run_delay_ns: int
    rchar: int
    minor_faults: int  # this process's (not its children's): pages it touched for the first time

    @classmethod
    def take(cls) -> ProcSnapshot:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # stage-in copies are the job's CPU too
        return cls(
            wall=time.perf_counter(),
            user=me.ru_utime + kids.ru_utime,
            sys=me.ru_stime + kids.ru_stime,
            run_delay_ns=run_delay_ns(),
            rchar=rchar(),
            minor_faults=me.ru_minflt,
        )


def run_delay_ns() -> int:
    """Time this process's threads spent runnable but waiting for a CPU (schedstat field 2)."""
    total = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # thread exited meanwhile, or schedstats unavailable
    return total


def rchar() -> int:
    """Bytes this process obtained through read-like syscalls (/proc/self/io)."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def join_cgroup(procs_file: str) -> None:
    """Move this process into a cgroup (the emulated site's blkio throttle) before reading."""
    Path(procs_file).write_text(str(os.getpid()))
