"""The same AGC-style ttbar selection as agc_ttbar_rdf.py, columnar: uproot and awkward.

Reads the agc-2.7 branches chunk by chunk (``uproot.iterate``), selects events with exactly
one lepton above 30 GeV, at least four jets above 30 GeV within |eta| < 2.4 and one or more
b-tags, and fills the 4j1b HT and the 4j2b trijet-mass histograms (numpy). It prints the
cutflow and the histograms' contents as one JSON line, in the RDataFrame analysis's terms, so
the two can be checked against each other. Its root:// reads go through PyPI xrootd (fsspec),
which ``instore record`` records too.
"""

from __future__ import annotations

import argparse
import json
import sys

import awkward as ak
import numpy as np
import uproot
import uproot.source.xrootd

BTAG_WP = 0.5
HT_BINS = (25, 50.0, 550.0)
MASS_BINS = (25, 50.0, 550.0)
BRANCHES = ["Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btagCSVV2", "Muon_pt", "Electron_pt"]
CUTS = ("exactly one lepton", "at least four jets", "4j1b", "4j2b")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", help="NanoAOD-like files: paths or root:// URLs")
    p.add_argument("--tree", default="Events", help="the TTree (default: Events)")
    p.add_argument("--step-size", default="50 MB", help="uproot.iterate's chunk (default: 50 MB)")
    return p.parse_args(argv)


def histogram(values: np.ndarray, bins: tuple[int, float, float]) -> np.ndarray:
    """Counts with ROOT's underflow and overflow bins at both ends, as TH1 holds them."""
    n, lo, hi = bins
    edges = np.concatenate([[-np.inf], np.linspace(lo, hi, n + 1), [np.inf]])
    counts, _ = np.histogram(values, edges)
    return counts


def trijet_mass(jets: ak.Array) -> np.ndarray:
    """Mass of the three-jet combination of largest pT among those holding a b-tag."""
    trio = ak.combinations(jets, 3, fields=["a", "b", "c"])
    px = sum(trio[j].pt * np.cos(trio[j].phi) for j in "abc")
    py = sum(trio[j].pt * np.sin(trio[j].phi) for j in "abc")
    pz = sum(trio[j].pt * np.sinh(trio[j].eta) for j in "abc")
    energy = sum(
        np.sqrt((trio[j].pt * np.cosh(trio[j].eta)) ** 2 + trio[j].mass ** 2) for j in "abc"
    )
    tagged = (trio.a.btag >= BTAG_WP) | (trio.b.btag >= BTAG_WP) | (trio.c.btag >= BTAG_WP)
    pt = ak.where(tagged, np.hypot(px, py), -1.0)
    best = ak.argmax(pt, axis=1, keepdims=True)
    mass2 = energy**2 - px**2 - py**2 - pz**2
    mass = ak.flatten(np.sqrt(np.maximum(mass2[best], 0.0)))
    return ak.to_numpy(ak.fill_none(mass, -1.0))


def select(chunk: ak.Array, cutflow: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    jets = ak.zip(
        {"pt": chunk.Jet_pt, "eta": chunk.Jet_eta, "phi": chunk.Jet_phi,
         "mass": chunk.Jet_mass, "btag": chunk.Jet_btagCSVV2}
    )  # fmt: skip
    jets = jets[(jets.pt > 30) & (abs(jets.eta) < 2.4)]
    n_lep = ak.sum(chunk.Electron_pt > 30, axis=1) + ak.sum(chunk.Muon_pt > 30, axis=1)
    one_lep = n_lep == 1
    four_jets = one_lep & (ak.num(jets) >= 4)
    n_btag = ak.sum(jets.btag >= BTAG_WP, axis=1)
    one_b, two_b = four_jets & (n_btag == 1), four_jets & (n_btag >= 2)
    for cut, mask in zip(CUTS, (one_lep, four_jets, one_b, two_b), strict=True):
        cutflow[cut] += int(ak.sum(mask))
    ht = ak.to_numpy(ak.sum(jets.pt[one_b], axis=1))
    return ht, trijet_mass(jets[two_b])


def _any_xrootd(files: list[str]) -> bool:
    return any(f.startswith(("root://", "roots://")) for f in files)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cutflow = dict.fromkeys(CUTS, 0)
    h_ht = np.zeros(HT_BINS[0] + 2, dtype=np.int64)
    h_m = np.zeros(MASS_BINS[0] + 2, dtype=np.int64)
    events = 0
    # uproot's default root:// handler (fsspec-xrootd) hands numpy integers to the XRootD
    # client when it reads a single basket, which the client refuses ("integer argument
    # expected for offset", cf. scikit-hep/uproot5#1582); its own XRootD source does not.
    for chunk in uproot.iterate(
        {f: args.tree for f in args.files},
        BRANCHES,
        step_size=args.step_size,
        handler=uproot.source.xrootd.XRootDSource if _any_xrootd(args.files) else None,
    ):
        events += len(chunk)
        ht, mass = select(chunk, cutflow)
        h_ht += histogram(ht, HT_BINS)
        h_m += histogram(mass, MASS_BINS)
    result = {
        "analysis": "agc-ttbar-uproot",
        "events": events,
        "cutflow": cutflow,
        "4j1b_HT": h_ht.tolist(),
        "4j2b_trijet_mass": h_m.tolist(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
