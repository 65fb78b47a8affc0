"""The URL schemes storage speaks, said once: which are XRootD, which are HTTP, and the
WebDAV spellings (dav, davs) that HTTP clients know as http and https."""

from __future__ import annotations

XROOTD_SCHEMES = ("root", "roots", "xroot", "xroots")
HTTP_SCHEMES = ("http", "https", "dav", "davs")


def http_url(url: str) -> str:
    """davs:// as https:// (dav:// as http://), for clients that know only those; any other
    URL unchanged."""
    name, _, rest = url.partition(":")
    return {"dav": "http", "davs": "https"}.get(name, name) + ":" + rest if rest else url
