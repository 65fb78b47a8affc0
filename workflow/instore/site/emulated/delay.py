"""Round-trip latency without netem: an NFQUEUE delayer in the storage namespace.

Every TCP packet entering the storage side of the veth is queued to user space and released
after a fixed hold time. Holding one direction by the whole added RTT is enough: requests and
ACKs arrive late, so both request latency and TCP's ack clock see the longer round trip, while
the data direction (server to worker) is not copied through user space at all.

Run as ``python -m instore.site.emulated.delay --queue N --hold-ms X`` inside the namespace.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import select
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from instore.errors import InstoreError
from instore.site.emulated import netns as ns
from instore.site.emulated.names import SiteNames
from instore.site.emulated.system import in_netns, run, stop_pid

QUEUE = 0
# Any hold at all costs a timed wake-up (~0.15 ms here); below this the tuner stops trying.
MIN_HOLD_MS = 0.001
MODULE = "instore.site.emulated.delay"
BOUND = "delayer bound to queue"  # said once the queue has a reader: packets are held, not lost
START_TIMEOUT_S = 10.0


def serve(queue_num: int, hold_s: float) -> None:
    """Hold each queued packet for ``hold_s`` then accept it, in arrival order.

    A constant hold keeps deadlines monotonic, so a FIFO is enough; select() sleeps until the
    next deadline or the next packet, whichever is first.
    """
    from netfilterqueue import COPY_META, NetfilterQueue

    _realtime()
    pending: collections.deque = collections.deque()
    nfq = NetfilterQueue()
    nfq.bind(queue_num, lambda pkt: pending.append((time.monotonic() + hold_s, pkt)),
             max_len=8192, mode=COPY_META)  # fmt: skip
    fd = nfq.get_fd()
    print(f"{BOUND} {queue_num}", flush=True)  # start() waits for this line
    try:
        while True:
            now = time.monotonic()
            while pending and pending[0][0] <= now:
                pending.popleft()[1].accept()
            timeout = max(0.0, pending[0][0] - now) if pending else 1.0
            ready, _, _ = select.select([fd], [], [], timeout)
            if ready:
                nfq.run(block=False)
    finally:
        nfq.unbind()


def _realtime() -> None:
    """Sub-millisecond holds only work if the delayer wakes on time even when jobs load every
    core: run it SCHED_FIFO. It sleeps in select() between packets, so it cannot hog a CPU."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))


def measure_rtt_ms(host: str, port: int, samples: int = 40) -> float:
    """Median TCP connect time (SYN to SYN-ACK: one round trip) to a listening port."""
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        try:
            with socket.create_connection((host, port), timeout=5):
                times.append(time.perf_counter() - start)
        except OSError as err:
            raise InstoreError(
                f"cannot measure RTT to {host}:{port}: {err}", "check that the server is up"
            ) from err
    return statistics.median(times) * 1000


def _rule(names: SiteNames) -> list[str]:
    return ["INPUT", "-i", names.veth_storage, "-p", "tcp", "-j", "NFQUEUE",
            "--queue-num", str(QUEUE)]  # fmt: skip


def _has_rule(names: SiteNames) -> bool:
    check = run(in_netns(names.netns, ["iptables", "-C", *_rule(names)]), check=False)
    return check.returncode == 0


def add_rule(names: SiteNames) -> None:
    """Queue TCP arriving on the storage veth (once: a retune adds no second rule); without
    --queue-bypass, a dead delayer stalls traffic instead of silently removing the latency."""
    if not _has_rule(names):
        ns.ns_iptables(names.netns, "-A", *_rule(names))


def remove_rule(names: SiteNames) -> None:
    """No delayer wanted any more (an RTT at or under the bare link's): stop queueing, or
    traffic would stall with no one to release it."""
    while _has_rule(names):
        ns.ns_iptables(names.netns, "-D", *_rule(names))


def start(names: SiteNames, hold_ms: float) -> subprocess.Popen[bytes]:
    """Start the delayer in the namespace, detached from our session so it outlives `site up`."""
    cmd = [sys.executable, "-m", MODULE, "--queue", str(QUEUE), "--hold-ms", f"{hold_ms:.4f}",
           "--site", names.site]  # fmt: skip
    path = names.workdir / "delay.log"
    with path.open("ab") as log:
        offset = log.tell()
        proc = subprocess.Popen(in_netns(names.netns, cmd), stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    _wait_bound(names.site, proc, path, offset)
    return proc


def _wait_bound(site: str, proc: subprocess.Popen[bytes], log: Path, offset: int) -> None:
    """Until the delayer reads its queue: a packet queued before that is dropped (no
    --queue-bypass), and a dropped SYN costs TCP a second before it tries again."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with log.open("rb") as f:
            f.seek(offset)
            if BOUND.encode() in f.read():
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    stop_pid(proc.pid, MODULE)
    why = f"exited at start (status {proc.returncode})" if proc.poll() is not None else (
        f"did not bind its queue within {START_TIMEOUT_S:.0f} s")  # fmt: skip
    raise InstoreError(
        f"the latency delayer for {site} {why}",
        f"see {log}; is NetfilterQueue installed in the venv?",
    )


def stop(pid: int) -> None:
    stop_pid(pid, MODULE)


def tune(
    names: SiteNames, target_ms: float, port: int, rounds: int = 8
) -> tuple[subprocess.Popen[bytes] | None, float, float, float]:
    """Bring the measured RTT to ``target_ms``: start from target - bare RTT, then correct the
    hold by most of the measured error (the delayer's own overhead) until within 5%.

    Returns (delayer process or None, bare RTT, hold, achieved RTT), all in ms.
    """
    bare = measure_rtt_ms(names.storage_ip, port)
    hold = target_ms - bare
    if hold <= 0:
        remove_rule(names)
        return None, bare, 0.0, bare
    add_rule(names)
    proc = start(names, hold)
    achieved = measure_rtt_ms(names.storage_ip, port)
    for _ in range(rounds):
        error = target_ms - achieved
        if abs(error) <= 0.05 * target_ms or (hold == MIN_HOLD_MS and error < 0):
            break
        hold = max(hold + 0.8 * error, MIN_HOLD_MS)  # damped: the response is noisy
        stop(proc.pid)
        proc = start(names, hold)
        achieved = measure_rtt_ms(names.storage_ip, port)
    return proc, bare, hold, achieved


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__)
    parser.add_argument("--queue", type=int, default=QUEUE)
    parser.add_argument("--hold-ms", type=float, required=True)
    parser.add_argument("--site", help="site name, only so the process can be recognised")
    args = parser.parse_args(argv)
    try:
        serve(args.queue, args.hold_ms / 1000)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
