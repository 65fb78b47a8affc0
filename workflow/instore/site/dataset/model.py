"""A real site's own dataset as described (``instore.site.dataset``): its files and what each
holds, which files a point reads and which points the dataset cannot serve."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from instore.errors import InstoreError
from instore.filenames import DEFAULT_FILESET
from instore.record import utc_now
from instore.vocabulary import TTREE_LAYOUTS

if TYPE_CHECKING:
    from instore.study.grid import Point

RNTUPLE_LAYOUT = "rntuple"  # what the study calls a dataset's RNTuple files


@dataclass(frozen=True)
class DatasetFile:
    """One file of the dataset as it was found: ``name`` under the data path, ``url`` where it
    was opened, and what it holds."""

    name: str
    url: str
    size: int
    format: str  # TTree or RNTuple
    object: str  # its path in the file
    entries: int
    compression: str  # the file's setting, e.g. ZLIB(1)
    compression_ratio: float | None  # uncompressed / compressed bytes (TTree)
    layout: str  # unordered, by-branch, ordered (TTree) or rntuple
    clusters: int
    baskets: int  # baskets (pages) on storage, embedded ones included
    branches: tuple[str, ...]  # top-level branches (RNTuple fields): what a pattern selects

    @property
    def label(self) -> str:
        return layout_label(self.layout)

    def line(self) -> str:
        """What the preflight prints for it."""
        ratio = f" (x{self.compression_ratio:.2f})" if self.compression_ratio else ""
        return (f"{self.name}: {self.format} {self.object}, {self.label}, {self.entries:,} entries, "
                f"{_size(self.size)}, {self.compression}{ratio}, {len(self.branches):,} "
                f"branches, {self.clusters:,} cluster(s), {self.baskets:,} "
                f"{'pages' if self.format == 'RNTuple' else 'baskets'}")  # fmt: skip


def _size(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 1e6 else f"{size / 1e3:,.1f} kB"


def layout_label(layout: str) -> str:
    """How a layout is named where a dataset's files are listed: ``ordered TTree``, ``RNTuple``."""
    if layout in TTREE_LAYOUTS:
        return f"{layout} TTree"
    return "RNTuple" if layout == RNTUPLE_LAYOUT else layout


@dataclass(frozen=True)
class Dataset:
    """The described dataset of a site: the spec it was made for, the object read, its files."""

    site: str
    spec: dict[str, Any]
    endpoints: dict[str, str]
    tree: str
    files: tuple[DatasetFile, ...]
    described_at: str = field(default_factory=utc_now)

    def key(self) -> dict[str, Any]:
        """What identifies the files in a point's key: the object and every file's name and size."""
        blob = json.dumps([self.tree, *[(f.name, f.size) for f in self.files]])
        return {"dataset": hashlib.sha256(blob.encode()).hexdigest()[:16]}

    def holds(self) -> str:
        """``3 ordered TTree, 1 RNTuple``: what a skipped point's reason says is there."""
        counts = Counter(f.label for f in self.files)
        return ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))

    def files_of(self, layout: str) -> list[DatasetFile]:
        return [f for f in self.files if f.layout == layout]

    def reads(self, point: Point) -> list[str]:
        """Job j of the point reads file j mod n of the point's layout."""
        files = self.files_of(point.layout)
        return [files[j % len(files)].name for j in range(point.jobs)]

    def skip_reason(self, point: Point) -> str | None:
        """Why the dataset cannot serve the point (None: it can): a generated file set, a
        layout it lacks, a branch the point's pattern names that its files lack."""
        from instore.payload.pattern import select_branches

        if point.fileset not in (None, DEFAULT_FILESET):
            return f"the site reads its own dataset, not the generated file set {point.fileset}"
        files = self.files_of(point.layout)
        if not files:
            return (f"the dataset has no {layout_label(point.layout)} files "
                    f"(it holds: {self.holds()})")  # fmt: skip
        for branches in dict.fromkeys(f.branches for f in files):  # usually one schema
            try:
                select_branches(branches, {}, point.branches)
            except InstoreError as err:
                name = next(f.name for f in files if f.branches == branches)
                return f"{name}: {err.problem}"
        return None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dataset:
        files = tuple(DatasetFile(**{**f, "branches": tuple(f["branches"])}) for f in data["files"])
        return cls(**{**data, "files": files})
