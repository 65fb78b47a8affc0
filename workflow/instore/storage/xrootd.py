"""root:// (and roots://, xroot://, xroots://). Range reads go through the ``xrootd`` Python
client, coalesced ranges as one vector read; everything else runs the XRootD command-line tools
with the jobs' credentials named in their environment (``instore.credentials.handoff``), as
processes of their own. The Python client is imported only when a file is opened or a directory
listed: it must not load into a process holding ROOT's client (``instore.storage.rootfile``).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from instore.credentials import discovery, handoff
from instore.errors import InstoreError
from instore.storage.base import Storage, StorageError
from instore.urls import HTTP, XROOTD, http_url, protocol_of

_NO_SUCH = re.compile(r"\[3011\]|no such file", re.IGNORECASE)
# XRootD vector reads take at most 1024 elements of at most ~2 MB each (kXR_readv limits).
MAX_VECTOR_ELEMENTS = 1024
MAX_VECTOR_ELEMENT = 2 * 1024 * 1024 - 64


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


def client() -> ModuleType:
    """The ``xrootd`` Python client (``XRootD.client``), imported on first use."""
    return importlib.import_module("XRootD.client")


def _check(status: Any, what: str, url: str) -> None:
    if not status.ok:
        raise OSError(f"xrootd {what} failed for {url}: {status.message}")


# xrdcp refuses http(s):// unless told (its XrdClHttp plug-in then copies); seen on a token
# site's davs:// stage-in: "xrdcp: https file protocol is not supported".
ALLOW_HTTP = "--allow-http"
NO_HTTP_PLUGIN = "protocol is not supported"


def copy_with_xrdcp(url: str, local: Path, timeout: float | None = None) -> None:
    """xrdcp in this process's environment (a job's carries its credentials); it copies paths,
    root:// and http(s):// alike (davs:// goes as https://)."""
    url = http_url(url)
    over_http = protocol_of(url) == HTTP
    if over_http:
        _refuse_token_only_http(url)
    argv = ["xrdcp", "--force", "--silent", "--nopbar", *([ALLOW_HTTP] if over_http else [])]
    try:
        proc = subprocess.run([*argv, url, str(local)], capture_output=True, text=True,
                              check=False, timeout=timeout)  # fmt: skip
    except FileNotFoundError as err:
        raise InstoreError(
            "xrdcp is not installed where the job runs",
            "install xrootd-client (Debian) or rebuild the payload image: instore container build",
        ) from err
    if proc.returncode != 0:
        said = last_line(proc)
        fix = "check that the source exists and the server answers"
        if over_http and NO_HTTP_PLUGIN in said:
            fix = ("install xrdcp's HTTP plug-in (Debian: xrootd-client-http-plugins) where the "
                   "job runs, or stage in over root://")  # fmt: skip
        raise InstoreError(f"xrdcp {url} failed (exit {proc.returncode}): {said}", fix)


def _refuse_token_only_http(url: str) -> None:
    """xrdcp's HTTP plug-in (XrdClHttp 5.5, Davix) presents an X.509 proxy, never a bearer
    token: with a token alone it would be refused, and the refusal reads as a bad token (seen on
    a token site's davs:// stage-in). Say what is wrong before copying."""
    creds = discovery.discover()
    if creds.token and not creds.proxy_found:
        raise InstoreError(
            f"xrdcp cannot stage in {url} with a bearer token: its HTTP plug-in (XrdClHttp 5.5) "
            "sends an X.509 proxy only",
            "stage in over root:// (ztn takes the token), or read over https in place",
        )


class XRootDReader:
    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        self._timeout = int(max(1, timeout))
        self._file = client().File()
        _check(self._file.open(url, timeout=self._timeout)[0], "open", url)
        status, info = self._file.stat(timeout=self._timeout)
        _check(status, "stat", url)
        self.size = int(info.size)

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        # The XRootD binding takes Python ints only; uproot hands on NumPy ones where it reads
        # a basket's key (byte-sized steps: instore.uproot_xrootd says more)
        ranges = [(int(a), int(b)) for a, b in ranges]
        small = [(a, b - a) for a, b in ranges if b - a <= MAX_VECTOR_ELEMENT]
        if len(small) == len(ranges) and 1 < len(ranges) <= MAX_VECTOR_ELEMENTS:
            status, info = self._file.vector_read(chunks=small, timeout=self._timeout)
            _check(status, "vector read", self._url)
            return [bytes(c.buffer) for c in info.chunks]
        out = []
        for a, b in ranges:
            status, data = self._file.read(a, b - a, timeout=self._timeout)
            _check(status, "read", self._url)
            out.append(bytes(data))
        return out

    def close(self) -> None:
        self._file.close(timeout=self._timeout)


class XRootDStorage(Storage):
    protocol = XROOTD

    def open(self, url: str, timeout: float) -> XRootDReader:
        return XRootDReader(url, timeout)

    def load(self) -> None:
        client()

    def get(self, url: str, local: Path, timeout: float | None = None) -> None:
        copy_with_xrdcp(url, local, timeout)

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
        xrd_flags = importlib.import_module("XRootD.client.flags")
        host, path = _host_and_path(url)
        status, listing = (
            client()
            .FileSystem(host)
            .dirlist(path, xrd_flags.DirListFlags.STAT, timeout=int(max(1, timeout)))
        )
        if not status.ok:
            if _NO_SUCH.search(status.message) or "no such" in status.message.lower():
                raise StorageError(url, "no such directory", "check the directory")
            raise StorageError(url, f"cannot list it ({status.message.strip()})")
        return [e.name for e in listing if not e.statinfo.flags & xrd_flags.StatInfoFlags.IS_DIR]
