"""A large file as copies of a smaller one: its events ``copies`` times, merged as hadd merges.

Drawing and compressing a 1 GB NanoAOD-like file costs 2.5-4.5 minutes of CPU per layout (the
reference run of 2026-11-27: 846 s for the four layouts of the 1 GB set, two thirds of the
study's file generation). ROOT's ``TFileMerger`` in fast mode (what ``hadd`` does, and CMS's
``haddnano.py`` when it merges NanoAOD outputs) copies the compressed baskets and pages instead:
the result has the source's baskets, clusters and compression, each copy's clusters one after
the other, and its events repeat. It is a merged file, not one ROOT filled in one go: such a
file's TTree baskets grow as it fills, so a 1 GB TTree read with the TTreeCache off takes more
read calls merged than drawn (657 against 387 in the reference runs). Its ``instore_meta`` says
what it was made from.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from instore.errors import InstoreError
from instore.filenames import replica_name
from instore.rootenv import root, root_version

META = "instore_meta"
FIX = "regenerate the source (instore generate, or `make study`), then run this again"


def read_meta(path: Path) -> dict[str, Any]:
    """The ``instore_meta`` record ``instore generate`` writes into every file."""
    ROOT = root()
    file = ROOT.TFile.Open(str(path), "READ")
    if not file or file.IsZombie():
        raise InstoreError(f"cannot open {path} as a ROOT file", FIX)
    try:
        record = file.Get(META)
        if not record:
            raise InstoreError(
                f"{path} has no {META} record: it was not written by instore generate",
                "repeat a file instore generate wrote (its layout and replica are read from it)",
            )
        return json.loads(str(record.GetTitle()))
    finally:
        file.Close()


def entries(path: Path, meta: dict[str, Any]) -> int:
    """The events the file's one tree or RNTuple (its key besides the meta record) holds."""
    ROOT = root()
    file = ROOT.TFile.Open(str(path), "READ")
    try:
        names = {k.GetName() for k in file.GetListOfKeys()} - {META}
        if len(names) != 1:
            raise InstoreError(f"{path} holds {sorted(names)}, not one tree or RNTuple", FIX)
        name = names.pop()
        if meta.get("format") != "rntuple":
            return int(file.Get(name).GetEntries())
    finally:
        file.Close()
    return int(ROOT.RNTupleReader.Open(name, str(path)).GetNEntries())


def repeat_file(source: Path, copies: int, fileset: str, out: Path) -> Path:
    """Write ``copies`` copies of ``source``'s events as one file of set ``fileset`` in
    ``out`` (the source's layout and replica); returns its path."""
    if copies < 2:
        raise InstoreError(f"--copies {copies}: a repeated file needs at least 2 copies",
                           "give --copies 2 or more")  # fmt: skip
    meta = read_meta(source)
    target = out / replica_name(meta["layout"], int(meta.get("replica", 0)), fileset)
    with tempfile.TemporaryDirectory(prefix="instore-repeat-", dir=out) as tmp:
        merged = Path(tmp) / target.name
        _merge(source, copies, merged, int(meta.get("compression", 101)))
        _write_meta(merged, _repeated_meta(meta, source, copies, fileset))
        want = copies * int(meta["n_events"])
        got = entries(merged, meta)
        if got != want:
            raise InstoreError(f"merging {copies} copies of {source} gave {got} events, not {want}",
                               "check free disk space in the output directory, then run again")  # fmt: skip
        merged.replace(target)
    return target


def _merge(source: Path, copies: int, target: Path, compression: int) -> None:
    """ROOT's fast merge (no recompression at the source's own compression), as hadd."""
    ROOT = root()
    merger = ROOT.TFileMerger(False, False)
    merger.SetFastMethod(True)
    merger.SetPrintLevel(0)
    if not merger.OutputFile(str(target), "RECREATE", compression):
        raise InstoreError(f"ROOT could not create {target}",
                           "check the output directory exists, is writable and has room")  # fmt: skip
    for _ in range(copies):
        if not merger.AddFile(str(source), False):
            raise InstoreError(f"ROOT could not open {source} to merge it", FIX)
    if not merger.Merge():
        raise InstoreError(f"ROOT could not merge copies of {source} into {target}",
                           "check free disk space in the output directory, then run again")  # fmt: skip


def _repeated_meta(meta: dict[str, Any], source: Path, copies: int, fileset: str) -> dict[str, Any]:
    size = meta.get("size_mb")
    return {
        **meta,
        "fileset": fileset,
        "n_events": copies * int(meta["n_events"]),
        "size_mb": None if size is None else copies * float(size),
        "repeats": {"source": source.name, "fileset": meta.get("fileset", ""), "copies": copies},
        "merged_with": f"TFileMerger fast (ROOT {root_version()})",
    }


def _write_meta(path: Path, meta: dict[str, Any]) -> None:
    """One meta record (the merge keeps each copy's) describing the merged file."""
    ROOT = root()
    file = ROOT.TFile.Open(str(path), "UPDATE")
    try:
        file.Delete(f"{META};*")
        ROOT.TNamed(META, json.dumps(meta)).Write()
    finally:
        file.Close()
