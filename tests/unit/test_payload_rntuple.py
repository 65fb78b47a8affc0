"""Both engines read RNTuple (ROOT's and uproot's), with the same patterns and bytes needed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from instore.payload.pattern import Pattern
from instore.payload.runner import ReadOptions, run_read
from instore.rootenv import root

from tests.cli import Cli

ENGINES = ["root", "uproot"]
N_ENTRIES = 2000
SCALARS = ("pt", "eta", "phi", "mass")  # float fields; plus "nhit" (int) and two vectors

_WRITER = r"""
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <TRandom3.h>
namespace instore_test {
// A small RNTuple as a physicist writes one: scalars and std::vector<float>, a few clusters.
inline void write_rntuple(const std::string &path, int n, long cluster_bytes) {
   auto model = ROOT::RNTupleModel::Create();
   auto pt = model->MakeField<float>("pt");
   auto eta = model->MakeField<float>("eta");
   auto phi = model->MakeField<float>("phi");
   auto mass = model->MakeField<float>("mass");
   auto nhit = model->MakeField<int>("nhit");
   auto jet_pt = model->MakeField<std::vector<float>>("jet_pt");
   auto jet_eta = model->MakeField<std::vector<float>>("jet_eta");
   ROOT::RNTupleWriteOptions opts;
   opts.SetApproxZippedClusterSize(cluster_bytes);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "events", path, opts);
   TRandom3 rng(7);
   for (int i = 0; i < n; ++i) {
      *pt = rng.Exp(30); *eta = rng.Gaus(0, 2); *phi = rng.Uniform(-3.14, 3.14);
      *mass = rng.Gaus(91, 3); *nhit = rng.Poisson(12);
      int nj = rng.Poisson(4);
      jet_pt->resize(nj); jet_eta->resize(nj);
      for (int k = 0; k < nj; ++k) { (*jet_pt)[k] = rng.Exp(40); (*jet_eta)[k] = rng.Gaus(0, 2); }
      writer->Fill();
   }
}
}
"""


def write_root_rntuple(path: Path, n: int = N_ENTRIES, cluster_bytes: int = 16_000) -> Path:
    ROOT = root()
    if not hasattr(ROOT, "instore_test"):
        assert ROOT.gInterpreter.Declare(_WRITER)
    ROOT.instore_test.write_rntuple(str(path), n, cluster_bytes)
    return path


def _columns(n: int = N_ENTRIES) -> dict:
    import awkward as ak

    rng = np.random.default_rng(7)
    counts = rng.poisson(4, n)
    return {
        **{name: rng.normal(size=n).astype(np.float32) for name in SCALARS},
        "nhit": rng.poisson(12, n).astype(np.int32),
        "jet_pt": ak.unflatten(rng.exponential(40, counts.sum()).astype(np.float32), counts),
    }


def write_uproot_rntuple(path: Path) -> Path:
    import uproot

    with uproot.recreate(path) as f:
        f["t"] = _columns()  # uproot 5.7 writes an RNTuple by default
    return path


@pytest.fixture(scope="module")
def ntuples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("rntuple")
    return {
        "root": write_root_rntuple(out / "root-rntuple.root"),
        "uproot": write_uproot_rntuple(out / "uproot-rntuple.root"),
    }


def read(path: Path | str, **kw) -> dict:
    record = run_read(ReadOptions(str(path), **kw)).as_dict()
    assert record["error"] is None, record["error"]
    return record


@pytest.mark.parametrize("writer", ["root", "uproot"])
@pytest.mark.parametrize(
    "pattern",
    [
        Pattern(),
        Pattern(branches="fraction:0.3"),
        Pattern(entry_fraction=0.1),
        Pattern(entry_fraction=0.25, entry_mode="range"),
        Pattern(branches="jet_pt,nhit"),
    ],
    ids=["all", "30pct-fields", "10pct-entries", "first-quarter", "named"],
)
def test_engines_agree_on_rntuple(ntuples: dict[str, Path], writer: str, pattern: Pattern) -> None:
    r = read(ntuples[writer], engine="root", pattern=pattern)
    u = read(ntuples[writer], engine="uproot", pattern=pattern)
    for rec in (r, u):
        assert rec["format"] == "rntuple" and rec["object_name"] == rec["object_name"]
        assert rec["entries"] == N_ENTRIES and rec["branches_total"] == 7 - (writer == "uproot")
    assert r["object_name"] == u["object_name"] == ("events" if writer == "root" else "t")
    assert r["events"] == u["events"] > 0
    assert r["branches_read"] == u["branches_read"]
    assert abs(r["bytes_needed"] - u["bytes_needed"]) <= 0.01 * u["bytes_needed"]
    assert u["bytes_read"] >= u["bytes_needed"] > 0


@pytest.mark.quiet  # the process's rchar: beside other tests, a lazy read lands in the span
def test_rntuple_metrics_agree_with_what_the_kernel_served(ntuples: dict[str, Path]) -> None:
    """rchar minus RNTuple's own bytes read is the same constant for very different reads:
    every page byte the kernel delivered is counted; what is left is the file's metadata.
    rchar is the whole process's: a read of anything else within the job (a module imported
    lazily; once in a fresh-clone CI, 16,048 bytes more on one pattern of four) only adds, so
    each pattern is read twice and its smaller count kept."""
    path = ntuples["root"]
    read(path, engine="root")  # warm up: ROOT's own files, dictionaries
    extra = []
    for cache, pattern in ((None, Pattern()), (0, Pattern()), (0, Pattern(branches="fraction:0.3")),
                           (1, Pattern(entry_fraction=0.5, entry_mode="range"))):  # fmt: skip
        counts = []
        for _ in range(2):
            r = read(path, engine="root", cache_bytes=cache, pattern=pattern)
            assert r["bytes_read"] == r["counters"]["szReadPayload"] > 0
            counts.append(r["rchar_delta"] - r["bytes_read"])
        extra.append(min(counts))
    assert max(extra) - min(extra) <= 64, extra
    assert 0 <= min(extra) < 64 * 1024, extra


def test_cluster_cache_batches_the_page_reads(ntuples: dict[str, Path]) -> None:
    off = read(ntuples["root"], engine="root", cache_bytes=0)
    on = read(ntuples["root"], engine="root", cache_bytes=2**20)
    assert off["counters"]["cluster_cache"] == 0 and on["counters"]["cluster_cache"] == 1
    assert off["cache_bytes_effective"] == 0 < on["cache_bytes_effective"]
    assert on["read_calls"] < off["read_calls"] == off["counters"]["nPageRead"]
    assert on["counters"]["nClusterLoaded"] >= 2 and off["counters"]["nClusterLoaded"] == 0
    # every field read: the cluster cache reads each page once, as stored; without it a page
    # stored once for two columns (jet_pt's and jet_eta's identical offsets) is read twice
    assert on["bytes_read"] == on["bytes_needed"] < off["bytes_read"]
    assert on["events"] == off["events"] == N_ENTRIES


def test_cpu_cost_per_event_is_spent_on_rntuple(ntuples: dict[str, Path]) -> None:
    pattern = Pattern(entry_fraction=0.1, cpu_us=2000)
    for engine in ENGINES:
        r = read(ntuples["root"], engine=engine, pattern=pattern)
        assert r["events"] == N_ENTRIES // 10
        assert r["user_s"] + r["sys_s"] >= r["events"] * 2000e-6 * 0.95, engine


def _corrupt_pages(good: Path, out: Path) -> Path:
    """The file with its page data overwritten: keys, header and footer intact."""
    data = bytearray(good.read_bytes())
    import uproot

    with uproot.open(good) as f:
        pages = [p for cluster in f["events"].page_link_list for col in cluster for p in col.pages]
    for page in pages:
        start = page.locator.offset
        data[start : start + page.locator.num_bytes] = b"\xa5" * page.locator.num_bytes
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", ["truncated", "corrupt-pages"])
def test_broken_rntuple_is_one_line(
    ntuples: dict[str, Path], tmp_path: Path, engine: str, case: str, cli: Cli
) -> None:
    good = ntuples["root"]
    if case == "truncated":
        path = tmp_path / "truncated.root"
        path.write_bytes(good.read_bytes()[: good.stat().st_size * 2 // 3])
    else:
        path = _corrupt_pages(good, tmp_path / "corrupt.root")
    proc = cli("read", str(path), "--engine", engine, "--object", "events")
    assert proc.returncode == 1, proc.stderr
    record = json.loads(proc.stdout)
    assert record["error"] and "\n" not in record["error"]
    assert re.search(r"truncated|corrupt|read error|checksum", record["error"]), record["error"]
    ours = [line for line in proc.stderr.splitlines() if line.startswith("instore read:")]
    assert len(ours) == 1 and "Traceback" not in proc.stderr, proc.stderr
