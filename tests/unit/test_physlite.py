"""A real ATLAS PHYSLITE RNTuple, read by both engines as a site's users would read it.

Its ``EventData`` holds fields named as ATLAS names them (``xTrigDecisionAux:``, 754 dynamic
``...AuxDyn:...`` top-level fields, 908 with sub-fields), classes with no dictionary here (with
empty interface base classes such as ``SG::IConstAuxStore``), collections of such classes
(``std::vector<std::vector<ElementLink<...>>>``), a leaf declared by an ATLAS alias
(``SG::sgkey_t``), and dynamic fields added after the first entry (deferred columns, whose
first pages ROOT lists as "page zero", with no bytes on storage). The root engine once read
0 events of it. See tests/unit/data/README.md for where the file comes from.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import uproot
from instore.payload.pattern import Pattern
from instore.payload.runner import ReadOptions, run_read

PHYSLITE = Path(__file__).parent / "data" / "uproot-physlite-rntuple_v1-0-0-0.root"
ENGINES = ("root", "uproot")
ENTRIES, TOP_FIELDS, COLON_FIELDS = 100, 854, 802  # what uproot lists, pinned
# A record of a class without a dictionary (its base classes hold no data), a dynamic field with
# a deferred column, and a vector of vectors of ElementLink (no dictionary, an aliased member).
HARD_FIELDS = (
    "xTrigDecisionAux:",
    "AnalysisJetsAuxDyn:pt",
    "AnalysisElectronsAuxDyn:trackParticleLinks",
)


def _read(engine: str, branches: str = "all") -> dict:
    pattern = Pattern(branches=branches)
    options = ReadOptions(str(PHYSLITE), engine=engine, tree="EventData", pattern=pattern)
    record = run_read(options).as_dict()
    assert record["error"] is None, f"{engine}: {record['error']}"
    return record


@pytest.fixture(scope="module")
def listed() -> tuple[int, list[str]]:
    """Entries and top-level field names as uproot lists them (not through instore)."""
    with uproot.open(PHYSLITE) as f:
        ntuple = f["EventData"]
        return int(ntuple.num_entries), list(ntuple.keys(recursive=False))


def test_physlite_rntuple_both_engines_read_every_readable_field(
    listed: tuple[int, list[str]],
) -> None:
    entries, names = listed
    assert (entries, len(names)) == (ENTRIES, TOP_FIELDS)
    assert sum(":" in n for n in names) == COLON_FIELDS
    records = {e: _read(e) for e in ENGINES}
    for engine, r in records.items():
        assert r["events"] == r["entries"] == ENTRIES, engine
        assert r["branches_total"] == TOP_FIELDS, engine
        # every field is readable here: none skipped, so none needs a reason
        assert r["branches_read"] == TOP_FIELDS, engine
        assert r["fields_skipped"] == 0 and r["fields_skipped_reason"] is None, engine
    root, up = records["root"], records["uproot"]
    assert root["bytes_needed"] == up["bytes_needed"] > 0
    # ROOT read and unzipped every page of the file's one cluster
    assert root["counters"]["nClusterLoaded"] == 1 and root["counters"]["szUnzip"] > 0
    assert root["bytes_read"] >= root["bytes_needed"]


def test_physlite_fields_named_with_colons_are_read_by_name() -> None:
    """Names with ':' select the fields they name, in both engines, including the three kinds
    the root engine could not read before (see ``HARD_FIELDS``)."""
    r, u = (_read(e, ",".join(HARD_FIELDS)) for e in ENGINES)
    for record in (r, u):
        assert record["branches_read"] == len(HARD_FIELDS) and record["fields_skipped"] == 0
        assert record["events"] == ENTRIES
    assert r["bytes_needed"] == u["bytes_needed"] > 0
    assert r["counters"]["szUnzip"] > 0
