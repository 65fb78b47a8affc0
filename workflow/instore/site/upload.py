"""``instore site upload NAME``: put the study's files behind every endpoint of a real site.

Each file is checked the way WLCG storage checks transfers, by size and adler32: a copy that
is already there and equal is skipped, a new copy is verified after it lands, and any
difference stops the upload with one line (a corrupt replica must not be measured). Copies use
the jobs' grid credentials (``instore.credentials``): xrdcp for root://, an authenticated PUT
for http(s)/davs, cp for paths. The marker it writes names, sizes and checksums; no secrets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from instore import credentials
from instore.errors import InstoreError
from instore.record import utc_now
from instore.site.config import SiteConfig
from instore.urls import HTTP_SCHEMES, XROOTD_SCHEMES, http_url

CHUNK = 4 << 20
ORDER = ("xrootd", "stage-in", "http", "posix", "fuse", "xcache")  # root:// first: others skip
_DIGEST = re.compile(r"adler32=([0-9a-fA-F]{1,8})")


@dataclass(frozen=True)
class Remote:
    """What an endpoint holds under a name: its size and adler32 (None: not reported)."""

    size: int
    adler32: str | None


@dataclass(frozen=True)
class Placed:
    """One file behind one endpoint: copied now, or already there and equal."""

    name: str
    protocol: str
    size: int
    adler32: str
    action: str  # "copied" or "present"


def adler32(path: Path) -> str:
    """The file's adler32 as WLCG storage prints it: 8 lower-case hex digits."""
    value = 1
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            value = zlib.adler32(block, value)
    return f"{value & 0xFFFFFFFF:08x}"


def mismatch_line(url: str, what: str, remote: str, local: str) -> str:
    """The one line that stops an upload on a corrupt (or foreign) remote copy."""
    return (f"{what} of {url} is {remote} but the local file's is {local}: "
            "the copy is corrupt; remove it and rerun upload")  # fmt: skip


def compare(url: str, size: int, checksum: str | None, remote: Remote | None) -> bool:
    """True: the remote copy is there and equal (skip it); False: absent (copy it). Raises
    with one line when it is there and differs, or its checksum cannot be had. ``checksum``
    None compares the size only (a copy verified whole before)."""
    if remote is None:
        return False
    if remote.size != size:
        raise InstoreError(mismatch_line(url, "size", str(remote.size), str(size)))
    if checksum is None:
        return True
    if remote.adler32 is None:
        raise InstoreError(f"{url}: the endpoint reports no adler32, so the copy cannot be "
                           "verified", "enable checksums on the storage (xrootd.chksum adler32)")  # fmt: skip
    if remote.adler32.lower().zfill(8) != checksum:
        raise InstoreError(mismatch_line(url, "adler32", f"0x{remote.adler32}", f"0x{checksum}"))
    return True


# --- the endpoints ---------------------------------------------------------------------------


def _xrd(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **credentials.host_env(), "XRD_CONNECTIONRETRY": "1"}
    try:
        return subprocess.run(args, capture_output=True, text=True, env=env, check=False,
                              timeout=timeout)  # fmt: skip
    except FileNotFoundError as err:
        raise InstoreError(f"{args[0]} is not installed here", "install xrootd-client") from err


def _xrd_failed(url: str, proc: subprocess.CompletedProcess[str]) -> InstoreError:
    lines = (proc.stderr or proc.stdout).strip().splitlines() or ["no message"]
    if credentials.auth_refused(lines[-1]):
        return InstoreError(credentials.auth_line(url))
    return InstoreError(f"{url}: {lines[-1].strip()}", "check the endpoint and its permissions")


def _stat_xrootd(url: str, checksum: bool = True) -> Remote | None:
    parts = urlsplit(url)
    host = f"{parts.scheme}://{parts.netloc}"
    proc = _xrd(["xrdfs", host, "stat", parts.path], 120)
    if proc.returncode != 0:
        if re.search(r"\[3011\]|no such file", proc.stderr, re.IGNORECASE):
            return None
        raise _xrd_failed(url, proc)
    found = re.search(r"Size:\s*(\d+)", proc.stdout)
    size = int(found.group(1)) if found else -1
    if not checksum:
        return Remote(size, None)
    summed = _xrd(["xrdfs", host, "query", "checksum", parts.path], 300)
    digest = re.search(r"adler32\s+([0-9a-fA-F]+)", summed.stdout)
    return Remote(size, digest.group(1) if digest else None)


def _put_xrootd(local: Path, url: str) -> None:
    proc = _xrd(["xrdcp", "--force", "--posc", "--nopbar", str(local), url], 3600)
    if proc.returncode != 0:
        raise _xrd_failed(url, proc)


def _http_pool(url: str):  # type: ignore[no-untyped-def]
    import urllib3

    from instore.payload.source.http import ssl_context

    if urlsplit(url).scheme == "http":
        return urllib3.PoolManager(retries=False)
    return urllib3.PoolManager(ssl_context=ssl_context(credentials.discover()), retries=False)


def _http_headers(url: str) -> dict[str, str]:
    from instore.payload.source.http import auth_headers

    return auth_headers(url, credentials.discover())


def _http_status(url: str, status: int) -> InstoreError:
    if status in (401, 403):
        return InstoreError(credentials.auth_line(url))
    return InstoreError(f"{url}: HTTP {status}", "check the endpoint and its permissions")


def _stat_http(url: str, checksum: bool = True) -> Remote | None:
    url = http_url(url)
    headers = {**_http_headers(url), **({"Want-Digest": "adler32"} if checksum else {})}
    resp = _http_pool(url).request("HEAD", url, headers=headers, redirect=True, timeout=120)
    if resp.status == 404:
        return None
    if resp.status != 200:
        raise _http_status(url, resp.status)
    digest = _DIGEST.search(resp.headers.get("Digest", ""))
    size = int(resp.headers.get("Content-Length", -1))
    return Remote(size, digest.group(1) if digest else None)


def _put_http(local: Path, url: str) -> None:
    url = http_url(url)
    pool = _http_pool(url)
    headers = {**_http_headers(url), "Content-Length": str(local.stat().st_size)}
    for _ in range(3):  # storage may redirect a PUT to a data server: follow, resending
        with open(local, "rb") as body:
            resp = pool.request("PUT", url, body=body, headers=headers, redirect=False,
                                preload_content=True, timeout=3600)  # fmt: skip
        if resp.status in (301, 302, 307, 308) and resp.headers.get("Location"):
            url = resp.headers["Location"]
            continue
        if resp.status not in (200, 201, 204):
            raise _http_status(url, resp.status)
        return
    raise InstoreError(f"{url}: too many redirects on PUT", "check the endpoint")


def _stat_path(path: str, checksum: bool = True) -> Remote | None:
    p = Path(path)
    if not p.is_file():
        return None
    return Remote(p.stat().st_size, adler32(p) if checksum else None)


def _put_path(local: Path, path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(local, path)


def stat(url: str, checksum: bool = True) -> Remote | None:
    """What the endpoint holds at ``url`` (None: nothing); without ``checksum``, its size only
    (the storage is not asked to compute an adler32)."""
    scheme = urlsplit(url).scheme
    if scheme in XROOTD_SCHEMES:
        return _stat_xrootd(url, checksum)
    if scheme in HTTP_SCHEMES:
        return _stat_http(url, checksum)
    return _stat_path(url, checksum)


def put(local: Path, url: str) -> None:
    """Copy ``local`` to ``url`` with the jobs' credentials."""
    scheme = urlsplit(url).scheme
    if scheme in XROOTD_SCHEMES:
        _put_xrootd(local, url)
    elif scheme in HTTP_SCHEMES:
        _put_http(local, url)
    else:
        _put_path(local, url)


# --- the upload ------------------------------------------------------------------------------


def place(local: Path, checksum: str, protocol: str, url: str) -> Placed:
    """One file behind one endpoint: skipped if equal, else copied and verified."""
    size = local.stat().st_size
    if compare(url, size, checksum, stat(url)):
        return Placed(local.name, protocol, size, checksum, "present")
    put(local, url)
    after = stat(url)
    if after is None:
        raise InstoreError(f"{url}: the copy is not there after upload", "check the endpoint")
    compare(url, size, checksum, after)
    return Placed(local.name, protocol, size, checksum, "copied")


def targets(site: SiteConfig) -> list[tuple[str, str]]:
    """(protocol, template) to upload to: every endpoint once, root:// first."""
    seen, out = set(), []
    for proto in sorted(site.endpoints, key=lambda p: ORDER.index(p) if p in ORDER else 99):
        template = site.endpoints[proto]
        if template not in seen:
            seen.add(template)
            out.append((proto, template))
    return out


def upload(
    site: SiteConfig, files: Iterable[Path], progress: Callable[[int], None] | None = None
) -> dict[str, object]:
    """Place every file behind every endpoint; the marker's content (no secrets)."""
    if site.emulated:
        raise InstoreError(f"site {site.name} is emulated: its files are put there at bring-up",
                           "upload is for real sites")  # fmt: skip
    credentials.require(site.auth, site.name)
    placed: list[Placed] = []
    for local in sorted(Path(f) for f in files):
        if not local.is_file():
            raise InstoreError(f"{local}: no such file", "run the data step first, or fix --files")
        checksum = adler32(local)
        for proto, template in targets(site):
            placed.append(place(local, checksum, proto, template.format(file=local.name)))
            if progress is not None:
                progress(local.stat().st_size)
    return {
        "site": site.name,
        "uploaded_at": utc_now(),
        "endpoints": {p: t for p, t in targets(site)},
        "files": [asdict(p) for p in placed],
    }


def write_marker(record: dict[str, object], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)
