"""Does an endpoint answer? One check for every site kind: a path must be a readable directory
here, a URL's host must accept a TCP connection within the site's preflight time-out. (What
a real site serves behind its endpoints is checked by ``instore.site.verify``.)"""

from __future__ import annotations

import os
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from instore.urls import default_port


def _check_network(url: str, timeout_s: float) -> str | None:
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or default_port(url)
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
