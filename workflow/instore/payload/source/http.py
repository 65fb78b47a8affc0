"""http(s):// range requests: coalesced ranges go out as one multi-range GET.

Authenticated as grid storage expects: the WLCG bearer token as ``Authorization: Bearer`` (over
https only) and the X.509 proxy as client certificate (its file holds cert and key), with the
CAs of ``X509_CERT_DIR`` trusted besides the system's.
"""

from __future__ import annotations

import re

import urllib3

from instore.credentials import discovery
from instore.credentials.handoff import auth_headers, ssl_context

__all__ = ["HTTPBackend", "auth_headers", "pool", "ssl_context"]

MAX_RANGES_PER_GET = 64  # keeps the Range header well under server header limits
_CONTENT_RANGE = re.compile(rb"content-range:\s*bytes\s+(\d+)-(\d+)/", re.IGNORECASE)


def pool(timeout: float, creds: discovery.Credentials | None = None) -> urllib3.PoolManager:
    """A connection pool that authenticates with the credentials this job holds."""
    creds = creds or discovery.discover()
    return urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=timeout, read=timeout),
        retries=False,
        ssl_context=ssl_context(creds),
    )


class HTTPBackend:
    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        creds = discovery.discover()
        self._pool = pool(timeout, creds)
        self._headers = auth_headers(url, creds)
        resp = self._pool.request("HEAD", url, headers=self._headers)
        if resp.status != 200:
            raise OSError(f"HTTP {resp.status} for HEAD {url}")
        self.size = int(resp.headers["Content-Length"])

    def close(self) -> None:
        self._pool.clear()

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        out: list[bytes] = []
        for i in range(0, len(ranges), MAX_RANGES_PER_GET):
            out.extend(self._get(ranges[i : i + MAX_RANGES_PER_GET]))
        return out

    def _get(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        header = "bytes=" + ",".join(f"{a}-{b - 1}" for a, b in ranges)
        headers = {**self._headers, "Range": header}
        resp = self._pool.request("GET", self._url, headers=headers, preload_content=True)
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
