"""An AGC-style ttbar selection with RDataFrame, written as an analyst writes one.

The IRIS-HEP Analysis Grand Challenge's ttbar analysis, cut down to the branches of its
smallest I/O set (agc-2.7: jets' four-momenta and b-tag, the muons' and electrons' pT):
exactly one lepton above 30 GeV, at least four jets above 30 GeV within |eta| < 2.4, and
  - exactly one b-tagged jet: the scalar sum of the jets' pT (HT), the 4j1b region;
  - two or more: the mass of the three-jet combination of largest pT that holds a b-tag
    (the top quark's), the 4j2b region.
It prints the cutflow and the histograms' contents as one JSON line; ``--out`` also writes
the histograms to a ROOT file. instore records it (``instore record``) and replays its reads.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from urllib.parse import urlsplit

BTAG_WP = 0.5  # CSVv2 medium-ish working point, as in the AGC's 2015 NanoAOD setup
HT_BINS = (25, 50.0, 550.0)
MASS_BINS = (25, 50.0, 550.0)

TRIJET = r"""
#include <ROOT/RVec.hxx>
#include <Math/Vector4D.h>
float instore_trijet_mass(const ROOT::RVecF &pt, const ROOT::RVecF &eta, const ROOT::RVecF &phi,
                          const ROOT::RVecF &mass, const ROOT::RVecF &btag, float wp) {
  auto combos = ROOT::VecOps::Combinations(pt, 3);
  float best_pt = -1, best_mass = -1;
  for (std::size_t c = 0; c < combos[0].size(); ++c) {
    std::size_t i = combos[0][c], j = combos[1][c], k = combos[2][c];
    if (std::max({btag[i], btag[j], btag[k]}) < wp) continue;
    auto p = ROOT::Math::PtEtaPhiMVector(pt[i], eta[i], phi[i], mass[i]) +
             ROOT::Math::PtEtaPhiMVector(pt[j], eta[j], phi[j], mass[j]) +
             ROOT::Math::PtEtaPhiMVector(pt[k], eta[k], phi[k], mass[k]);
    if (p.Pt() > best_pt) { best_pt = p.Pt(); best_mass = p.M(); }
  }
  return best_mass;
}
"""


def remote_if_on_this_node(url: str) -> str:
    """``url`` with ``remote=1`` when it names an XRootD server on this node (a node-local
    XCache: root://localhost:1094//store/...). RDataFrame opens its files with the option
    READ_WITHOUT_GLOBALREGISTRATION, and for any option but READ, ROOT 6.40's TFile::GetType
    takes such a URL for a local path without checking that the path exists: the job then
    fails with "file /store/... does not exist". ``remote=1`` tells ROOT to read it over XRootD."""
    parts = urlsplit(url)
    own = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    if parts.scheme not in ("root", "xroot") or parts.hostname not in own or "remote=" in url:
        return url
    return f"{url}{'&' if parts.query else '?'}remote=1"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", help="NanoAOD-like files: paths or root:// URLs")
    p.add_argument("--tree", default="Events", help="the TTree (default: Events)")
    p.add_argument("--out", help="also write the histograms to this ROOT file")
    p.add_argument("--threads", type=int, default=0, help="implicit MT threads (default: off)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import ROOT

    if args.threads:
        ROOT.EnableImplicitMT(args.threads)
    ROOT.gInterpreter.Declare(TRIJET)
    df = ROOT.RDataFrame(args.tree, [remote_if_on_this_node(f) for f in args.files])
    events = df.Count()
    selected = (
        df.Define("jet_ok", "Jet_pt > 30 && abs(Jet_eta) < 2.4")
        .Define("n_lep", "Sum(Electron_pt > 30) + Sum(Muon_pt > 30)")
        .Filter("n_lep == 1", "exactly one lepton")
        .Filter("Sum(jet_ok) >= 4", "at least four jets")
        .Define("n_btag", f"Sum(Jet_btagCSVV2[jet_ok] >= {BTAG_WP})")
    )
    one_b = selected.Filter("n_btag == 1", "4j1b").Define("HT", "Sum(Jet_pt[jet_ok])")
    two_b = selected.Filter("n_btag >= 2", "4j2b").Define(
        "trijet_mass",
        "instore_trijet_mass(Jet_pt[jet_ok], Jet_eta[jet_ok], Jet_phi[jet_ok], "
        f"Jet_mass[jet_ok], Jet_btagCSVV2[jet_ok], {BTAG_WP})",
    )
    h_ht = one_b.Histo1D(("4j1b_HT", "H_{T} [GeV]", *HT_BINS), "HT")
    h_m = two_b.Histo1D(("4j2b_trijet_mass", "m_{bjj} [GeV]", *MASS_BINS), "trijet_mass")
    report = df.Report()
    cutflow = {cut.GetName(): cut.GetPass() for cut in report.GetValue()}
    result = {
        "analysis": "agc-ttbar-rdf",
        "events": int(events.GetValue()),
        "cutflow": cutflow,
        "4j1b_HT": [int(h_ht.GetBinContent(b)) for b in range(h_ht.GetNbinsX() + 2)],
        "4j2b_trijet_mass": [int(h_m.GetBinContent(b)) for b in range(h_m.GetNbinsX() + 2)],
    }
    if args.out:
        out = ROOT.TFile.Open(args.out, "RECREATE")
        h_ht.Write()
        h_m.Write()
        out.Close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
