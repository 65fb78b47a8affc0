"""The URL schemes storage speaks, said once: which protocol each is (a path, XRootD, HTTP),
whether it runs over TLS, its default port, and the WebDAV spellings (dav, davs) that HTTP
clients know as http and https. Every other module asks this one; none spells a scheme."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from instore.errors import InstoreError

FILE, XROOTD, HTTP = "file", "xrootd", "http"  # the storage protocols (``protocol_of``)


@dataclass(frozen=True)
class Scheme:
    """What a URL scheme means: the protocol spoken, TLS or not, the port when none is given,
    and the name clients that do not know WebDAV spellings use for it."""

    protocol: str
    tls: bool = False
    port: int | None = None
    plain_name: str | None = None  # davs -> https; None: the scheme's own name


SCHEMES: dict[str, Scheme] = {
    "": Scheme(FILE),
    "file": Scheme(FILE),
    "root": Scheme(XROOTD, port=1094),
    "xroot": Scheme(XROOTD, port=1094),
    "roots": Scheme(XROOTD, tls=True, port=1094),
    "xroots": Scheme(XROOTD, tls=True, port=1094),
    "http": Scheme(HTTP, port=80),
    "dav": Scheme(HTTP, port=80, plain_name="http"),
    "https": Scheme(HTTP, tls=True, port=443),
    "davs": Scheme(HTTP, tls=True, port=443, plain_name="https"),
}
XROOTD_SCHEMES = tuple(name for name, s in SCHEMES.items() if s.protocol == XROOTD)
# The scheme a URL built here is spelt with, per protocol; HTTP's that clients all know
CANONICAL = {XROOTD: "root", HTTP: "http"}
PLAIN_HTTP_SCHEMES = tuple(
    name for name, s in SCHEMES.items() if s.protocol == HTTP and s.plain_name is None
)
HTTP_SCHEMES = tuple(name for name, s in SCHEMES.items() if s.protocol == HTTP)
DEFAULT_PORTS = {name: s.port for name, s in SCHEMES.items() if s.port is not None}


class UnknownScheme(InstoreError, ValueError):
    """A URL no storage protocol here speaks (a ValueError too, as uproot's sources raise)."""


def scheme_of(url: str) -> Scheme:
    """The scheme's meaning; one line naming the schemes known when it is none of them."""
    name = urlparse(url).scheme.lower()
    if name not in SCHEMES:
        known = ", ".join(f"{n}://" for n in SCHEMES if n)
        raise UnknownScheme(f"{url}: unknown URL scheme {name!r}", f"use a path or one of {known}")
    return SCHEMES[name]


def protocol_of(url: str) -> str:
    """``file`` (a path or file:// URL), ``xrootd`` or ``http``: what speaks to ``url``."""
    return scheme_of(url).protocol


def is_xrootd(url: str) -> bool:
    return urlparse(url).scheme.lower() in XROOTD_SCHEMES


def is_http(url: str) -> bool:
    return urlparse(url).scheme.lower() in HTTP_SCHEMES


def is_tls(url: str) -> bool:
    """Whether the URL's connection is encrypted (a bearer token may be sent over it)."""
    found = SCHEMES.get(urlparse(url).scheme.lower())
    return found is not None and found.tls


def default_port(url: str) -> int | None:
    return DEFAULT_PORTS.get(urlparse(url).scheme.lower())


def http_url(url: str) -> str:
    """davs:// as https:// (dav:// as http://), for clients that know only those; any other
    URL unchanged."""
    name, _, rest = url.partition(":")
    found = SCHEMES.get(name.lower())
    return f"{found.plain_name}:{rest}" if rest and found and found.plain_name else url


def is_local_scheme(name: str) -> bool:
    """Whether a scheme's name (ROOT's TUrl protocol, "" for a path) means this node's files."""
    found = SCHEMES.get(name.lower())
    return found is not None and found.protocol == FILE


def is_local(url: str) -> bool:
    """A path or a file:// URL: read on this node, not through a storage protocol."""
    return is_local_scheme(urlparse(url).scheme)


def local_path(url: str) -> str:
    return urlparse(url).path if url.startswith("file:") else url


def url_for(protocol: str, host: str, port: int, path: str) -> str:
    """The URL of the absolute ``path`` on a server of ``protocol`` (``xrootd`` or ``http``) at
    ``host:port``, as its servers expect it: root://host:port//path, http://host:port/path."""
    slash = "/" if protocol == XROOTD else ""  # XRootD marks an absolute path with //
    return f"{CANONICAL[protocol]}://{host}:{port}{slash}{path}"
