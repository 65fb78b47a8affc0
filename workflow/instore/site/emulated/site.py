"""Emulated sites: bring-up in a fixed order (``build``), each resource recorded in the state
file the moment it exists, and a teardown that works from that file or, failing it, from names.
The running site is an ``EmulatedLive`` (``live``).

A site left up by a process that died (SIGKILL, a lost session) is removed by the next
bring-up; one whose owner still runs, or that `instore site up` left, is refused.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from pathlib import Path

from instore.errors import InstoreError
from instore.site import roles
from instore.site.config import SiteConfig, load_site
from instore.site.emulated import blkio, delay, disk, fuse, netns, xcache
from instore.site.emulated.build import build
from instore.site.emulated.live import EmulatedLive
from instore.site.emulated.names import PREFIX, WORK_ROOT, SiteNames
from instore.site.emulated.state import SiteState, recorded_sites
from instore.site.emulated.system import require_root, stop_pid
from instore.site.live import DEFAULT_RESULTS


def existing(names: SiteNames) -> list[str]:
    """What of this site exists now: state file, namespace, link, mounts, cgroup."""
    found = [f"state file {names.state_file}"] if names.state_file.exists() else []
    return found + _resources(names)


def _resources(names: SiteNames) -> list[str]:
    """The system resources of a site (everything but its state file)."""
    found = []
    if names.netns in netns.namespaces():
        found.append(f"namespace {names.netns}")
    found += [f"link {link}" for link in netns.links() if link == names.veth_worker]
    found += [f"mount {m}" for m in disk.our_mounts() if m.startswith(str(names.workdir))]
    found += [f"cgroup {names.cgroup}"] if names.cgroup.exists() else []
    found += [f"XCache process {pid}" for pid in xcache.pids(names)]
    return found


def bring_up(
    cfg: SiteConfig, files: Iterable[Path] = (), results: Path = DEFAULT_RESULTS
) -> EmulatedLive:
    """Start everything; on any failure, undo what was done and re-raise. The calling process
    owns the site: it must tear it down (``open_site`` does), or release it."""
    require_root(f"bringing up emulated site {cfg.name}")
    names = SiteNames(cfg.name)
    clear_abandoned(names)
    state = SiteState(names)
    state.start()
    state.record("config", str(cfg.path))
    try:
        build(cfg, names, state, list(files))
    except BaseException:
        teardown(names)
        raise
    return EmulatedLive(cfg, state, results)


def clear_abandoned(names: SiteNames) -> None:
    """Remove a leftover site whose owner died, saying so in one line; refuse any other
    leftover (its owner still runs, `instore site up` left it, or its state file is lost)."""
    found = existing(names)
    if not found:
        return
    state = SiteState.load(names)
    if state is None or not state.owner_gone():
        raise InstoreError(
            f"site {names.site} is already up or left over from a crash ({', '.join(found)})",
            f"run `instore site down {names.site}` (or `instore site down --all`) first",
        )
    print(
        f"instore: site {names.site} was left up by process {state.data['owner_pid']}, "
        "which is gone: removing it before bringing it up",
        file=sys.stderr,
    )
    left = teardown(names)
    if left:
        raise InstoreError(
            f"site {names.site}: could not remove what a crashed run left ({', '.join(left)})",
            f"run `instore site down {names.site}` as root and see what it reports",
        )


def teardown(names: SiteNames) -> list[str]:
    """Remove everything of one site, from its state file and by name. Returns what is left
    (empty when clean). Safe to call repeatedly and on a half-built site."""
    state = SiteState.load(names)
    pids = state.pids() if state else {}
    fuse.unmount(names, pids.get(roles.FUSE_CLIENT))
    for role, expect in (
        (roles.DELAYER, delay.MODULE),
        (roles.SERVER, roles.XROOTD_PROGRAM),
        (roles.CACHE, xcache.CONFIG),
    ):
        if role in pids:
            stop_pid(pids[role], expect)
    for pid in xcache.pids(names):  # the cache runs outside the namespace: found by name
        xcache.stop(pid)
    for pid in netns.pids_in(names.netns):
        stop_pid(pid, "")  # everything in our namespace is ours
    netns.delete(names.netns, names.veth_worker)
    with contextlib.suppress(OSError):
        blkio.remove(names.cgroup)
    for mountpoint in disk.our_mounts():
        if mountpoint.startswith(str(names.workdir)):
            disk.unmount(mountpoint)
    loops = {state.data["loop"]} if state and "loop" in state.data else set()
    for dev in loops | set(disk.our_loops()):
        if dev in loops or str(names.workdir) in _backing(dev):
            disk.detach(dev)
    disk.remove_workdirs(names)
    left = _resources(names)
    if not left:
        names.state_file.unlink(missing_ok=True)
    return left


def _backing(dev: str) -> str:
    try:
        return Path(f"/sys/block/{Path(dev).name}/loop/backing_file").read_text().strip()
    except OSError:
        return ""


def known_sites() -> set[str]:
    """Every site name that left a trace: state files, namespaces, work dirs, cgroups."""
    names = set(recorded_sites())
    names |= {ns.removeprefix(PREFIX) for ns in netns.namespaces()}
    names |= {p.name.removeprefix(PREFIX) for p in WORK_ROOT.glob(f"{PREFIX}*")}
    names |= {p.name.removeprefix(PREFIX) for p in blkio.ours()}
    return names


def teardown_all() -> list[str]:
    """Remove every trace of every emulated site, including ones whose state file is lost.
    Returns what could not be removed (empty when clean)."""
    require_root("tearing down emulated sites")
    for site in sorted(known_sites()):
        teardown(SiteNames(site))
    for pid in xcache.pids():
        xcache.stop(pid)
    for link in netns.links():
        netns.delete("", link)
    for mountpoint in disk.our_mounts():
        disk.unmount(mountpoint)
    for dev in disk.our_loops():
        disk.detach(dev)
    for cgroup in blkio.ours():
        with contextlib.suppress(OSError):
            blkio.remove(cgroup)
    disk.remove_workdirs()
    return leftovers()


def leftovers() -> list[str]:
    """Anything of ours on this host: the check that teardown was complete."""
    found = [f"namespace {n}" for n in netns.namespaces()]
    found += [f"link {link}" for link in netns.links()]
    found += [f"mount {m}" for m in disk.our_mounts()]
    found += [f"loop device {d}" for d in disk.our_loops()]
    found += [f"cgroup {c}" for c in blkio.ours()]
    found += [f"XCache process {pid}" for pid in xcache.pids()]
    found += [f"state file for {s}" for s in recorded_sites()]
    found += [f"directory {p}" for p in WORK_ROOT.glob(f"{PREFIX}*")]
    return found


def attach(name: str, results: Path = DEFAULT_RESULTS) -> EmulatedLive:
    """The running site ``name`` brought up earlier (e.g. by `instore site up`)."""
    names = SiteNames(name)
    state = SiteState.load(names)
    if state is None or names.netns not in netns.namespaces():
        raise InstoreError(f"emulated site {name} is not up", f"run `instore site up {name}`")
    return EmulatedLive(load_site(state.data["config"]), state, results)


def is_held(name: str) -> bool:
    """True while the site is up and someone holds it: its owner runs, or no process owns it
    (`instore site up`). A site whose owner died is a leftover, not held."""
    state = SiteState.load(SiteNames(name))
    return state is not None and not state.owner_gone()
