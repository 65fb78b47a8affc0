"""What the worker and the storage side did during a point, from cumulative kernel counters
read just before its jobs start and just after they end: CPU of the host, of the XRootD
server and of the link emulator, the disk's busy time, requests and queue, and the link's
bytes and drops, and the connections the storage server's accept queue turned away. The load
section names the resource that gave out first from these.

Counters a site cannot see stay None: a real site shows only the worker's own CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from instore.site import roles

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Counters:
    """Cumulative counters at one instant (``at``: monotonic seconds)."""

    at: float
    host_busy_s: float
    host_total_s: float
    processes: dict[str, float] = field(default_factory=dict)  # role -> user+sys CPU seconds
    disk: tuple[int, int, int, int] | None = None  # reads, sectors read, io_ticks, in-queue ms
    link_bytes: int | None = None
    link_drops: int | None = None
    io_stall_us: int | None = None  # PSI: time at least one task waited on block I/O
    listen_overflows: int | None = None  # the storage server's network namespace (TcpExt)


def host_cpu() -> tuple[float, float]:
    """Busy and total CPU seconds of all cores since boot (/proc/stat; idle and iowait idle)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])  # guest time is already inside user and nice
    return (total - idle) / _TICK, total / _TICK


def io_stall_us() -> int | None:
    """Microseconds in which some task here waited on block I/O (/proc/pressure/io, "some"):
    the throttled emulated disk shows here even when the device itself is idle."""
    try:
        line = Path("/proc/pressure/io").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    return int(line.rsplit("total=", 1)[1])


def process_cpu(pid: int) -> float | None:
    """User+system CPU seconds of a process and its waited-for children (None: it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICK


def block_counters(dev: str) -> tuple[int, int, int, int]:
    """Reads completed, sectors read, io_ticks (ms busy) and time in queue (ms) of a block
    device (Documentation/block/stat.rst)."""
    f = [int(v) for v in Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()]
    return f[0], f[2], f[9], f[10]


def listen_overflows(pid: int | None) -> int | None:
    """Connection attempts the kernel dropped because a listening socket's accept queue was
    full (TcpExt ListenOverflows), in the network namespace of process ``pid`` (the storage
    server): such a client's SYN is retried after 1, 3, 7, 15 s, so its open takes that long."""
    if pid is None:
        return None
    try:
        lines = Path(f"/proc/{pid}/net/netstat").read_text().splitlines()
    except OSError:
        return None
    for head, values in zip(lines[::2], lines[1::2], strict=False):
        if head.startswith("TcpExt:"):
            table = dict(zip(head.split()[1:], values.split()[1:], strict=False))
            return int(table["ListenOverflows"]) if "ListenOverflows" in table else None
    return None


def qdisc_drops(dev: str, netns: str | None = None) -> int | None:
    """Packets the device's root qdisc dropped (tc -s -j; None when tc cannot say)."""
    cmd = ["tc", *(["-n", netns] if netns else []), "-s", "-j", "qdisc", "show", "dev", dev]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=True).stdout
        return sum(int(q.get("drops", 0)) for q in json.loads(out))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def read_counters(
    pids: dict[str, int] | None = None,
    disk: str | None = None,
    link: tuple[int | None, int | None] = (None, None),
) -> Counters:
    busy, total = host_cpu()
    procs = {
        role: cpu for role, pid in (pids or {}).items() if (cpu := process_cpu(pid)) is not None
    }
    return Counters(
        at=time.monotonic(),
        host_busy_s=busy,
        host_total_s=total,
        processes=procs,
        disk=block_counters(disk) if disk else None,
        link_bytes=link[0],
        link_drops=link[1],
        io_stall_us=io_stall_us(),
        listen_overflows=listen_overflows((pids or {}).get(roles.SERVER)),
    )


def usage_between(
    before: Counters,
    after: Counters,
    bandwidth_mbit: float | None = None,
    cores: int | None = None,
) -> dict[str, float | None]:
    """The point's usage: CPU shares of the whole host (every process here shares its cores),
    the disk's busy fraction, request rate, queue depth and MB/s, the link's Mbit/s, its share
    of ``bandwidth_mbit`` and its drops."""
    wall = after.at - before.at
    cores = cores or os.cpu_count() or 1
    out: dict[str, float | None] = {"usage_wall_s": wall}
    total = after.host_total_s - before.host_total_s
    out["host_cpu_busy"] = (after.host_busy_s - before.host_busy_s) / total if total > 0 else None
    for role in roles.ROLES:
        if role in before.processes and role in after.processes and wall > 0:
            used = after.processes[role] - before.processes[role]
            out[f"{role}_cpu_share"] = used / wall / cores
        else:
            out[f"{role}_cpu_share"] = None
    if before.disk and after.disk and wall > 0:
        reads, sectors, ticks, queue = (a - b for a, b in zip(after.disk, before.disk, strict=True))
        out.update(disk_busy=ticks / 1e3 / wall, disk_iops=reads / wall,
                   disk_queue_depth=queue / 1e3 / wall, disk_mb_per_s=sectors * 512 / 1e6 / wall)  # fmt: skip
    else:
        out.update(disk_busy=None, disk_iops=None, disk_queue_depth=None, disk_mb_per_s=None)
    if before.link_bytes is not None and after.link_bytes is not None and wall > 0:
        mbit = (after.link_bytes - before.link_bytes) * 8 / 1e6 / wall
        out["link_mbit_per_s"] = mbit
        out["link_utilisation"] = mbit / bandwidth_mbit if bandwidth_mbit else None
    else:
        out["link_mbit_per_s"] = out["link_utilisation"] = None
    stall = (before.io_stall_us, after.io_stall_us)
    out["io_stall"] = None if None in stall or wall <= 0 else (stall[1] - stall[0]) / 1e6 / wall  # type: ignore[operator]
    drops = (before.link_drops, after.link_drops)
    out["link_drops"] = None if None in drops else drops[1] - drops[0]  # type: ignore[operator]
    lost = (before.listen_overflows, after.listen_overflows)
    out["listen_overflows"] = None if None in lost else lost[1] - lost[0]  # type: ignore[operator]
    return out
