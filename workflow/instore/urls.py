"""The URL schemes storage speaks, said once: which are XRootD, which are HTTP, and the
WebDAV spellings (dav, davs) that HTTP clients know as http and https."""

from __future__ import annotations

from urllib.parse import urlparse

XROOTD_SCHEMES = ("root", "roots", "xroot", "xroots")
HTTP_SCHEMES = ("http", "https", "dav", "davs")


def http_url(url: str) -> str:
    """davs:// as https:// (dav:// as http://), for clients that know only those; any other
    URL unchanged."""
    name, _, rest = url.partition(":")
    return {"dav": "http", "davs": "https"}.get(name, name) + ":" + rest if rest else url


def is_local(url: str) -> bool:
    """A path or a file:// URL: read on this node, not through a storage protocol."""
    return urlparse(url).scheme in ("", "file")


def local_path(url: str) -> str:
    return urlparse(url).path if url.startswith("file:") else url
