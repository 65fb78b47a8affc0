"""``instore site upload NAME``: put the study's files behind every endpoint of a real site.

Each file is checked the way WLCG storage checks transfers, by size and adler32: a copy that
is already there and equal is skipped, a new copy is verified after it lands, and any
difference stops the upload with one line (a corrupt replica must not be measured). Copies go
through ``instore.storage`` with the jobs' grid credentials: xrdcp for XRootD, an authenticated
PUT for HTTP and WebDAV, a copy for paths. A storage that reports no adler32 has its copies
read back to compute one (and the upload says so). The marker it writes names, sizes and
checksums and how each was had; no secrets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from instore import credentials
from instore.access import FUSE, HTTP, POSIX, STAGE_IN, XCACHE, XROOTD
from instore.errors import InstoreError
from instore.record import utc_now
from instore.site.config import SiteConfig
from instore.storage import Checksum, StorageError, adler32, diagnosis, storage_for
from instore.storage.base import normal_adler32, read_back_note

__all__ = ["Copy", "CopyDiffers", "Placed", "Remote", "adler32", "compare", "found", "upload"]

ORDER = (XROOTD, STAGE_IN, HTTP, POSIX, FUSE, XCACHE)  # root:// first: others skip


@dataclass(frozen=True)
class Remote:
    """What an endpoint holds under a name: its size and adler32 (None: not asked)."""

    size: int
    adler32: str | None


@dataclass(frozen=True)
class Copy:
    """A copy found equal: its size, and its checksum and how it was had (None: size only)."""

    size: int
    checksum: Checksum | None


@dataclass(frozen=True)
class Placed:
    """One file behind one endpoint: copied now, or already there and equal; ``checksum_from``
    says how the copy's adler32 was had (reported by the storage, read back, read here)."""

    name: str
    protocol: str
    size: int
    adler32: str
    action: str  # "copied" or "present"
    checksum_from: str = "reported"


class CopyDiffers(InstoreError):
    """The copy behind an endpoint is not the local file (another size or adler32)."""


def mismatch_line(url: str, what: str, remote: str, local: str) -> str:
    """The one line that stops an upload on a corrupt (or foreign) remote copy."""
    return (f"{what} of {url} is {remote} but the local file's is {local}: "
            "the copy is corrupt; remove it and rerun upload")  # fmt: skip


def compare(url: str, size: int, checksum: str | None, remote: Remote | None) -> bool:
    """True: the remote copy is there and equal (skip it); False: absent (copy it). Raises
    with one line when it is there and differs. ``checksum`` None compares the size only (a
    copy verified whole before)."""
    if remote is None:
        return False
    if remote.size != size:
        raise CopyDiffers(mismatch_line(url, "size", str(remote.size), str(size)))
    if checksum is None:
        return True
    if remote.adler32 is None:
        raise InstoreError(f"{url}: no adler32 of the copy to compare with",
                           "ask the storage for one, or read the copy back")  # fmt: skip
    if normal_adler32(remote.adler32) != checksum:
        raise CopyDiffers(mismatch_line(url, "adler32", f"0x{remote.adler32}", f"0x{checksum}"))
    return True


def found(url: str, size: int, checksum: str | None) -> Copy | None:
    """The copy at ``url`` if it is equal to a local file of ``size`` and ``checksum`` (None:
    no copy there); one line when it differs or cannot be asked. Its adler32 is the storage's
    where it reports one, else computed by reading the copy back through the endpoint; the
    size is compared first, so a copy of another size is never read."""
    store = storage_for(url)
    try:
        remote_size = store.stat(url)
        if not compare(url, size, None, None if remote_size is None else Remote(remote_size, None)):
            return None
        summed = store.checksum(url) if checksum is not None else None
    except StorageError as err:
        raise diagnosis.diagnosed(err) from err
    compare(url, size, checksum, Remote(size, summed.adler32 if summed else None))
    return Copy(size, summed)


def put(local: Path, url: str) -> None:
    """Copy ``local`` to ``url`` with the jobs' credentials; a refusal to write there by a
    storage that accepted them says so (not "renew the proxy")."""
    try:
        storage_for(url).put(local, url)
    except StorageError as err:
        raise diagnosis.diagnosed(err, writing=True) from err


# --- the upload ------------------------------------------------------------------------------


def place(local: Path, checksum: str, protocol: str, url: str) -> Placed:
    """One file behind one endpoint: skipped if equal, else copied and verified."""
    size = local.stat().st_size
    before = found(url, size, checksum)
    if before is not None and before.checksum is not None:
        return Placed(local.name, protocol, size, checksum, "present", before.checksum.how)
    put(local, url)
    after = found(url, size, checksum)
    if after is None or after.checksum is None:
        raise InstoreError(f"{url}: the copy is not there after upload", "check the endpoint")
    return Placed(local.name, protocol, size, checksum, "copied", after.checksum.how)


def notes(record: dict[str, object]) -> list[str]:
    """One line per endpoint whose copies were verified by reading them back (it reports no
    adler32), saying so and how much was read."""
    read: dict[str, list[int]] = {}
    for f in record["files"]:  # type: ignore[attr-defined]
        if f["checksum_from"] == "read back":
            read.setdefault(f["protocol"], []).append(f["size"])
    endpoints: dict[str, str] = record["endpoints"]  # type: ignore[assignment]
    return [f"{p} {endpoints[p]}: {read_back_note(sum(sizes), len(sizes))}"
            for p, sizes in read.items()]  # fmt: skip


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
