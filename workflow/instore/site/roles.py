"""The processes of an emulated site, each named once: the roles they play (the keys of the
state file's ``pids``, of the usage counters' processes and of their ``<role>_cpu_share``
columns), and the programs and service user behind them. Some of these words are also access
methods' names (``instore.access``); here they name processes, and state files written by
earlier runs use the same strings, so the values never change. This module imports nothing."""

from __future__ import annotations

# Roles: the keys under which a site's processes are recorded.
SERVER = "xrootd"  # the storage server in the site's network namespace
CACHE = "xcache"  # the XCache proxy server on the worker side of the link
DELAYER = "delay"  # the NFQUEUE latency delayer that stretches the link's RTT
FUSE_CLIENT = "xrootdfs"  # the xrootdfs daemon that mounts the export for protocol fuse
ROLES: tuple[str, ...] = (SERVER, CACHE, DELAYER, FUSE_CLIENT)  # usage's column order

# Programs and users.
XROOTD_PROGRAM = "xrootd"  # the program both servers run (the storage server and the XCache)
XROOTD_USER = "xrootd"  # the service user both servers drop to (``xrootd -R``)
XROOTDFS_PROGRAM = "xrootdfs"  # the FUSE client program
