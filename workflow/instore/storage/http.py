"""http(s):// and dav(s):// (WebDAV spellings, sent as http(s)): urllib3 with the jobs'
credentials, the proxy as TLS client certificate and the token over TLS only
(``instore.credentials.handoff``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from instore.credentials import discovery, handoff
from instore.errors import InstoreError
from instore.storage.base import CHUNK, Storage, StorageError
from instore.urls import HTTP, http_url

_DIGEST = re.compile(r"adler32=([0-9a-fA-F]{1,8})")
_REDIRECTS = (301, 302, 307, 308)


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
                raise StorageError(url, f"HTTP {resp.status}")
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
