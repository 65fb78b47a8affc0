"""root:// (and roots://, xroot://, xroots://): the XRootD command-line tools, run with the
jobs' credentials named in their environment (``instore.credentials.handoff``). They run as
processes of their own, so no XRootD client is loaded here beside another one."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from instore.credentials import handoff
from instore.errors import InstoreError
from instore.storage.base import Storage, StorageError
from instore.urls import XROOTD

_NO_SUCH = re.compile(r"\[3011\]|no such file", re.IGNORECASE)


def _run(args: list[str], timeout: float, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {**os.environ, **handoff.host_env(), "XRD_CONNECTIONRETRY": "1", **(extra or {})}
    try:
        return subprocess.run(args, capture_output=True, text=True, env=env, check=False,
                              timeout=timeout)  # fmt: skip
    except FileNotFoundError as err:
        raise InstoreError(f"{args[0]} is not installed here", "install xrootd-client") from err


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout).strip().splitlines() or ["no message"]
    return lines[-1].strip()


def _host_and_path(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path


class XRootDStorage(Storage):
    protocol = XROOTD

    def stat(self, url: str) -> int | None:
        host, path = _host_and_path(url)
        proc = _run(["xrdfs", host, "stat", path], 120)
        if proc.returncode != 0:
            if _NO_SUCH.search(proc.stderr):
                return None
            raise StorageError(url, last_line(proc))
        found = re.search(r"Size:\s*(\d+)", proc.stdout)
        return int(found.group(1)) if found else -1

    def reported_adler32(self, url: str) -> str | None:
        """What ``xrdfs query checksum`` says; None where the server computes none (no
        ``xrootd.chksum adler32`` in its configuration)."""
        host, path = _host_and_path(url)
        proc = _run(["xrdfs", host, "query", "checksum", path], 300)
        digest = (
            re.search(r"adler32\s+([0-9a-fA-F]+)", proc.stdout) if proc.returncode == 0 else None
        )
        return digest.group(1) if digest else None

    def put(self, local: Path, url: str) -> None:
        proc = _run(["xrdcp", "--force", "--posc", "--nopbar", str(local), url], 3600)
        if proc.returncode != 0:
            raise StorageError(url, last_line(proc))

    def probe(self, url: str, timeout: float) -> str | None:
        host, path = _host_and_path(url)
        seconds = str(int(max(1, timeout)))
        try:
            proc = _run(["xrdfs", host, "stat", path], 3 * timeout,
                        {"XRD_REQUESTTIMEOUT": seconds})  # fmt: skip
        except (InstoreError, subprocess.TimeoutExpired) as err:
            return str(err)
        return None if proc.returncode == 0 else last_line(proc)

    def drain(self, url: str) -> None:
        proc = _run(["xrdcp", "--force", "--silent", url, "/dev/null"], 600)
        if proc.returncode != 0:
            raise StorageError(url, f"xrdcp failed (exit {proc.returncode}): {last_line(proc)}",
                               "check the file exists behind the endpoint")  # fmt: skip

    def listdir(self, url: str, timeout: float) -> list[str]:
        from XRootD import client
        from XRootD.client.flags import DirListFlags, StatInfoFlags

        host, path = _host_and_path(url)
        status, listing = client.FileSystem(host).dirlist(
            path, DirListFlags.STAT, timeout=int(max(1, timeout))
        )
        if not status.ok:
            if _NO_SUCH.search(status.message) or "no such" in status.message.lower():
                raise StorageError(url, "no such directory", "check the directory")
            raise StorageError(url, f"cannot list it ({status.message.strip()})")
        return [e.name for e in listing if not e.statinfo.flags & StatInfoFlags.IS_DIR]
