"""``instore site upload NAME``: put the study's files behind every endpoint of a real site.

Each file is checked the way WLCG storage checks transfers, by size and adler32: a copy that
is already there and equal is skipped, a new copy is verified after it lands, and any
difference stops the upload with one line (a corrupt replica must not be measured), unless the
copy is one an earlier upload of this study put there (its ledger, ``uploads.jsonl`` in the
site's results, says so): files of another profile under the same names, which are replaced.
Copies go
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

ORDER = (XROOTD, STAGE_IN, HTTP, POSIX, FUSE)  # root:// first: others skip


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
    action: str  # "copied", "replaced" or "present"
    checksum_from: str = "reported"


class CopyDiffers(InstoreError):
    """The copy behind an endpoint is not the local file (another size or adler32): what it
    is, so that a copy an earlier upload put there can be told from any other."""

    def __init__(self, url: str, what: str, remote: Remote, local: str) -> None:
        shown = str(remote.size) if what == "size" else f"0x{remote.adler32}"
        self.differs = f"{what} of {url} is {shown} but the local file's is {local}"
        super().__init__(self.differs, REUPLOAD)
        self.remote = remote


# What a copy that differs asks for where it is found (a preflight, a sweep's check) ...
REUPLOAD = ("rerun `instore site upload`, which replaces the copies this study's uploads "
            "placed (other files of the same names); remove any other copy by hand")  # fmt: skip


# ... behind an XCache, whose copies are its origin's as they were when it fetched them ...
STALE_CACHE = ("the XCache holds an older copy than its origin (an upload replaced the file "
               "there): empty the cache (a sweep runs the site file's tuning.xcache_purge first "
               "where it names one; else as its admin does), then check with "
               "`instore site preflight`")  # fmt: skip


# ... and where the upload itself meets one that no upload of this study placed
class NotOurs(InstoreError):
    """A copy differs from the local file and no upload in these results placed it."""


def foreign(site: str) -> str:
    """The fix for a differing copy no upload in these results placed: it may be anyone's."""
    return ("no upload of this study placed it (uploads.jsonl in the site's results): remove it "
            "by hand if it is a corrupt or stale copy, or point the site file's endpoints at "
            "another directory; if the copies are this study's files from a checkout since "
            f"removed, `instore site upload {site} --replace` replaces them")  # fmt: skip


# The site's record of every copy its uploads placed (url, size, adler32), appended as each
# lands: an upload replaces a copy that differs only where the copy is one of these.
LEDGER = "uploads.jsonl"


def read_ledger(path: Path | None) -> dict[str, Remote]:
    """The copies earlier uploads placed, by URL (the latest of each)."""
    if path is None or not path.is_file():
        return {}
    placed = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line) if line.strip() else None
        if entry:
            placed[entry["url"]] = Remote(entry["size"], entry["adler32"])
    return placed


def _ours(err: CopyDiffers, earlier: Remote | None) -> bool:
    """Whether the copy that differs is the one an earlier upload placed."""
    if earlier is None or err.remote.size != earlier.size:
        return False
    return err.remote.adler32 is None or normal_adler32(err.remote.adler32) == earlier.adler32


def compare(url: str, size: int, checksum: str | None, remote: Remote | None) -> bool:
    """True: the remote copy is there and equal (skip it); False: absent (copy it). Raises
    with one line when it is there and differs. ``checksum`` None compares the size only (a
    copy verified whole before)."""
    if remote is None:
        return False
    if remote.size != size:
        raise CopyDiffers(url, "size", remote, str(size))
    if checksum is None:
        return True
    if remote.adler32 is None:
        raise InstoreError(f"{url}: no adler32 of the copy to compare with",
                           "ask the storage for one, or read the copy back")  # fmt: skip
    if normal_adler32(remote.adler32) != checksum:
        raise CopyDiffers(url, "adler32", remote, f"0x{checksum}")
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


def place(
    local: Path, checksum: str, protocol: str, url: str, earlier: Remote | None = None,
    replace: bool = False,
) -> Placed:  # fmt: skip
    """One file behind one endpoint: skipped if equal, else copied and verified; a copy that
    differs is replaced only when it is ``earlier``, the one an earlier upload placed, or the
    user says (``replace``) that such copies are the study's own (NotOurs otherwise)."""
    size = local.stat().st_size
    action = "copied"
    try:
        before = found(url, size, checksum)
    except CopyDiffers as err:
        if not (replace or _ours(err, earlier)):
            raise NotOurs(err.differs) from err
        before, action = None, "replaced"
    if before is not None and before.checksum is not None:
        return Placed(local.name, protocol, size, checksum, "present", before.checksum.how)
    put(local, url)
    after = found(url, size, checksum)
    if after is None or after.checksum is None:
        raise InstoreError(f"{url}: the copy is not there after upload", "check the endpoint")
    return Placed(local.name, protocol, size, checksum, action, after.checksum.how)


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
    """(protocol, template) to upload to: every endpoint once, root:// first, but not an
    XCache: it serves its origin's copies, and checking each through it would read every file
    into the cache (a copy of the whole upload, with no adler32 to ask for) before any point
    chooses its cache state."""
    seen, out = set(), []
    stores = [p for p in site.endpoints if p != XCACHE]
    for proto in sorted(stores, key=lambda p: ORDER.index(p) if p in ORDER else 99):
        template = site.endpoints[proto]
        if template not in seen:
            seen.add(template)
            out.append((proto, template))
    return out


def upload(
    site: SiteConfig,
    files: Iterable[Path],
    progress: Callable[[int], None] | None = None,
    ledger: Path | None = None,
    replace: bool = False,
) -> dict[str, object]:
    """Place every file behind every endpoint, noting each copy in ``ledger`` as it lands;
    the marker's content (no secrets). ``replace``: a copy that differs is replaced even where
    the ledger does not hold it (the user says it is the study's own)."""
    if site.emulated:
        raise InstoreError(f"site {site.name} is emulated: its files are put there at bring-up",
                           "upload is for real sites")  # fmt: skip
    credentials.require(site.auth, site.name)
    earlier = read_ledger(ledger)
    placed: list[Placed] = []
    for local in sorted(Path(f) for f in files):
        if not local.is_file():
            raise InstoreError(f"{local}: no such file", "run the data step first, or fix --files")
        checksum = adler32(local)
        for proto, template in targets(site):
            url = template.format(file=local.name)
            try:
                placed.append(place(local, checksum, proto, url, earlier.get(url), replace))
            except NotOurs as err:
                raise InstoreError(err.problem, foreign(site.name)) from err
            _note(ledger, url, placed[-1])
            if progress is not None:
                progress(local.stat().st_size)
    return {
        "site": site.name,
        "uploaded_at": utc_now(),
        "endpoints": {p: t for p, t in targets(site)},
        "files": [asdict(p) for p in placed],
    }


def _note(ledger: Path | None, url: str, placed: Placed) -> None:
    """Append the copy now behind ``url`` to the ledger: one of this study's files, copied or
    found equal."""
    if ledger is not None:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        entry = {"url": url, "size": placed.size, "adler32": placed.adler32, "at": utc_now()}
        with ledger.open("a") as out:
            out.write(json.dumps(entry) + "\n")


def write_marker(record: dict[str, object], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)
