"""The files a real site will serve, checked before anything is measured: through every
endpoint, with the credentials the jobs will use, each test file is asked for its size and
adler32 (compared with the local copy) and the first one is opened and its first bytes read.

A failing endpoint gets one line that names the cause an admin can act on: TLS (and which CA
is not trusted), a credential the storage refused, a missing file, a copy that differs."""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import socket
import ssl
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from instore import credentials
from instore.errors import InstoreError
from instore.site import upload
from instore.storage import StorageError, diagnosis, open_reader, storage_for
from instore.storage import base as storage_base
from instore.storage.base import read_back_note
from instore.urls import http_url, is_http, is_xrootd

ROOT_MAGIC = b"root"
_TLS_FAILED = re.compile(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed", re.IGNORECASE)
_GSI_NO_CA = re.compile(r"secgsi_GetCA: certificate not found")
_GSI_SERVER_CAS = re.compile(r"ca:([0-9a-f]{8}\.\d(?:\|[0-9a-f]{8}\.\d)*)")
log = logging.getLogger(__name__)
INSTALL_CA = ("install the CA that signed it in X509_CERT_DIR (for WLCG: the IGTF bundle, "
              "e.g. ca-policy-egi-core) or point X509_CERT_DIR at a directory that has it")  # fmt: skip


@functools.cache
def _local_adler32(path: Path, mtime_ns: int) -> str:
    return storage_base.adler32(path)


def local_adler32(path: Path) -> str:
    """The local copy's adler32, computed once per file version."""
    return _local_adler32(path, path.stat().st_mtime_ns)


def _cert_dir() -> str:
    creds = credentials.discover()
    return str(creds.cert_dir) if creds.cert_dir else "unset"


def _issuer(pem: str) -> str:
    proc = subprocess.run(["openssl", "x509", "-noout", "-issuer", "-nameopt", "compat"],
                          input=pem, capture_output=True, text=True, check=False, timeout=20)  # fmt: skip
    return proc.stdout.strip().removeprefix("issuer=") or "an issuer openssl cannot read"


def https_tls_problem(url: str, timeout_s: float) -> str | None:
    """Why this host's TLS certificate is not trusted with the system's CAs plus the grid's
    (X509_CERT_DIR), naming its issuer (None: it is trusted, or the host cannot be reached)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    creds = credentials.discover()
    ctx = ssl.create_default_context()
    if creds.cert_dir is not None:
        ctx.load_verify_locations(capath=str(creds.cert_dir))
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            ctx.wrap_socket(sock, server_hostname=host).close()
        return None
    except ssl.SSLCertVerificationError as err:
        reason, code = err.verify_message or str(err), err.verify_code
    except OSError:
        return None
    try:
        pem = ssl.get_server_certificate((host, port), timeout=timeout_s)
    except OSError:
        return f"TLS: the server's certificate is not trusted ({reason})"
    if code == 62:  # hostname mismatch: the CA is fine, the name is not
        return f"TLS: the server's certificate does not name {host} ({reason})"
    return (
        f"TLS: the server's certificate is issued by {_issuer(pem)}, which neither the "
        f"system nor X509_CERT_DIR ({_cert_dir()}) trusts ({reason}) -- {INSTALL_CA}"
    )


def gsi_ca_problem(url: str, timeout_s: float) -> str | None:
    """For a GSI refusal: whether it was this client that could not verify the server because
    X509_CERT_DIR lacks the server's CA (the server names the hashes of its CAs)."""
    parts = urlsplit(url)
    env = {**os.environ, **credentials.host_env(), "XrdSecDEBUG": "1",
           "XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": str(max(1, round(timeout_s)))}  # fmt: skip
    try:
        proc = subprocess.run(["xrdfs", f"{parts.scheme}://{parts.netloc}", "stat", parts.path],
                              capture_output=True, text=True, env=env, check=False,
                              timeout=3 * timeout_s + 10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = proc.stdout + proc.stderr
    if not _GSI_NO_CA.search(text):
        return None
    hashes = _GSI_SERVER_CAS.search(text)
    named = f" (the server's CA hash: {hashes.group(1).replace('|', ' or ')})" if hashes else ""
    return (
        f"GSI: the server's host certificate is issued by a CA that X509_CERT_DIR "
        f"({_cert_dir()}) does not hold{named} -- {INSTALL_CA}"
    )


def cause(url: str, message: str, timeout_s: float) -> str:
    """The one line for a failed request: TLS and CA problems are named before a refusal is
    blamed on the credential, so the admin is not sent to renew a proxy that is fine."""
    if is_http(url) and _TLS_FAILED.search(message):
        return https_tls_problem(http_url(url), timeout_s) or f"TLS: {message}"
    if diagnosis.auth_refused(message):
        if is_xrootd(url) and credentials.discover().proxy_found:
            gsi = gsi_ca_problem(url, timeout_s)
            if gsi:
                return gsi
        return diagnosis.auth_line(url)
    return message


class VerifiedCopies:
    """The copies a sweep already verified whole (size and adler32) at a site, kept in
    ``results/<site>/verified.json``. The next sweep (each section is one) asks the endpoint
    only for the size of a copy verified within ``max_age_s`` against the same local file
    version, instead of making the storage checksum every file again (and, on a POSIX
    endpoint, reading every file whole on this node). ``instore site preflight`` keeps none:
    it always checks in full."""

    def __init__(self, path: Path, max_age_s: float = 12 * 3600) -> None:
        self.path, self.max_age_s = path, max_age_s
        try:
            self._seen: dict[str, dict[str, float]] = json.loads(path.read_text())
        except (OSError, ValueError):
            self._seen = {}

    @staticmethod
    def _version(local: Path) -> dict[str, float]:
        st = local.stat()
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}

    def known(self, url: str, local: Path) -> bool:
        seen = self._seen.get(url)
        if not seen or not local.is_file():
            return False
        fresh = time.time() - seen.get("verified_at", 0) < self.max_age_s
        return fresh and {k: seen.get(k) for k in ("size", "mtime_ns")} == self._version(local)

    def add(self, url: str, local: Path) -> None:
        if local.is_file():
            self._seen[url] = {**self._version(local), "verified_at": time.time()}

    def save(self) -> None:
        """Keep them for the next sweep; if they cannot be kept (a full results disk), that
        sweep checksums them again, and nothing measured is at stake."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self._seen, indent=1, sort_keys=True))
            tmp.replace(self.path)
        except OSError as err:
            log.warning("could not keep the verified copies in %s (%s): the next sweep "
                        "checksums them again", self.path, err)  # fmt: skip


def first_bytes(url: str, timeout_s: float) -> bytes:
    """The file's first bytes (as many as ROOT's magic), read with the jobs' credentials."""
    reader = open_reader(url, timeout_s)
    try:
        return reader.read_ranges([(0, len(ROOT_MAGIC))])[0]
    finally:
        reader.close()


def _check_copy(
    url: str, local: Path, verified: VerifiedCopies | None = None, checksum: bool = True
) -> tuple[str | None, int]:
    """(None, bytes read back) if the endpoint holds a copy equal to ``local`` (or ``local``
    is not here to compare with and the endpoint has the file), else (the one line saying how
    it differs, 0). A copy ``verified`` already, or any without ``checksum``, is compared by
    size only; a storage that reports no adler32 has the copy read back to compute it."""
    missing = f"{url}: no such file there -- put the test files in place: instore site upload"
    if not local.is_file():
        try:
            there = storage_for(url).stat(url)
        except StorageError as err:
            raise diagnosis.diagnosed(err) from err
        return (None, 0) if there is not None else (missing, 0)
    trusted = not checksum or (verified is not None and verified.known(url, local))
    try:
        copy = upload.found(url, local.stat().st_size, None if trusted else local_adler32(local))
    except upload.CopyDiffers as err:
        return (str(err) if checksum else f"{err.differs} -- {upload.STALE_CACHE}"), 0
    if copy is None:
        return missing, 0
    if verified is not None and not trusted:  # a size-only check does not renew the verification
        verified.add(url, local)
    summed = copy.checksum
    return None, summed.bytes_read if summed and summed.how == "read back" else 0


def verify_endpoint(
    template: str,
    files: Sequence[Path],
    timeout_s: float,
    verified: VerifiedCopies | None = None,
    notes: list[str] | None = None,
    checksum: bool = True,
) -> str | None:
    """None if every file is there and equal to its local copy, and the first one opens and
    reads through ``template``; else the first problem, in one line. ``notes`` gets one line
    when the endpoint reports no adler32 and the copies were read back to compute it. Without
    ``checksum`` (an XCache, whose copies are its origin's: reading each back would fill it)
    each copy is compared by size."""
    read_back, copies = 0, 0
    for local in files:
        url = template.format(file=local.name)
        try:
            problem, read = _check_copy(url, local, verified, checksum)
        except InstoreError as err:
            return cause(url, str(err), timeout_s)
        except Exception as err:  # urllib3/ssl errors: refused, TLS, time-out
            return cause(url, f"{type(err).__name__}: {str(err).splitlines()[0]}", timeout_s)
        if problem:
            return problem
        read_back, copies = read_back + read, copies + bool(read)
    if copies and notes is not None:
        notes.append(read_back_note(read_back, copies))
    if not files:
        return None
    url = template.format(file=files[0].name)
    try:
        head = first_bytes(url, timeout_s)
    except InstoreError as err:
        return cause(url, str(err), timeout_s)
    except Exception as err:
        return cause(url, f"cannot open and read it ({str(err).splitlines()[0]})", timeout_s)
    if head != ROOT_MAGIC:
        return f"{url}: does not start like a ROOT file (first bytes {head!r})"
    return None
