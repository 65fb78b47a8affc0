"""http(s):// and dav(s):// (WebDAV spellings, sent as http(s)): urllib3 with the jobs'
credentials, the proxy as TLS client certificate and the token over TLS only
(``instore.credentials.handoff``): the WLCG bearer token as ``Authorization: Bearer`` (over
https only) and the X.509 proxy as client certificate (its file holds cert and key), with the
CAs of ``X509_CERT_DIR`` trusted besides the system's. Range reads: coalesced ranges go out as
one multi-range GET.

A replay opens a file at every pass and sends hundreds of small range requests a second, so the
per-request and per-open costs are the client's CPU the load section counts. One process keeps
one connection pool per host (reused by later opens, as XRootD's client keeps its channel to a
server), and each request goes to the host's pool directly, without the manager's URL parsing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import urllib3

from instore.credentials import discovery, handoff
from instore.errors import InstoreError
from instore.storage.base import CHUNK, Storage, StorageError
from instore.storage.xrootd import copy_with_xrdcp
from instore.urls import HTTP, http_url, is_tls

_DIGEST = re.compile(r"adler32=([0-9a-fA-F]{1,8})")
_REDIRECTS = (301, 302, 307, 308)
MAX_RANGES_PER_GET = 64  # keeps the Range header well under server header limits
_CONTENT_RANGE = re.compile(rb"content-range:\s*bytes\s+(\d+)-(\d+)/", re.IGNORECASE)
# (pid, timeout, TLS, credentials) -> pool: a forked child makes its own, never sharing a socket
_POOLS: dict[tuple[int, float, bool, discovery.Credentials], urllib3.PoolManager] = {}


def _shared_pool(url: str, timeout: float, creds: discovery.Credentials) -> urllib3.PoolManager:
    key = (os.getpid(), timeout, is_tls(url), creds)
    if key not in _POOLS:
        _POOLS[key] = handoff.pool_for(url, timeout, creds)
    return _POOLS[key]


def _request_target(url: str) -> str:
    """The path and query a request for ``url`` names (``//f.root`` stays as written)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


class HTTPReader:
    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        creds = discovery.discover()
        self._host = _shared_pool(url, timeout, creds).connection_from_url(url)
        self._target = _request_target(url)
        self._headers = handoff.auth_headers(url, creds)
        resp = self._request("HEAD", self._headers)
        if resp.status != 200:
            raise OSError(f"HTTP {resp.status} for HEAD {url}")
        self.size = int(resp.headers["Content-Length"])

    def close(self) -> None:
        """Nothing to drop: the connection stays in the process's pool for the next open."""

    def _request(self, method: str, headers: dict[str, str]) -> urllib3.BaseHTTPResponse:
        return self._host.urlopen(method, self._target, headers=headers, retries=False,
                                  redirect=False, preload_content=True)  # fmt: skip

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        out: list[bytes] = []
        for i in range(0, len(ranges), MAX_RANGES_PER_GET):
            out.extend(self._get(ranges[i : i + MAX_RANGES_PER_GET]))
        return out

    def _get(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        header = "bytes=" + ",".join(f"{a}-{b - 1}" for a, b in ranges)
        resp = self._request("GET", {**self._headers, "Range": header})
        if resp.status != 206:
            raise OSError(f"HTTP {resp.status} for a range request to {self._url}")
        body = resp.data
        ctype = resp.headers.get("Content-Type", "")
        if len(ranges) == 1 or not ctype.startswith("multipart/byteranges"):
            return _slice_single(body, ranges, resp.headers.get("Content-Range", ""))
        return _split_multipart(body, ranges)


def _slice_single(body: bytes, ranges: list[tuple[int, int]], content_range: str) -> list[bytes]:
    """A server may answer several ranges with one covering range: cut the pieces from it."""
    m = re.match(r"bytes\s+(\d+)-(\d+)/", content_range)
    base = int(m.group(1)) if m else ranges[0][0]
    return [body[a - base : b - base] for a, b in ranges]


def _split_multipart(body: bytes, ranges: list[tuple[int, int]]) -> list[bytes]:
    """Pieces of a multipart/byteranges answer, cut by each part's Content-Range length."""
    parts: dict[int, bytes] = {}
    pos = 0
    while (m := _CONTENT_RANGE.search(body, pos)) is not None:
        start, end = int(m.group(1)), int(m.group(2))
        data_at = body.index(b"\r\n\r\n", m.end()) + 4
        parts[start] = body[data_at : data_at + end - start + 1]
        pos = data_at + end - start + 1
    try:
        return [parts[a][: b - a] for a, b in ranges]
    except KeyError as err:
        raise OSError(f"multipart answer lacks the range starting at {err}") from err


def _first_line(body: bytes | None, limit: int = 200) -> str:
    """An error answer's own words (XrdHttp: "Unable to create /f.root; permission denied"):
    its first printable line, short; empty for an HTML page or nothing."""
    text = (body or b"")[:4096].decode("utf-8", "replace").strip()
    line = text.splitlines()[0].strip() if text else ""
    return "" if line.startswith("<") else line[:limit]


def _headers(url: str) -> dict[str, str]:
    return handoff.auth_headers(url, discovery.discover())


def _head(url: str, timeout: float, extra: dict[str, str] | None = None) -> Any:
    url = http_url(url)
    pool = handoff.pool_for(url)
    try:
        return pool.request("HEAD", url, headers={**_headers(url), **(extra or {})},
                            redirect=True, timeout=timeout)  # fmt: skip
    finally:
        pool.clear()


class HTTPStorage(Storage):
    protocol = HTTP

    def open(self, url: str, timeout: float) -> HTTPReader:
        return HTTPReader(http_url(url), timeout)

    def get(self, url: str, local: Path, timeout: float | None = None) -> None:
        copy_with_xrdcp(url, local, timeout)  # as https://: xrdcp knows no davs://

    def stat(self, url: str) -> int | None:
        resp = _head(url, 120)
        if resp.status == 404:
            return None
        if resp.status != 200:
            raise StorageError(url, f"HTTP {resp.status}")
        return int(resp.headers.get("Content-Length", -1))

    def reported_adler32(self, url: str) -> str | None:
        """The ``Digest`` a HEAD with ``Want-Digest: adler32`` answers (RFC 3230), if any."""
        resp = _head(url, 300, {"Want-Digest": "adler32"})
        found = _DIGEST.search(resp.headers.get("Digest", "")) if resp.status == 200 else None
        return found.group(1) if found else None

    def put(self, local: Path, url: str) -> None:
        url = http_url(url)
        pool = handoff.pool_for(url)
        headers = {**_headers(url), "Content-Length": str(local.stat().st_size)}
        for _ in range(3):  # storage may redirect a PUT to a data server: follow, resending
            with open(local, "rb") as body:
                resp = pool.request("PUT", url, body=body, headers=headers, redirect=False,
                                    preload_content=True, timeout=3600)  # fmt: skip
            if resp.status in _REDIRECTS and resp.headers.get("Location"):
                url = resp.headers["Location"]
                continue
            if resp.status not in (200, 201, 204):
                said = _first_line(resp.data)
                raise StorageError(url, f"HTTP {resp.status}" + (f": {said}" if said else ""))
            return
        raise InstoreError(f"{url}: too many redirects on PUT", "check the endpoint")

    def probe(self, url: str, timeout: float) -> str | None:
        try:
            status = _head(url, timeout).status
        except Exception as err:  # the probe only refines a message; never fail because of it
            return f"{type(err).__name__}: {err}"
        return None if status == 200 else f"HTTP {status}"

    def drain(self, url: str) -> None:
        url = http_url(url)
        pool = handoff.pool_for(url)
        try:
            resp = pool.request("GET", url, headers=_headers(url), preload_content=False,
                                timeout=60)  # fmt: skip
            if resp.status != 200:
                raise StorageError(url, f"GET answered HTTP {resp.status}",
                                   "check the file exists behind the endpoint")  # fmt: skip
            for _ in resp.stream(CHUNK):
                pass
            resp.release_conn()
        finally:
            pool.clear()
