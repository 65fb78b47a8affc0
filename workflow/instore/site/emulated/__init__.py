"""Emulated sites, and the Linux plumbing they are built from.

An emulated site is a network namespace joined to the host by a veth pair (``netns``), its
rate capped by tc tbf (``shaping``) and its round-trip time stretched by an NFQUEUE delayer
(``delay``); a loop-device disk (``disk``) throttled by blkio (``blkio``), served by a real
XRootD server (``xrootd``) and mounted through xrootdfs (``fuse``). ``names`` derives every
resource's name from the site's, ``state`` records what exists as it is made, ``system`` runs
programs and stops our processes; ``build`` makes a site step by step, ``live`` is a
running one as the sweep sees it, ``site`` brings it all up and down; ``faults`` breaks it
on purpose.
"""

from instore.site.emulated.live import EmulatedLive
from instore.site.emulated.site import (
    attach,
    bring_up,
    clear_abandoned,
    existing,
    is_held,
    known_sites,
    leftovers,
    teardown,
    teardown_all,
)

__all__ = [
    "EmulatedLive",
    "attach",
    "bring_up",
    "clear_abandoned",
    "existing",
    "is_held",
    "known_sites",
    "leftovers",
    "teardown",
    "teardown_all",
]
