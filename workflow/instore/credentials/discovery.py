"""Finding grid credentials the way grid jobs find them, and saying what may be said of them.

Discovery follows the conventions every grid client uses, so an admin's usual environment works:

* X.509: ``X509_USER_PROXY`` (default ``/tmp/x509up_u<uid>``), ``X509_CERT_DIR`` (default
  ``/etc/grid-security/certificates``) and ``X509_VOMS_DIR``;
* WLCG bearer tokens (WLCG Bearer Token Discovery): ``BEARER_TOKEN``, then
  ``BEARER_TOKEN_FILE``, then ``$XDG_RUNTIME_DIR/bt_u<uid>``, then ``/tmp/bt_u<uid>``.

What a record may keep is ``describe()``: the kind, the proxy's subject and its expiry; proxy
and token contents stay in their files (``handoff`` gives them to clients,
``instore.storage.diagnosis`` says why one was refused). Standard library only (``cryptography`` if installed): the payload
imports this module once per job.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from instore.errors import InstoreError

PROXY_ENV, CERT_DIR_ENV, VOMS_DIR_ENV = "X509_USER_PROXY", "X509_CERT_DIR", "X509_VOMS_DIR"
TOKEN_ENV, TOKEN_FILE_ENV = "BEARER_TOKEN", "BEARER_TOKEN_FILE"
DEFAULT_CERT_DIR = "/etc/grid-security/certificates"
RENEW_PROXY = "renew it with voms-proxy-init or xrdgsiproxy init"
CREATE_PROXY = "create one with voms-proxy-init (or xrdgsiproxy init) and export X509_USER_PROXY"
GET_TOKEN = "get one (e.g. oidc-token or htgettoken) and export BEARER_TOKEN_FILE"
# OpenSSL 3 (security level 1 and up) refuses a client certificate signed with these, so an
# https server never sees such a proxy; xrdgsiproxy 5.5 signs with sha1, voms-proxy-init sha256.
WEAK_DIGESTS = ("md5", "sha1")
SHA256_PROXY = "make a proxy signed with SHA-256: voms-proxy-init does (xrdgsiproxy 5.5 uses SHA-1)"


@dataclass(frozen=True)
class Credentials:
    """What this process would authenticate with. ``proxy`` is where the proxy is looked for
    (found or not); ``token`` is never printed (``repr=False``)."""

    proxy: Path
    proxy_found: bool
    cert_dir: Path | None
    voms_dir: Path | None
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None  # the file the token came from; None: BEARER_TOKEN's value

    @property
    def kind(self) -> str | None:
        kinds = [k for k, has in (("x509", self.proxy_found), ("token", self.token)) if has]
        return "+".join(kinds) or None


def proxy_digest(path: Path) -> str | None:
    """The hash the proxy's certificate is signed with (``sha1``, ``sha256``...; None:
    unreadable). Asked only when explaining a refusal, so one openssl call is cheap enough."""
    try:
        proc = subprocess.run(["openssl", "x509", "-in", str(path), "-noout", "-text"],
                              capture_output=True, text=True, timeout=20, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"Signature Algorithm:\s*(\w+?)With", proc.stdout)
    return found.group(1).lower() if found else None


def weak_proxy_line(path: Path) -> str | None:
    """Why an https server cannot be shown this proxy, if its signature is too weak for the
    system's OpenSSL (None: it is not)."""
    digest = proxy_digest(path)
    if digest not in WEAK_DIGESTS:
        return None
    return (f"X.509 proxy {path} is signed with {digest.upper()}, which OpenSSL refuses as a "
            f"TLS client certificate, so https servers never see it; {SHA256_PROXY}")  # fmt: skip


def _uid() -> int:
    return os.getuid()


def _read_token(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None


def find_token(env: Mapping[str, str], uid: int) -> tuple[str | None, Path | None]:
    """The bearer token and the file it is in, in WLCG discovery order (None: no token)."""
    if env.get(TOKEN_ENV, "").strip():
        return env[TOKEN_ENV].strip(), None
    candidates = []
    if env.get(TOKEN_FILE_ENV):
        candidates.append(Path(env[TOKEN_FILE_ENV]))
    if env.get("XDG_RUNTIME_DIR"):
        candidates.append(Path(env["XDG_RUNTIME_DIR"]) / f"bt_u{uid}")
    candidates.append(Path(f"/tmp/bt_u{uid}"))
    for path in candidates:
        token = _read_token(path)
        if token:
            return token, path
    return None, None


def discover(env: Mapping[str, str] | None = None, uid: int | None = None) -> Credentials:
    """The credentials this environment holds, by the grid's conventions."""
    env = os.environ if env is None else env
    uid = _uid() if uid is None else uid
    proxy = Path(env.get(PROXY_ENV) or f"/tmp/x509up_u{uid}")
    cert_dir = Path(env.get(CERT_DIR_ENV) or DEFAULT_CERT_DIR)
    voms = env.get(VOMS_DIR_ENV)
    token, token_file = find_token(env, uid)
    return Credentials(
        proxy=proxy,
        proxy_found=proxy.is_file(),
        cert_dir=cert_dir if cert_dir.is_dir() else None,
        voms_dir=Path(voms) if voms and Path(voms).is_dir() else None,
        token=token,
        token_file=token_file,
    )


@dataclass(frozen=True)
class ProxyInfo:
    """What may be said about a proxy: its subject and when it expires (None: unreadable)."""

    subject: str | None
    expires: dt.datetime | None

    def expired(self, now: dt.datetime | None = None) -> bool:
        return self.expires is not None and self.expires <= (now or dt.datetime.now(dt.UTC))


def _grid_dn(name: object) -> str:
    """``/DC=org/CN=...``, the way grid tools print a DN."""
    return "".join(f"/{attr.rfc4514_string()}" for attr in name)  # type: ignore[attr-defined]


def _with_cryptography(path: Path) -> ProxyInfo | None:
    try:
        from cryptography import x509
    except ImportError:
        return None
    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return ProxyInfo(None, None)
    return ProxyInfo(_grid_dn(cert.subject), cert.not_valid_after_utc)


def _with_openssl(path: Path) -> ProxyInfo:
    cmd = ["openssl", "x509", "-in", str(path), "-noout", "-subject", "-enddate",
           "-nameopt", "compat"]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ProxyInfo(None, None)
    if proc.returncode != 0:
        return ProxyInfo(None, None)
    fields = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    expires = None
    if "notAfter" in fields:
        try:
            when = dt.datetime.strptime(fields["notAfter"].strip(), "%b %d %H:%M:%S %Y %Z")
            expires = when.replace(tzinfo=dt.UTC)
        except ValueError:
            expires = None
    subject = fields.get("subject", "").strip() or None
    return ProxyInfo(subject, expires)


@cache
def _proxy_info(path: Path, mtime_ns: int) -> ProxyInfo:
    return _with_cryptography(path) or _with_openssl(path)


def proxy_info(path: Path) -> ProxyInfo:
    """Subject and expiry of the proxy's first certificate (read once per file version)."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return ProxyInfo(None, None)
    return _proxy_info(path, mtime)


def iso(when: dt.datetime | None) -> str | None:
    return when.isoformat(timespec="seconds") if when else None


def describe(creds: Credentials | None = None) -> dict[str, str | None] | None:
    """What a record keeps: the kind, and for a proxy its subject and expiry. Nothing else."""
    creds = creds or discover()
    if creds.kind is None:
        return None
    out: dict[str, str | None] = {"kind": creds.kind}
    if creds.proxy_found:
        info = proxy_info(creds.proxy)
        out.update(subject=info.subject, expires=iso(info.expires))
    return out


def held(creds: Credentials | None = None, now: dt.datetime | None = None) -> str:
    """What this process holds, for a person to read: the proxy's subject and time left, and
    whether a token is there (never its value)."""
    creds = creds or discover()
    parts = []
    if creds.proxy_found:
        info = proxy_info(creds.proxy)
        if info.expires is not None:
            left = info.expires - (now or dt.datetime.now(dt.UTC))
            hours, rest = divmod(max(0, int(left.total_seconds())), 3600)
            parts.append(f"X.509 proxy {info.subject}, {hours}h{rest // 60:02d}m left")
        else:
            parts.append(f"X.509 proxy {creds.proxy} (unreadable)")
    if creds.token is not None:
        parts.append("a bearer token")
    return " and ".join(parts) or "no credential"


def problem(auth: str, creds: Credentials | None = None) -> InstoreError | None:
    """Why jobs cannot authenticate as a site with ``auth`` needs (None: they can)."""
    creds = creds or discover()
    if auth == "x509":
        if not creds.proxy_found:
            return InstoreError(f"no X.509 proxy at {creds.proxy} ({PROXY_ENV}"
                                f"{'=' + str(creds.proxy) if os.environ.get(PROXY_ENV) else ' unset'})",
                                CREATE_PROXY)  # fmt: skip
        info = proxy_info(creds.proxy)
        if info.expired():
            return InstoreError(f"X.509 proxy {creds.proxy} expired at {iso(info.expires)}",
                                RENEW_PROXY)  # fmt: skip
        if creds.cert_dir is None:
            where = os.environ.get(CERT_DIR_ENV) or DEFAULT_CERT_DIR
            return InstoreError(f"no CA certificate directory at {where}",
                                f"install the grid CA certificates or export {CERT_DIR_ENV}")  # fmt: skip
    if auth == "token" and creds.token is None:
        return InstoreError("no bearer token found (BEARER_TOKEN, BEARER_TOKEN_FILE, "
                            "$XDG_RUNTIME_DIR/bt_u<uid>, /tmp/bt_u<uid>)", GET_TOKEN)  # fmt: skip
    return None


def require(auth: str, site: str) -> None:
    """Refuse, in one line and before any job, a site whose credential is missing or expired."""
    err = problem(auth, discover())
    if err is not None:
        raise InstoreError(f"site {site} needs {auth} credentials: {err.problem}", err.fix)
