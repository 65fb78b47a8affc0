"""Saying why storage refused a request, in one line with its fix: an authentication refusal
is said as one (the fix is a credential, never "regenerate the file"), naming what is wrong
with the credential found (``discovery``). Where an engine kept the reason to itself, the
storage is asked again (``probe``). It belongs to the storage, which says why it refused,
above the credentials it names: ``instore.storage`` itself never loads it."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

from instore.credentials import discovery
from instore.credentials.discovery import (
    CERT_DIR_ENV,
    CREATE_PROXY,
    GET_TOKEN,
    PROXY_ENV,
    RENEW_PROXY,
    Credentials,
)
from instore.errors import InstoreError
from instore.storage import StorageError, storage_for
from instore.urls import HTTP, XROOTD, is_local, is_tls, protocol_of

# What storage says when it refuses a client's identity.
_AUTH_REFUSED = re.compile(
    r"auth(entication)? (failed|refused)|no protocols left to try|not authori[sz]ed|unauthori[sz]ed"
    r"|\bHTTP (401|403)\b|\[3010\]",
    re.IGNORECASE,
)
# What storage says when it knows who the client is and refuses the operation on the path: XRootD
# 5.5 answers "[3010] Unable to create /f.root; permission denied" (kXR_NotAuthorized, the code
# of an identity refusal too) when its file system or its authorisation will not let the mapped
# user write there; XrdHttp answers HTTP 403 with the same words.
_PATH_REFUSED = re.compile(
    r"unable to (create|write|open|mkdir|rename|remove|locate) \S+; permission denied"
    r"|read-only file system",
    re.IGNORECASE,
)
_NO_SUCH_FILE = re.compile(r"no such file|\[3011\]|\bHTTP 404\b|not found", re.IGNORECASE)
_ROOT_COULD_NOT_OPEN = re.compile(r"ROOT could not open|cannot open", re.IGNORECASE)


def auth_refused(text: str) -> bool:
    """Whether storage's message says it refused the client's identity."""
    return bool(_AUTH_REFUSED.search(text))


def _protocol(url: str) -> str | None:
    try:
        return protocol_of(url)
    except InstoreError:
        return None


def auth_hint(url: str, creds: Credentials | None = None) -> str:
    """The likely cause and fix of an authentication refusal, from what this job holds."""
    creds = creds or discovery.discover()
    protocol, tls = _protocol(url), is_tls(url)
    if not creds.proxy_found and creds.token is None:
        where = f"{PROXY_ENV}={creds.proxy}"
        return f"no valid X.509 proxy found ({where}) and no bearer token; {CREATE_PROXY}"
    if creds.proxy_found:
        info = discovery.proxy_info(creds.proxy)
        if info.expired():
            return (
                f"X.509 proxy {creds.proxy} expired at {discovery.iso(info.expires)}: {RENEW_PROXY}"
            )
        if creds.cert_dir is None:
            return (
                f"no CA certificate directory ({CERT_DIR_ENV}); install the grid CAs or export it"
            )
        weak = discovery.weak_proxy_line(creds.proxy) if protocol == HTTP and tls else None
        if weak:
            return weak
        return (f"the server refused X.509 proxy {creds.proxy} (subject {info.subject}); "
                "check it is mapped/authorised there, or renew it with the right VO (voms-proxy-init)")  # fmt: skip
    if protocol == HTTP and not tls:
        return "a bearer token is only sent over https; use an https:// endpoint"
    xrootd = protocol == XROOTD
    if xrootd and os.environ.get(PROXY_ENV) and not creds.proxy_found:
        return (f"{PROXY_ENV} names {creds.proxy}, which does not exist: the XRootD client then "
                f"cannot set up TLS and never sends the bearer token; unset {PROXY_ENV} or "
                "make the proxy")  # fmt: skip
    if xrootd and _open_to_others(creds.token_file):
        return (f"bearer token file {creds.token_file} can be read by others, so XRootD's ztn "
                f"client never sends it; chmod 600 {creds.token_file}")  # fmt: skip
    return f"the server refused the bearer token; {GET_TOKEN} with the scopes it needs"


def _open_to_others(path: Path | None) -> bool:
    """Whether group or others may touch the token file (XrdSecztn then keeps the token)."""
    try:
        return path is not None and bool(path.stat().st_mode & 0o077)
    except OSError:
        return False


def auth_line(url: str, creds: Credentials | None = None) -> str:
    """One line: the storage refused us, and what to do about it."""
    return f"authentication refused by {url}: {auth_hint(url, creds)}"


def path_refused(text: str) -> bool:
    """Whether storage's message says it knew the client and refused the operation on the path
    (its file system's permissions or its authorisation), not the client's identity."""
    return bool(_PATH_REFUSED.search(text))


def _identity(creds: Credentials) -> str:
    if creds.proxy_found:
        return f"X.509 proxy {discovery.proxy_info(creds.proxy).subject}"
    return "the bearer token" if creds.token is not None else "anonymous access"


def _directory(url: str) -> str:
    return url.rsplit("/", 1)[0] + "/"


def identity_accepted(url: str) -> bool:
    """Whether the endpoint answers a request for ``url``'s directory with this job's
    credentials (asked when a write is refused in words that fit either cause)."""
    answer = probe(_directory(url))
    return answer is None or not auth_refused(answer)


def write_line(url: str, reason: str, creds: Credentials | None = None) -> InstoreError:
    """A write refused to an identity the storage accepted: the directory's permissions, not
    the credential. A bearer token's scopes are what the storage authorises it by."""
    creds = creds or discovery.discover()
    folder = _directory(url)
    fix = (f"ask the site to make {folder} writable for that identity, or point the site "
           "file's endpoints at a directory it may write")  # fmt: skip
    if creds.token is not None and not creds.proxy_found:
        scope = posixpath.dirname("/" + urlsplit(url).path.lstrip("/"))
        fix = (f"get a token whose scopes let it write there (storage.create:{scope}), or ask "
               f"the site to make {folder} writable for it")  # fmt: skip
    said = " ".join(reason.replace("\x00", " ").split())
    coded = re.search(
        r"\[\d{4}\].*", said
    )  # xrdcp's "Run: [ERROR] Server responded ...: [3010] ..."
    said = coded.group(0) if coded else said
    return InstoreError(f"{url}: the storage accepted {_identity(creds)} but refused to write "
                        f"there ({said})", fix)  # fmt: skip


def diagnosed(err: StorageError, writing: bool = False) -> InstoreError:
    """A storage failure as the one line to show: a refusal of our identity names the
    credential's fix; a write refused to an identity the storage accepted names the
    directory's permissions (the same proxy reads fine there); any other failure is the
    storage's own word."""
    if writing and (path_refused(err.reason) or (auth_refused(err.reason)
                                                 and identity_accepted(err.url))):  # fmt: skip
        return write_line(err.url, err.reason)
    if auth_refused(err.reason):
        return InstoreError(auth_line(err.url))
    return err


def probe(url: str, timeout: float = 10.0) -> str | None:
    """Ask the endpoint about ``url`` (xrdfs stat / HEAD) with this job's credentials: None if
    it answers, else its message. Used when an engine could not say why an open failed; xrdfs
    runs apart, so the engine's XRootD client is not mixed with another in one process."""
    if is_local(url) or _protocol(url) is None:
        return None
    return storage_for(url).probe(url, timeout)


def explain(url: str, error: str | None) -> str | None:
    """A job's error, with an authentication refusal said as one: the fix is a credential,
    never "regenerate the file". Other errors pass unchanged."""
    if not error or is_local(url):
        return error
    if auth_refused(error):
        return auth_line(url)
    if _ROOT_COULD_NOT_OPEN.search(error):  # the engine kept the reason to itself: ask
        answer = probe(url)
        if answer and auth_refused(answer):
            return auth_line(url)
        if answer and _NO_SUCH_FILE.search(answer):
            return f"{url}: no such file on the endpoint ({answer.strip()}) -- check the path"
    return error
