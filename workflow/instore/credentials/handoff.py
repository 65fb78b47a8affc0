"""Handing the credentials found (``discovery``) to a client: the binds and variables a job
gets, the variables a tool run here gets (xrdcp, xrdfs), and what an HTTP client presents (the
proxy as TLS client certificate, the token as a header over TLS only, and the connection pool
that presents them).

A token given as a value is written to a private file, so it reaches jobs as
``BEARER_TOKEN_FILE`` and never on a command line or in a record."""

from __future__ import annotations

import atexit
import os
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3

from instore.credentials import discovery
from instore.credentials.discovery import (
    CERT_DIR_ENV,
    PROXY_ENV,
    RENEW_PROXY,
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    VOMS_DIR_ENV,
    Credentials,
)
from instore.errors import InstoreError
from instore.urls import is_tls

INSIDE = "/instore/creds"  # where a container sees the credentials
_WRITTEN: set[Path] = set()  # private token files this process wrote (removed at exit)


@dataclass(frozen=True)
class JobCredentials:
    """What a job is given: (host path, path inside) pairs to bind read-only, and variables."""

    binds: tuple[tuple[Path, str], ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def _private_token_file(token: str, directory: Path) -> Path:
    """The token in a 0600 file of a 0700 directory (removed when this process exits), so it is
    handed over as a file: never a command line, never an environment dump."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    path = directory / f"bt_u{discovery._uid()}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    os.chmod(path, 0o600)
    if path not in _WRITTEN:
        _WRITTEN.add(path)
        atexit.register(path.unlink, missing_ok=True)
    return path


def for_job(container: bool, token_dir: Path, creds: Credentials | None = None) -> JobCredentials:
    """Binds and variables that give a job (on the host or in a container) the credentials
    found here; in a container they are bound read-only under ``/instore/creds``."""
    creds = creds or discovery.discover()
    items: list[tuple[str, Path, str]] = []  # (variable, host path, name inside)
    if creds.proxy_found:
        items.append((PROXY_ENV, creds.proxy, "proxy"))
    if creds.cert_dir is not None:
        items.append((CERT_DIR_ENV, creds.cert_dir, "certificates"))
    if creds.voms_dir is not None:
        items.append((VOMS_DIR_ENV, creds.voms_dir, "vomsdir"))
    if creds.token is not None:
        token_file = creds.token_file or _private_token_file(creds.token, token_dir)
        items.append((TOKEN_FILE_ENV, token_file, "token"))
    if not container:
        return JobCredentials((), {var: str(path) for var, path, _ in items})
    binds = tuple((path.resolve(), f"{INSIDE}/{name}") for _, path, name in items)
    return JobCredentials(binds, {var: f"{INSIDE}/{name}" for var, _, name in items})


def host_env(creds: Credentials | None = None) -> dict[str, str]:
    """Variables for a tool run here (xrdfs, xrdcp): the credentials found, named explicitly."""
    creds = creds or discovery.discover()
    env = dict(for_job(False, Path("/nonexistent"), _without_token_value(creds)).env)
    if creds.token is not None and creds.token_file is None:
        env[TOKEN_ENV] = creds.token  # a child's environment, never a command line or a record
    return env


def _without_token_value(creds: Credentials) -> Credentials:
    if creds.token_file is not None:
        return creds
    return Credentials(creds.proxy, creds.proxy_found, creds.cert_dir, creds.voms_dir)


def ssl_context(creds: Credentials) -> ssl.SSLContext:
    """The system CAs plus the grid's (``X509_CERT_DIR``), and the proxy as client certificate."""
    ctx = ssl.create_default_context()
    if creds.cert_dir is not None:
        ctx.load_verify_locations(capath=str(creds.cert_dir))
    if creds.proxy_found:
        try:
            ctx.load_cert_chain(str(creds.proxy))
        except ssl.SSLError as err:  # readable, but OpenSSL will not present it
            weak = discovery.weak_proxy_line(creds.proxy)
            raise InstoreError(weak or f"X.509 proxy {creds.proxy} cannot serve as a TLS client "
                               f"certificate ({err.reason or err})",
                               None if weak else RENEW_PROXY) from err  # fmt: skip
        except OSError:
            pass  # an unreadable proxy is left out: the server then says it wants one
    return ctx


def pool_for(
    url: str, timeout: float | None = None, creds: Credentials | None = None
) -> urllib3.PoolManager:
    """A connection pool that authenticates with the credentials this job holds; over plain
    http there is no certificate to present, so no TLS context (building one loads the
    system's CAs: 30 ms of CPU, paid at every open a replay makes)."""
    options: dict[str, Any] = {"retries": False}
    if timeout is not None:
        options["timeout"] = urllib3.Timeout(connect=timeout, read=timeout)
    if is_tls(url):
        options["ssl_context"] = ssl_context(creds or discovery.discover())
    return urllib3.PoolManager(**options)


def auth_headers(url: str, creds: Credentials) -> dict[str, str]:
    """The bearer token, sent only over TLS (a token on plain http is a token given away)."""
    if creds.token is None or not is_tls(url):
        return {}
    return {"Authorization": f"Bearer {creds.token}"}
