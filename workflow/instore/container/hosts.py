"""Names for the worker's own addresses, given to the payload's container in its /etc/hosts.

The XRootD client (PyPI's, traced; ROOT's wheel carries the same XrdCl) looks up a name for
every address of the machine it runs on when it logs in: one reverse DNS query per address,
sent after the TCP connect. On this VM
(no nscd, one upstream resolver) 64 clients starting together lose some of those queries, and
the resolver's 5 s time-out turns their opens into 5, 10 or 15 s: the measurement then shows
the worker's resolver, not the storage. Naming the worker's own addresses in the container's
/etc/hosts answers those lookups locally (glibc reads the hosts file first), as a worker node
with its addresses in a local file or a caching resolver does. The storage's own name is not
touched: a real site's endpoints are still resolved by DNS.

IPv4 addresses are named twice, as themselves and IPv4-mapped (``::ffff:a.b.c.d``): the client
asks in the mapped form, and glibc's hosts file matches it only when written that way.
"""

from __future__ import annotations

import socket

import psutil

NAME_PREFIX = "instore-worker"


def own_address_entries() -> tuple[tuple[str, str], ...]:
    """(name, address) pairs for every address of this machine's interfaces, loopback aside."""
    entries: list[tuple[str, str]] = []
    for interface, addresses in sorted(psutil.net_if_addrs().items()):
        for address in addresses:
            entries += _entries_for(interface, address.family, address.address)
    return tuple(dict.fromkeys(entries))


def _entries_for(interface: str, family: int, address: str) -> list[tuple[str, str]]:
    name = f"{NAME_PREFIX}-{_safe(interface)}"
    if family == socket.AF_INET and not address.startswith("127."):
        return [(name, address), (name, f"::ffff:{address}")]
    if family == socket.AF_INET6:
        bare = address.split("%", 1)[0]  # a link-local address carries its scope: fe80::1%eth0
        if bare != "::1":
            return [(name, bare)]
    return []


def _safe(interface: str) -> str:
    """A host name may hold letters, digits and hyphens only."""
    return "".join(c if c.isalnum() else "-" for c in interface).strip("-") or "if"


def add_host_args(entries: tuple[tuple[str, str], ...]) -> list[str]:
    """podman's ``--add-host NAME:ADDRESS`` for each entry (podman splits at the first colon)."""
    return [arg for name, address in entries for arg in ("--add-host", f"{name}:{address}")]
