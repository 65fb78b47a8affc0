"""The storage network namespace and the veth pair that joins it to the worker side."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from instore.errors import InstoreError
from instore.site.emulated.names import PREFIX, SiteNames
from instore.site.emulated.system import in_netns, run

NETNS_DIR = Path("/run/netns")


def _subnet_in_use(names: SiteNames) -> bool:
    """True if the host already routes our /30 (another network would be shadowed)."""
    net = ipaddress.ip_network(f"{names.worker_ip}/30", strict=False)
    out = run(["ip", "-o", "-4", "route", "show", "table", "all"]).stdout
    for line in out.splitlines():
        dest = line.split()[0]
        if dest in ("default", "local", "broadcast"):
            dest = line.split()[1]
        try:
            if ipaddress.ip_network(dest, strict=False).overlaps(net):
                return True
        except ValueError:
            continue
    return False


def create(names: SiteNames) -> None:
    """Make the namespace and the veth pair; worker side .1, storage side .2 of a private /30."""
    if _subnet_in_use(names):
        raise InstoreError(
            f"the subnet of {names.worker_ip}/30 is already routed on this host",
            "rename the site (its subnet is derived from the name) or remove the other route",
        )
    ns = names.netns
    run(["ip", "netns", "add", ns])
    run(["ip", "link", "add", names.veth_worker, "type", "veth", "peer", "name",
         names.veth_storage, "netns", ns])  # fmt: skip
    run(["ip", "addr", "add", f"{names.worker_ip}/30", "dev", names.veth_worker])
    run(["ip", "link", "set", names.veth_worker, "up"])
    run(["ip", "-n", ns, "addr", "add", f"{names.storage_ip}/30", "dev", names.veth_storage])
    run(["ip", "-n", ns, "link", "set", names.veth_storage, "up"])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])


def pids_in(netns: str) -> list[int]:
    """Processes living in a namespace: everything in ours was started by us."""
    if not (NETNS_DIR / netns).exists():
        return []
    out = run(["ip", "netns", "pids", netns], check=False).stdout
    return [int(p) for p in out.split()]


def delete(netns: str, veth_worker: str | None = None) -> None:
    """Remove the veth pair explicitly (a namespace can outlive its name) and the namespace."""
    if veth_worker and veth_worker in links():
        run(["ip", "link", "del", veth_worker])
    if netns and (NETNS_DIR / netns).exists():
        run(["ip", "netns", "del", netns])


def namespaces() -> list[str]:
    """Our namespaces, found by prefix."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(PREFIX))


def links() -> list[str]:
    """Our links in the host namespace, found by prefix."""
    out = run(["ip", "-o", "link", "show"]).stdout
    found = []
    for line in out.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(PREFIX):
            found.append(name)
    return found


def ns_iptables(netns: str, *rule: str) -> None:
    """Apply one iptables command inside the namespace (rules die with it)."""
    run(in_netns(netns, ["iptables", *rule]))


IFF_UP = 0x1


def link_is_up(dev: str) -> bool:
    """Whether a host-side link is administratively up (False if it does not exist)."""
    try:
        return bool(int(Path(f"/sys/class/net/{dev}/flags").read_text(), 16) & IFF_UP)
    except (OSError, ValueError):
        return False


def set_link(dev: str, up: bool) -> None:
    run(["ip", "link", "set", dev, "up" if up else "down"])
