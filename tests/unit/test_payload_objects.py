"""Any file a user brings: a TTree or an RNTuple, named or the largest, in any TDirectory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import uproot
from instore.errors import InstoreError
from instore.payload.objects import RNTUPLE, TTREE, DataObject, choose
from instore.payload.runner import ReadOptions, run_read

from tests.cli import Cli

ENGINES = ["root", "uproot"]


def _tree_data(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"met": rng.exponential(30, n), "njet": rng.poisson(3, n).astype(np.int32)}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("objects")
    nested = out / "nested.root"
    with uproot.recreate(nested) as f:
        f.mkdir("analysis")
        f.mktree("analysis/nominal", {"met": np.float64, "njet": np.int32})
        f["analysis/nominal"].extend(_tree_data(3000))
        f["small"] = {"x": np.arange(10.0)}  # a tiny RNTuple at the top: not the largest
    mixed = out / "mixed.root"
    with uproot.recreate(mixed) as f:
        f.mktree("tree", {"met": np.float64})
        f["tree"].extend({"met": np.arange(100.0)})
        f["ntuple"] = _tree_data(5000)  # RNTuple, larger than the tree
    neither = out / "neither.root"
    with uproot.recreate(neither) as f:
        f["h1"] = np.histogram(np.arange(10.0).astype(np.float32))
        f.mkdir("analysis")
        f["analysis/note"] = "a string"
    return {"nested": nested, "mixed": mixed, "neither": neither}


def test_the_largest_object_is_chosen_in_any_directory(files: dict[str, Path]) -> None:
    assert choose(str(files["nested"]), None) == DataObject("analysis/nominal", TTREE)
    assert choose(str(files["mixed"]), None) == DataObject("ntuple", RNTUPLE)


def test_an_object_is_named_by_path_or_by_its_own_name(files: dict[str, Path]) -> None:
    assert choose(str(files["nested"]), "nominal").path == "analysis/nominal"
    assert choose(str(files["nested"]), "analysis/nominal").path == "analysis/nominal"
    assert choose(str(files["mixed"]), "tree") == DataObject("tree", TTREE)
    with pytest.raises(InstoreError, match=r"no TTree or RNTuple named 'nope'.*analysis/nominal"):
        choose(str(files["nested"]), "nope")


def test_a_file_with_neither_says_what_it_holds(files: dict[str, Path]) -> None:
    with pytest.raises(InstoreError) as err:
        choose(str(files["neither"]), None)
    text = str(err.value)
    assert "holds no TTree or RNTuple; it holds:" in text and "\n" not in text
    assert "TH1" in text and "h1" in text and "TDirectory analysis" in text


@pytest.mark.parametrize("engine", ENGINES)
def test_both_engines_read_a_tree_in_a_directory(files: dict[str, Path], engine: str) -> None:
    record = run_read(ReadOptions(str(files["nested"]), engine=engine, cache_bytes=0)).as_dict()
    assert record["error"] is None, record["error"]
    assert record["format"] == "ttree" and record["object_name"] == "analysis/nominal"
    assert record["tree"] == "analysis/nominal"
    assert record["events"] == record["entries"] == 3000
    assert record["bytes_needed"] > 0 and record["bytes_read"] >= record["bytes_needed"]


def test_engines_agree_on_a_named_tree_next_to_an_rntuple(files: dict[str, Path]) -> None:
    r, u = (
        run_read(ReadOptions(str(files["mixed"]), engine=e, tree="tree", cache_bytes=0)).as_dict()
        for e in ENGINES
    )
    assert r["error"] is None and u["error"] is None
    assert r["format"] == u["format"] == "ttree"
    assert r["events"] == u["events"] == 100 and r["bytes_needed"] == u["bytes_needed"]


def test_the_object_option_and_the_one_line_for_neither(files: dict[str, Path], cli: Cli) -> None:
    run = ["read", "--engine", "uproot"]
    ok = cli(*run, str(files["nested"]), "--object", "small")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["format"] == "rntuple"
    bad = cli(*run, str(files["neither"]))
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "holds no TTree or RNTuple; it holds:" in json.loads(bad.stdout)["error"]
