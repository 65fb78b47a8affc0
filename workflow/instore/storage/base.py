"""What every storage protocol does for instore: a reader of byte ranges (one request to
storage per ``read_ranges`` call: a vector read, a multi-range GET or a pread batch), the size of
a file, its adler32 (the storage's own, else computed by reading it back), a copy put there or
fetched here (stage-in, cache warming), a probe that says why a file cannot be opened, a
directory listed, a whole-file read.

One subclass per protocol (``instore.storage.file``, ``.xrootd``, ``.http``; ``.rootfile`` for
root:// through ROOT's own client), chosen from the URL's scheme by
``instore.storage.storage_for`` through ``instore.urls``, as uproot maps schemes to Source
classes. Checks read through the same readers the jobs' counting source uses
(``instore.storage.source``), so the read path measured is the one checked."""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from instore.errors import InstoreError

CHUNK = 4 << 20  # bytes per read when a whole file is streamed (checksums, read-back)
CHECK_FIX = "check the endpoint and its permissions"


class StorageError(InstoreError):
    """A request the endpoint failed: ``reason`` is its own last word (an authentication
    refusal among them, which ``instore.storage.diagnosis`` turns into a credential fix)."""

    def __init__(self, url: str, reason: str, fix: str | None = CHECK_FIX) -> None:
        self.url, self.reason = url, reason
        super().__init__(f"{url}: {reason}", fix)


@dataclass(frozen=True)
class Checksum:
    """A copy's adler32 (8 lower-case hex digits) and how it was had: ``reported`` by the
    storage, ``read back`` through the endpoint (``bytes_read`` of it), or ``read here`` (a
    path: the file system has no checksum of its own)."""

    adler32: str
    how: str = "reported"
    bytes_read: int = 0

    def note(self) -> str | None:
        """The line a preflight or upload says when it had to read the copy back."""
        return read_back_note(self.bytes_read) if self.how == "read back" else None


def read_back_note(bytes_read: int, files: int = 1) -> str:
    """One line: the endpoint keeps no checksum, so the copies were read back to verify them."""
    what = f"{files} copies, " if files > 1 else ""
    return ("checksum: the endpoint reports none; computed by reading the copy back "
            f"({what}{bytes_read / 1e6:.1f} MB)")  # fmt: skip


def adler32_of(blocks: Iterable[bytes]) -> tuple[str, int]:
    """adler32 as WLCG storage prints it (8 lower-case hex digits) and the bytes summed."""
    value, total = 1, 0
    for block in blocks:
        value = zlib.adler32(block, value)
        total += len(block)
    return f"{value & 0xFFFFFFFF:08x}", total


def file_blocks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            yield block


def adler32(path: Path) -> str:
    """A local file's adler32 as WLCG storage prints it."""
    return adler32_of(file_blocks(path))[0]


def normal_adler32(digest: str) -> str:
    """A storage's adler32 spelt as ours: lower case, 8 digits."""
    return digest.lower().zfill(8)


class Reader(Protocol):
    """Reads byte ranges from one open file; one ``read_ranges`` call is one request to storage
    (several ranges go out as one vector read, multi-range GET or pread batch)."""

    size: int

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]: ...

    def close(self) -> None: ...


class Storage(ABC):
    """One protocol's operations on the files behind a URL; stateless, one per protocol."""

    protocol: ClassVar[str]
    copy_tool: ClassVar[str] = "xrdcp"  # what a stage-in job copies a file here with

    @abstractmethod
    def open(self, url: str, timeout: float) -> Reader:
        """The file open for range reads (``OSError`` and the clients' own errors if not)."""

    def load(self) -> None:
        """Import the reader's client now (``instore.storage.preload``): nothing for most."""
        return None

    @abstractmethod
    def get(self, url: str, local: Path, timeout: float | None = None) -> None:
        """Copy the file to ``local`` with ``copy_tool``, as a stage-in job or a cache warm-up
        does (``/dev/null`` reads it whole through the endpoint, keeping nothing)."""

    @abstractmethod
    def stat(self, url: str) -> int | None:
        """The file's size (None: there is no such file); raises ``StorageError`` otherwise."""

    @abstractmethod
    def reported_adler32(self, url: str) -> str | None:
        """The adler32 the storage computes itself (None: it reports none)."""

    @abstractmethod
    def put(self, local: Path, url: str) -> None:
        """Copy ``local`` there with the jobs' credentials (replacing what is there)."""

    @abstractmethod
    def probe(self, url: str, timeout: float) -> str | None:
        """None if the endpoint answers for ``url`` (a stat, a HEAD), else its message; for
        explaining a failure, so it never raises."""

    @abstractmethod
    def drain(self, url: str) -> None:
        """Read the whole file as a copy tool would, discarding it (calibration times this)."""

    def listdir(self, url: str, timeout: float) -> list[str]:
        """The names of the files (not directories) in the directory ``url``."""
        raise InstoreError(f"{url}: a directory cannot be listed over {self.protocol}",
                           "give the files by name instead")  # fmt: skip

    def read(self, url: str, timeout: float) -> Iterator[bytes]:
        """The whole file in ``CHUNK``-sized blocks, through the protocol's reader."""
        reader = self.open(url, timeout)
        try:
            for start in range(0, reader.size, CHUNK):
                yield reader.read_ranges([(start, min(start + CHUNK, reader.size))])[0]
        finally:
            reader.close()

    def checksum(self, url: str, timeout: float = 300.0) -> Checksum:
        """The storage's adler32 where it reports one, else computed by reading the copy back
        through the endpoint: a site need not configure checksums for its copies to be
        verified."""
        reported = self.reported_adler32(url)
        if reported is not None:
            return Checksum(normal_adler32(reported))
        value, total = adler32_of(self.read(url, timeout))
        return Checksum(value, "read back", total)
