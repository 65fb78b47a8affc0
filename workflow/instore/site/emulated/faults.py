"""Faults a study must survive, caused for real on a running emulated site.

A storage server that dies, a worker link that goes down, a network that stalls (a latency
spike: the delayer holds every packet). Site admins rehearse with ``instore site fault``; the
fault tests cause them in the middle of a sweep point. Each fault that lasts ``seconds`` puts
things back itself, even if interrupted; the sweep's ``heal`` repairs what a kill leaves.
"""

from __future__ import annotations

import os
import signal
import time

from instore.errors import InstoreError
from instore.site import roles
from instore.site.emulated import delay, netns
from instore.site.emulated.live import EmulatedLive
from instore.site.emulated.system import running

FAULTS = ("kill-server", "link-down", "stall")


def _pid(live: EmulatedLive, role: str, expect: str, fix: str) -> int:
    pid = live.state.pids().get(role, 0)
    if not running(pid, expect):
        raise InstoreError(f"site {live.config.name} has no running {role} process", fix)
    return pid


def kill_server(live: EmulatedLive) -> int:
    """SIGKILL the storage server (no clean shutdown, as in a crash). Returns its PID."""
    fix = (f"bring the site up again: `instore site down {live.config.name}` then "
           f"`instore site up {live.config.name}`")  # fmt: skip
    pid = _pid(live, roles.SERVER, roles.XROOTD_PROGRAM, fix)
    os.kill(pid, signal.SIGKILL)
    return pid


def link_down(live: EmulatedLive, seconds: float) -> None:
    """Take the worker side of the storage link down for ``seconds``, then up again."""
    dev = live.names.veth_worker
    netns.set_link(dev, up=False)
    try:
        time.sleep(seconds)
    finally:
        netns.set_link(dev, up=True)


def stall(live: EmulatedLive, seconds: float) -> None:
    """Freeze the latency delayer for ``seconds``: every packet to the storage waits (the
    queue has no bypass), so each request in flight sees a latency spike of that length."""
    pid = _pid(live, roles.DELAYER, delay.MODULE, "stall needs a site with a latency delayer "
               "(network.rtt_ms above the bare link's RTT); use link-down instead")  # fmt: skip
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)


def cause(live: EmulatedLive, fault: str, seconds: float) -> str:
    """Cause one named fault; returns a line saying what was done."""
    if fault == "kill-server":
        return f"killed xrootd (pid {kill_server(live)}) of {live.config.name}"
    if fault == "link-down":
        link_down(live, seconds)
        return f"link {live.names.veth_worker} of {live.config.name} was down for {seconds:g} s"
    if fault == "stall":
        stall(live, seconds)
        return f"network of {live.config.name} stalled for {seconds:g} s"
    raise InstoreError(f"unknown fault {fault!r}", f"use one of {', '.join(FAULTS)}")
