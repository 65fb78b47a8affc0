"""What to generate: one replica in one layout (``FileSpec``), and the RNTuple write options a
layout gets. Both the layouts' writer (``generate.layouts``) and a template's (``generate.like``)
read these."""

from __future__ import annotations

from dataclasses import dataclass

from instore.errors import InstoreError
from instore.filenames import replica_name
from instore.rootenv import root
from instore.vocabulary import LAYOUTS, RNTUPLE_LAYOUTS

# Per-layout RNTuple knobs in MB / kB; None = ROOT's default RNTupleWriteOptions.
# rntuple-matched: clusters as large as the TTree's (cluster_mb), for a comparison at equal
# cluster sizes.
RNTUPLE_DEFAULTS: dict[str, tuple[float | None, float | None]] = {
    "rntuple": (None, None),
    "rntuple-small": (1.0, 8.0),
    "rntuple-matched": (None, None),
}


@dataclass(frozen=True)
class FileSpec:
    """What to generate: one replica in one layout."""

    layout: str
    seed: int = 1
    replica: int = 0
    n_events: int | None = None
    size_mb: float | None = None
    cluster_mb: float = 8.0
    compression: int = 101  # ROOT's TFile default (ZLIB level 1), as on 2010-era files
    rntuple_cluster_mb: float | None = None  # None: the layout's default (RNTUPLE_DEFAULTS)
    rntuple_page_kb: float | None = None
    like: str | None = None  # a template (name, JSON or ROOT file): its schema, not ours
    fileset: str = ""  # the file set's name, prefixed to file names ("" = the study's own)

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise InstoreError(
                f"unknown layout {self.layout!r}", f"choose one of {', '.join(LAYOUTS)}"
            )
        if (self.n_events is None) == (self.size_mb is None):
            raise InstoreError(
                "give exactly one of a size in MB or a number of events",
                "use --size-mb or --events",
            )
        if (self.n_events is not None and self.n_events <= 0) or (
            self.size_mb is not None and self.size_mb <= 0
        ):
            raise InstoreError(
                "file size must be positive", "give --size-mb or --events greater than 0"
            )
        if self.cluster_mb <= 0:
            raise InstoreError("cluster size must be positive", "give --cluster-mb greater than 0")
        for value, flag in (
            (self.rntuple_cluster_mb, "--rntuple-cluster-mb"),
            (self.rntuple_page_kb, "--rntuple-page-kb"),
        ):
            if value is not None and value <= 0:
                raise InstoreError(
                    "RNTuple cluster and page sizes must be positive", f"give {flag} greater than 0"
                )

    @property
    def is_rntuple(self) -> bool:
        return self.layout in RNTUPLE_LAYOUTS

    @property
    def rntuple_sizes(self) -> tuple[int, int]:
        """(approximate compressed cluster bytes, maximum uncompressed page bytes); 0 = ROOT's."""
        cluster_mb, page_kb = RNTUPLE_DEFAULTS.get(self.layout, (None, None))
        if self.layout == "rntuple-matched":
            cluster_mb = self.cluster_mb
        cluster_mb = self.rntuple_cluster_mb if self.rntuple_cluster_mb is not None else cluster_mb
        page_kb = self.rntuple_page_kb if self.rntuple_page_kb is not None else page_kb
        return (int(cluster_mb * 1e6) if cluster_mb else 0, int(page_kb * 1024) if page_kb else 0)

    @property
    def replica_seed(self) -> int:
        """Distinct per replica (concurrent jobs read different files), equal across layouts."""
        return self.seed * 1_000_003 + self.replica

    @property
    def filename(self) -> str:
        return replica_name(self.layout, self.replica, self.fileset)


def rntuple_write_options(spec: FileSpec) -> dict[str, int]:
    """The write options the RNTuple gets, ROOT's defaults filled in (recorded in the file)."""
    cluster, page = spec.rntuple_sizes
    defaults = root().ROOT.RNTupleWriteOptions()
    cluster = cluster or int(defaults.GetApproxZippedClusterSize())
    return {
        "compression": spec.compression,
        "approx_zipped_cluster_size": cluster,
        "max_unzipped_cluster_size": (
            10 * cluster if spec.rntuple_sizes[0] else int(defaults.GetMaxUnzippedClusterSize())
        ),
        "initial_unzipped_page_size": min(256, page)
        if page
        else int(defaults.GetInitialUnzippedPageSize()),
        "max_unzipped_page_size": page or int(defaults.GetMaxUnzippedPageSize()),
    }
