"""One place that imports ROOT, so every caller gets the same set-up.

ROOT is imported lazily (it takes a second), in batch mode, with cling optimising, with the PyPI wheel's alpha
warning silenced, the HTTP plugin handler fixed (see PLATFORM.md: the wheel's default
handler for http:// fails to construct) and our C++ helpers declared once.
"""

from __future__ import annotations

import functools
import os
import warnings
from importlib import resources
from types import ModuleType
from typing import Any

from instore.errors import InstoreError

_HTTP_HANDLER = (
    "TFile",
    "^http[s]?:",
    "ROOT::Deprecated::TWebFile",
    "Net",
    "TWebFile(const char*,Option_t*)",
)


@functools.cache
def root() -> ModuleType:
    """Import and configure ROOT once per process."""
    os.environ.setdefault("ROOT_MAX_THREADS", "1")
    # cling JITs declared code unoptimised unless told: -O2 makes our C++ loops 2-3x faster.
    os.environ.setdefault("EXTRA_CLING_ARGS", "-O2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import ROOT
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise InstoreError(
                f"cannot import ROOT ({err})", "run `make venv` to install the pinned ROOT wheel"
            ) from err
    ROOT.gROOT.SetBatch(True)
    ROOT.gErrorIgnoreLevel = ROOT.kWarning
    ROOT.gPluginMgr.LoadHandlersFromPluginDirs("TFile")
    ROOT.gPluginMgr.AddHandler(*_HTTP_HANDLER)
    return ROOT


@functools.cache
def declare(name: str) -> Any:
    """Declare ``instore/cpp/<name>.cxx`` to cling once; return the ``instore`` C++ namespace."""
    ROOT = root()
    code = resources.files("instore").joinpath("cpp", f"{name}.cxx").read_text()
    if not ROOT.gInterpreter.Declare(code):
        raise InstoreError(
            f"cling could not compile instore/cpp/{name}.cxx",
            "check that g++ is installed (cling needs its C++ standard library)",
        )
    return ROOT.instore


@functools.cache
def root_version() -> str:
    """ROOT's release, read from the installed headers: no need to load ROOT (uproot jobs)."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("ROOT")
    if spec is None or spec.origin is None:
        return "not installed"
    header = os.path.join(os.path.dirname(spec.origin), "include", "ROOT", "RVersion.hxx")
    try:
        with open(header) as f:
            text = f.read()
    except OSError:
        return "unknown"
    parts = [
        re.search(rf"#define ROOT_VERSION_{p}\s+(\d+)", text) for p in ("MAJOR", "MINOR", "PATCH")
    ]
    if not all(parts):
        return "unknown"
    major, minor, patch = (int(m.group(1)) for m in parts)  # type: ignore[union-attr]
    return f"{major}.{minor:02d}.{patch:02d}"  # as gROOT->GetVersion() prints it
