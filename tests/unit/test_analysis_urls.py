"""The RDataFrame analysis reads a node-local XRootD server over XRootD, not as a local path."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "agc_ttbar_rdf", Path(__file__).resolve().parents[2] / "analyses" / "agc_ttbar_rdf.py"
)
rdf = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(rdf)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", socket.gethostname()])
def test_a_server_on_this_node_is_asked_for_remotely(host: str) -> None:
    """ROOT takes root://<this node>/... for a local path when opened as RDataFrame opens it."""
    url = f"root://{host}:1094//data/f.root"
    assert rdf.remote_if_on_this_node(url) == f"{url}?remote=1"
    assert rdf.remote_if_on_this_node(f"{url}?xrd.wantprot=unix").endswith("&remote=1")


@pytest.mark.parametrize(
    "url",
    ["root://10.213.226.2:1094//data/f.root", "/data/f.root", "https://localhost//f.root",
     "root://localhost//f.root?remote=0"],
)  # fmt: skip
def test_other_urls_are_left_as_given(url: str) -> None:
    assert rdf.remote_if_on_this_node(url) == url
