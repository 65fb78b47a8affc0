"""http(s):// range requests: coalesced ranges go out as one multi-range GET.

Authenticated as grid storage expects: the WLCG bearer token as ``Authorization: Bearer`` (over
https only) and the X.509 proxy as client certificate (its file holds cert and key), with the
CAs of ``X509_CERT_DIR`` trusted besides the system's.

A replay opens a file at every pass and sends hundreds of small range requests a second, so the
per-request and per-open costs are the client's CPU the load section counts. One process keeps
one connection pool per host (reused by later opens, as XRootD's client keeps its channel to a
server), and each request goes to the host's pool directly, without the manager's URL parsing.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

import urllib3

from instore.credentials import discovery
from instore.credentials.handoff import auth_headers, pool_for, ssl_context
from instore.urls import is_tls

__all__ = ["HTTPBackend", "auth_headers", "ssl_context"]

MAX_RANGES_PER_GET = 64  # keeps the Range header well under server header limits
_CONTENT_RANGE = re.compile(rb"content-range:\s*bytes\s+(\d+)-(\d+)/", re.IGNORECASE)
# (pid, timeout, TLS, credentials) -> pool: a forked child makes its own, never sharing a socket
_POOLS: dict[tuple[int, float, bool, discovery.Credentials], urllib3.PoolManager] = {}


def _shared_pool(url: str, timeout: float, creds: discovery.Credentials) -> urllib3.PoolManager:
    key = (os.getpid(), timeout, is_tls(url), creds)
    if key not in _POOLS:
        _POOLS[key] = pool_for(url, timeout, creds)
    return _POOLS[key]


def _request_target(url: str) -> str:
    """The path and query a request for ``url`` names (``//f.root`` stays as written)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


class HTTPBackend:
    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        creds = discovery.discover()
        self._host = _shared_pool(url, timeout, creds).connection_from_url(url)
        self._target = _request_target(url)
        self._headers = auth_headers(url, creds)
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
