"""The same AGC-style ttbar selection as agc_ttbar_rdf.py, as coffea users write it.

NanoEvents (NanoAODSchema) and a processor, run by coffea's own executor
(``processor.Runner``: an ``IterativeExecutor``, or a ``FuturesExecutor`` with ``--workers``
above 1), as the IRIS-HEP Analysis Grand Challenge's coffea implementation runs it, without its
systematics and machine learning: exactly one lepton above 30 GeV, at least four jets above
30 GeV within |eta| < 2.4, and exactly one b-tag (4j1b: the jets' HT) or two or more (4j2b: the
mass of the b-tagged three-jet combination of largest pT, from coffea's four-vectors). NanoEvents
reads lazily, so the job reads the columns the selection touches, counts (nJet, nMuon,
nElectron) included. It prints the cutflow and the histograms' contents as one JSON line in the
other analyses' terms, ``events`` included, so ``instore record`` learns what it processed.
Its root:// reads go through uproot's default source (fsspec-xrootd, PyPI xrootd), which
``instore record`` records too. coffea's chunks are counted in entries, so it never meets the
byte-sized-step failure of uproot 5.7.7 over root:// (instore.uproot_xrootd, docs/replay.md).

A run that fails part-way says why and what to do in one line on stderr, prints what it had
processed (with ``"complete": false``) and exits 1.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import warnings
from typing import Any

import awkward as ak
import hist
import numpy as np
from coffea import processor
from coffea.analysis_tools import PackedSelection
from coffea.nanoevents import NanoAODSchema

BTAG_WP = 0.5
HT_BINS = (25, 50.0, 550.0)
MASS_BINS = (25, 50.0, 550.0)
CUTS = ("exactly one lepton", "at least four jets", "4j1b", "4j2b")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", help="NanoAOD-like files: paths or root:// URLs")
    p.add_argument("--tree", default="Events", help="the TTree (default: Events)")
    p.add_argument("--chunksize", type=int, default=200_000,
                   help="entries per chunk, coffea's unit (default: 200000, the AGC's)")  # fmt: skip
    p.add_argument("--workers", type=int, default=1,
                   help="1: IterativeExecutor (default); more: a FuturesExecutor's processes")  # fmt: skip
    return p.parse_args(argv)


def _histogram(bins: tuple[int, float, float]) -> hist.Hist:
    return hist.Hist.new.Reg(*bins, name="observable").Int64()


class TtbarProcessor(processor.ProcessorABC):
    """The 4j1b HT and 4j2b trijet mass with the cutflow, per chunk; coffea adds chunks up."""

    def __init__(self) -> None:
        # What a run that fails part-way had processed (a copy: coffea adds up the originals),
        # when this very instance runs the chunks (IterativeExecutor, sent uncompressed); a
        # FuturesExecutor's partial output says it for its workers.
        self.done: dict[str, Any] | None = None

    def process(self, events: Any) -> dict[str, Any]:
        jets = events.Jet[(events.Jet.pt > 30) & (abs(events.Jet.eta) < 2.4)]
        n_lep = ak.sum(events.Electron.pt > 30, axis=1) + ak.sum(events.Muon.pt > 30, axis=1)
        n_btag = ak.sum(jets.btagCSVV2 >= BTAG_WP, axis=1)
        sel = PackedSelection()
        sel.add("exactly one lepton", n_lep == 1)
        sel.add("at least four jets", ak.num(jets) >= 4)
        sel.add("one b", n_btag == 1)
        sel.add("two or more b", n_btag >= 2)
        masks = {
            "exactly one lepton": sel.all("exactly one lepton"),
            "at least four jets": sel.all("exactly one lepton", "at least four jets"),
            "4j1b": sel.all("exactly one lepton", "at least four jets", "one b"),
            "4j2b": sel.all("exactly one lepton", "at least four jets", "two or more b"),
        }
        h_ht, h_mass = _histogram(HT_BINS), _histogram(MASS_BINS)
        h_ht.fill(observable=ak.to_numpy(ak.sum(jets[masks["4j1b"]].pt, axis=1)))
        trijet = ak.combinations(jets[masks["4j2b"]], 3, fields=["j1", "j2", "j3"])
        p4 = trijet.j1 + trijet.j2 + trijet.j3
        btag = np.maximum(trijet.j1.btagCSVV2, trijet.j2.btagCSVV2)
        p4 = p4[np.maximum(btag, trijet.j3.btagCSVV2) >= BTAG_WP]  # a b-tag among the three
        mass = ak.flatten(p4[ak.argmax(p4.pt, axis=1, keepdims=True)].mass)
        h_mass.fill(observable=ak.to_numpy(ak.fill_none(mass, -1.0)))
        out = {
            "events": len(events),
            "cutflow": {cut: int(np.sum(masks[cut])) for cut in CUTS},
            "4j1b_HT": h_ht,
            "4j2b_trijet_mass": h_mass,
        }
        self.done = processor.accumulate([self.done, copy.deepcopy(out)])
        return out

    def postprocess(self, accumulator: dict[str, Any]) -> dict[str, Any]:
        return accumulator


def result(out: dict[str, Any] | None, complete: bool = True) -> dict[str, Any]:
    """The JSON line, in the RDataFrame and uproot analyses' terms (ROOT's under- and overflow
    bins at both ends of each histogram)."""
    out = out or {}
    res: dict[str, Any] = {
        "analysis": "agc-ttbar-coffea",
        "events": int(out.get("events", 0)),
        "cutflow": {cut: int(out.get("cutflow", {}).get(cut, 0)) for cut in CUTS},
    }
    for name, bins in (("4j1b_HT", HT_BINS), ("4j2b_trijet_mass", MASS_BINS)):
        h = out.get(name)
        res[name] = [int(v) for v in h.values(flow=True)] if h is not None else [0] * (bins[0] + 2)
    if not complete:
        res["complete"] = False
    return res


def describe(err: BaseException) -> str:
    """The cause, where and the fix in one line: coffea wraps a chunk's error in an Exception
    naming its work item; the innermost exception is the cause (a worker process's, when it
    carries the worker's traceback as text)."""
    root = err
    while (inner := root.__cause__ or root.__context__) is not None and inner is not root:
        if type(inner).__name__ == "_RemoteTraceback":  # a worker's traceback, as text
            break
        root = inner
    where = re.search(r"filename='([^']*)'.*?entrystart=(\d+), entrystop=(\d+)", str(err))
    cause = next((line for line in str(root).splitlines() if line.strip()), "")
    if isinstance(root, KeyError | ValueError | AttributeError) and "field" in str(root):
        fix = "give NanoAOD files: NanoAODSchema needs the collections' fields (pt, eta, phi, mass, charge)"
    elif isinstance(root, OSError | TimeoutError):
        fix = "check that the storage answers for that file (xrdfs HOST stat PATH), then rerun"
    else:
        fix = "rerun with --workers 1 on that file to see the whole traceback (above, a worker's)"
    at = f" in {where[1]} (entries {where[2]}-{where[3]})" if where else ""
    return f"{type(root).__name__}: {cause[:200]}{at} -- {fix}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    NanoAODSchema.warn_missing_crossrefs = False  # as the AGC sets it: cross-references unused
    warnings.filterwarnings("ignore", module="coffea.nanoevents.schemas.nanoaod")
    executor = (
        processor.IterativeExecutor(status=False)
        if args.workers <= 1
        else processor.FuturesExecutor(workers=args.workers, recoverable=True, status=False)
    )
    iterative = isinstance(executor, processor.IterativeExecutor)
    run = processor.Runner(executor=executor, schema=NanoAODSchema, chunksize=args.chunksize,
                           processor_compression=None if iterative else 1)  # fmt: skip
    ttbar = TtbarProcessor()
    try:
        out = run({"ttbar": args.files}, ttbar, treename=args.tree)
    except Exception as err:  # one line, and what was processed is kept
        partial = getattr(err, "partial_output", None)
        done = result(partial if partial is not None else ttbar.done, complete=False)
        print(f"agc_ttbar_coffea: failed part-way after {done['events']} events: "
              f"{describe(err)}", file=sys.stderr)  # fmt: skip
        print(json.dumps(done))
        return 1
    print(json.dumps(result(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
