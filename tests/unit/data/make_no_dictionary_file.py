"""Regenerate no_dictionary_classes.root: a TTree and an RNTuple holding classes whose dictionary
only the writing process had.

No real file with such a field (e.g. an ATLAS PHYSLITE RNTuple's ``xAOD::TrigDecisionAuxInfo_v1``)
could be fetched here, so this script writes a stand-in with ROOT (the PyPI wheel, through
PyROOT): it compiles a dictionary for the classes below with ACLiC (rootcling and g++) in a
temporary directory, writes the file, and throws the dictionary away. Any other process reading
the file, such as the tests, has no dictionary for them, as a site's payload has none for an
experiment's classes. The classes are stand-ins (namespace ``xAODStandIn``), not ATLAS's:

* ``TrigDecisionAuxInfo_v1``: a base class and plain and vector members (a record);
* ``Hit``: two plain members, stored as ``std::vector<Hit>`` (a collection of records).

Run from the repository root:

    .venv/bin/python tests/unit/data/make_no_dictionary_file.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

OUT = Path(__file__).with_name("no_dictionary_classes.root")
EVENTS = 200

CLASSES = """
#include <vector>
namespace xAODStandIn {
struct AuxBase {
   int version = 1;
};
struct TrigDecisionAuxInfo_v1 : public AuxBase {
   unsigned int smk = 0;
   std::vector<unsigned int> tav;
   float weight = 0;
};
struct Hit {
   float e = 0;
   short layer = 0;
};
}
#ifdef __ROOTCLING__
#pragma link C++ class xAODStandIn::AuxBase+;
#pragma link C++ class xAODStandIn::TrigDecisionAuxInfo_v1+;
#pragma link C++ class xAODStandIn::Hit+;
#pragma link C++ class std::vector<xAODStandIn::Hit>+;
#endif
"""

WRITER = r"""
#include <array>
#include <TFile.h>
#include <TTree.h>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
void write_no_dictionary_file(const char *path, int n) {
   TFile f(path, "RECREATE");
   float x = 0;
   std::vector<float> v, *pv = &v;
   xAODStandIn::TrigDecisionAuxInfo_v1 aux, *pa = &aux;
   std::vector<xAODStandIn::Hit> hits, *ph = &hits;
   TTree t("tree", "branches of classes whose dictionary only the writer had");
   t.Branch("x", &x);
   t.Branch("v", &pv);
   t.Branch("TrigDecisionAux", &pa, 32000, 99);
   t.Branch("Hits", &ph);
   auto model = ROOT::RNTupleModel::Create();
   auto nx = model->MakeField<float>("x");
   auto nv = model->MakeField<std::vector<float>>("v");
   auto narr = model->MakeField<std::array<float, 3>>("arr");
   auto naux = model->MakeField<xAODStandIn::TrigDecisionAuxInfo_v1>("TrigDecisionAux");
   auto nhits = model->MakeField<std::vector<xAODStandIn::Hit>>("Hits");
   auto writer = ROOT::RNTupleWriter::Append(std::move(model), "ntuple", f);
   for (int i = 0; i < n; ++i) {
      x = i;
      v.assign(i % 3, i * 0.5f);
      aux.smk = i;
      aux.tav.assign(i % 4, i);
      aux.weight = 2 * i;
      hits.clear();
      for (int k = 0; k < i % 3; ++k) hits.push_back({float(i + k), short(k)});
      t.Fill();
      *nx = x;
      *nv = v;
      *narr = {x, -x, 2 * x};
      *naux = aux;
      *nhits = hits;
      writer->Fill();
   }
   writer.reset();
   f.cd();
   t.Write();
}
"""


def main() -> None:
    import ROOT

    with tempfile.TemporaryDirectory(prefix="instore-nodict-") as tmp:
        header = Path(tmp) / "standin_classes.h"
        header.write_text(CLASSES)
        ROOT.gSystem.SetBuildDir(tmp, True)
        if ROOT.gSystem.CompileMacro(str(header), "kO") != 1:
            raise SystemExit("ACLiC could not build the dictionary (is g++ installed?)")
        if not ROOT.gInterpreter.Declare(WRITER):
            raise SystemExit("cling could not compile the writer")
        ROOT.write_no_dictionary_file(str(OUT), EVENTS)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
