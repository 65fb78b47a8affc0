"""Any file a user brings: a TTree or an RNTuple, named or the largest, in any TDirectory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import uproot
from instore.errors import InstoreError
from instore.payload import runner
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


def test_a_named_object_with_its_format_is_read_without_opening_the_file_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sweep knows what its own files hold: its jobs name the object and its format, and
    open the file only on their clock, as an analysis job does (no connection before it, no
    block of a cold site cache filled by a look at the file)."""

    def opened(*_: object) -> DataObject:
        raise AssertionError("the file was opened to choose the object")

    monkeypatch.setattr(runner.objects, "choose", opened)
    for url in ("root://storage.invalid//f.root", "/data/f.root"):
        known = ReadOptions(url, "uproot", tree="analysis/nominal", object_format=RNTUPLE)
        assert runner.choose_object(known) == (DataObject("analysis/nominal", RNTUPLE), None)
    with pytest.raises(InstoreError, match="--format needs the object's path"):
        ReadOptions("/data/f.root", object_format=TTREE)
    with pytest.raises(InstoreError, match="unknown object format 'parquet'"):
        ReadOptions("/data/f.root", tree="t", object_format="parquet")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_named_object_and_format_read_as_the_chosen_one_is(
    files: dict[str, Path], engine: str
) -> None:
    chosen = run_read(ReadOptions(str(files["mixed"]), engine, tree="ntuple", cache_bytes=0))
    named = ReadOptions(str(files["mixed"]), engine, "ntuple", RNTUPLE, cache_bytes=0)
    told = run_read(named)
    a, b = chosen.as_dict(), told.as_dict()
    assert a["error"] is None and b["error"] is None, (a["error"], b["error"])
    for key in ("format", "object_name", "events", "bytes_needed", "bytes_read", "read_calls"):
        assert a[key] == b[key], key
    for path, told, line in (
        ("ntuple", TTREE, "the object at 'ntuple' is a ROOT::RNTuple, not a TTree -- give --format rntuple"),
        ("tree", RNTUPLE, "the object at 'tree' is a TTree, not an RNTuple -- give --format ttree"),
    ):  # fmt: skip
        wrong = run_read(ReadOptions(str(files["mixed"]), engine, path, told, cache_bytes=0))
        assert wrong.error is not None and line in wrong.error, wrong.error


class _Unpicklable(Exception):
    def __init__(self, text: str, handle: object) -> None:
        super().__init__(text)
        self.handle = handle

    def __reduce__(self):  # as an error holding a live C++ object or a lock would
        raise TypeError("cannot pickle")


def _choose_here(url: str, name: str | None, timeout: float, via_root: bool) -> DataObject:
    """Stands for objects.choose: says which process it ran in."""
    if "unpicklable" in url:
        raise _Unpicklable("the server said no", object())
    if "refused" in url:
        raise InstoreError(f"{url}: refused", "renew it")
    return DataObject(str(os.getpid()), TTREE)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_remote_files_object_is_chosen_in_another_process_so_no_connection_outlives_it(
    monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """The choice before the clock connects to the server (and logs in, and authenticates);
    made in this process, the job's own open would reuse that connection, as no job on a
    worker can. A local file is chosen here: it has no connection to keep."""
    monkeypatch.setattr(runner.objects, "choose", _choose_here)
    remote, err = runner.choose_object(ReadOptions("root://storage.invalid//f.root", engine))
    assert err is None and remote is not None and int(remote.path) != os.getpid()
    local, err = runner.choose_object(ReadOptions("/data/f.root", engine))
    assert err is None and local is not None and int(local.path) == os.getpid()


def test_an_error_choosing_in_the_other_process_comes_back_as_its_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner.objects, "choose", _choose_here)
    _, err = runner.choose_object(ReadOptions("root://refused.invalid//f.root"))
    assert isinstance(err, InstoreError) and err.fix == "renew it"
    assert str(err) == "root://refused.invalid//f.root: refused -- renew it"
    _, err = runner.choose_object(ReadOptions("root://unpicklable.invalid//f.root"))
    assert str(err) == "_Unpicklable: the server said no"


def test_an_endpoint_that_resets_the_connection_is_not_called_a_corrupt_file() -> None:
    """HTTP pointed at a port whose server speaks another protocol (or drops the connection):
    the HTTP client raises its own ProtocolError around the reset. Said as the connection's
    failure with the endpoint to check, not as a file to regenerate."""
    import socket
    import struct
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def reset_each() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(1024)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # an RST, as a server of another protocol sends

    threading.Thread(target=reset_each, daemon=True).start()
    try:
        port = server.getsockname()[1]
        with pytest.raises(InstoreError) as err:
            choose(f"http://127.0.0.1:{port}/data/f.root", None, timeout=60)
    finally:
        server.close()
    assert "the connection failed" in str(err.value), str(err.value)
    assert "corrupt" not in str(err.value) and "host, port and protocol" in err.value.fix
