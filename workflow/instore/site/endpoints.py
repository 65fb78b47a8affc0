"""Does an endpoint answer? One check for every site kind: a path must be a readable directory
here, a URL's host must accept a TCP connection within the site's preflight time-out.

``check_files`` goes further for network endpoints: it asks for a file through each one with
the grid credentials jobs get (``xrdfs stat`` for root://, an authenticated HEAD for http(s)),
so an admin learns before a study whether storage refuses them, lacks the file or is down."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from instore import credentials

DEFAULT_PORTS = {"root": 1094, "xroot": 1094, "roots": 1094, "xroots": 1094,
                 "http": 80, "https": 443}  # fmt: skip


def _check_network(url: str, timeout_s: float) -> str | None:
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError as err:  # e.g. a port that is not a number
        return f"not a valid URL ({err})"
    if not host or not port:
        return "cannot tell host and port from the URL"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except socket.gaierror:
        return f"host {host} does not resolve"
    except ConnectionRefusedError:
        return f"{host}:{port} refused the connection"
    except TimeoutError:
        return f"{host}:{port} did not answer within {timeout_s:g} s"
    except OSError as err:
        return f"{host}:{port} unreachable ({err.strerror or err})"


def _check_path(template: str) -> str | None:
    directory = Path(template.split("{file}")[0] or "/")
    if not directory.is_dir():
        return f"{directory} is not a directory here"
    if not os.access(directory, os.R_OK | os.X_OK):
        return f"{directory} is not readable"
    return None


def check_endpoint(protocol: str, template: str, timeout_s: float) -> str | None:
    """None if the endpoint answers, else why not."""
    if template.startswith("/"):
        return _check_path(template)
    return _check_network(template, timeout_s)


def check_all(endpoints: dict[str, str], timeout_s: float) -> list[str]:
    """One line per failing endpoint (empty = all answer). Checks run in parallel, so a site
    with several dead hosts fails within one timeout."""
    items = sorted(endpoints.items())
    with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        results = pool.map(lambda kv: check_endpoint(*kv, timeout_s), items)
    return [
        f"{proto} {tmpl}: {why}" for (proto, tmpl), why in zip(items, results, strict=False) if why
    ]


XROOTD_SCHEMES = ("root", "roots", "xroot", "xroots")
_NO_SUCH_FILE = re.compile(r"no such file|\[3011\]", re.IGNORECASE)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _stat_xrootd(url: str, timeout_s: float) -> str | None:
    parts = urlsplit(url)
    seconds = str(max(1, round(timeout_s)))
    env = {**os.environ, **credentials.host_env(), "XRD_CONNECTIONRETRY": "1",
           "XRD_CONNECTIONWINDOW": seconds, "XRD_REQUESTTIMEOUT": seconds,
           "XRD_STREAMTIMEOUT": seconds}  # fmt: skip
    cmd = ["xrdfs", f"{parts.scheme}://{parts.netloc}", "stat", parts.path]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False,
                              timeout=3 * timeout_s + 10)  # fmt: skip
    except FileNotFoundError:
        return "xrdfs is not installed here: install xrootd-client to check the file"
    except subprocess.TimeoutExpired:
        return f"unreachable: xrdfs stat did not answer within {3 * timeout_s + 10:g} s"
    if proc.returncode == 0:
        return None
    message = _last_line(proc.stderr or proc.stdout)
    if credentials.auth_refused(message):
        return credentials.auth_line(url)
    if _NO_SUCH_FILE.search(message):
        return f"no such file {parts.path} ({message})"
    return f"unreachable ({message})"


def _head_http(url: str, timeout_s: float) -> str | None:
    from instore.payload.source.http import head

    try:
        status = head(url, timeout_s)
    except Exception as err:  # urllib3 errors: refused, TLS, time-out
        return f"unreachable ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
    if status == 200:
        return None
    if status in (401, 403):
        return credentials.auth_line(url)
    if status == 404:
        return f"no such file {urlsplit(url).path} (HTTP 404)"
    return f"HEAD answered HTTP {status}"


def check_file(template: str, file: str, timeout_s: float) -> str | None:
    """None if ``file`` can be opened through the endpoint with the jobs' credentials, else
    why not: authentication refused, no such file, or unreachable. Paths are not asked."""
    url = template.format(file=file)
    scheme = urlsplit(url).scheme
    if scheme in XROOTD_SCHEMES:
        return _stat_xrootd(url, timeout_s)
    if scheme in ("http", "https"):
        return _head_http(url, timeout_s)
    return None


def check_files(endpoints: dict[str, str], file: str, timeout_s: float) -> list[str]:
    """One line per network endpoint through which ``file`` cannot be opened, in parallel."""
    items = sorted(endpoints.items())
    with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        results = pool.map(lambda kv: check_file(kv[1], file, timeout_s), items)
    return [
        f"{proto} {tmpl}: {why}" for (proto, tmpl), why in zip(items, results, strict=False) if why
    ]
