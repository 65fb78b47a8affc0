"""One place that imports ROOT, so every caller gets the same set-up.

ROOT is imported lazily (it takes a second), in batch mode, with cling optimising, with the PyPI wheel's alpha
warning silenced, the HTTP plugin handler fixed (see PLATFORM.md: the wheel's default
handler for http:// fails to construct) and our C++ helpers declared once. Where Debian's
XrdClHttp plug-in is installed, the root engine reads http(s) through it (Davix, with the X.509
proxy) instead of TWebFile: see ``http_client``.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

from instore.errors import InstoreError
from instore.urls import PLAIN_HTTP_SCHEMES

_HTTP_HANDLER = (
    "TFile",
    "^http[s]?:",
    "ROOT::Deprecated::TWebFile",
    "Net",
    "TWebFile(const char*,Option_t*)",
)


# The root engine's HTTP clients (recorded as ``http_client``). XrdClHttp is Debian's
# xrootd-client-http-plugins loaded into the wheel's own XRootD client; TWebFile is the wheel's
# fallback (deprecated, plain HTTP/1.1 range requests, no client certificate, no token).
HTTP_ENV = "INSTORE_ROOT_HTTP"  # "twebfile" forces the fallback (to compare the two)
XRDCLHTTP_LIB = "libXrdClHttp-5.so"
XRDCL_HEADERS = Path("/usr/include/xrootd")
_LIB_DIRS = (Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"), Path("/usr/lib"))
_PLUGIN_PACKAGE = "xrootd-client-http-plugins"


def _xrdclhttp_lib() -> Path | None:
    return next((d / XRDCLHTTP_LIB for d in _LIB_DIRS if (d / XRDCLHTTP_LIB).exists()), None)


@functools.cache
def xrdclhttp_available() -> bool:
    """Whether http(s) can go through XrdClHttp: the plug-in and XrdCl's headers (cling compiles
    a small TFile on XrdCl::File) are installed, and it is not switched off."""
    if os.environ.get(HTTP_ENV, "").lower() == "twebfile":
        return False
    return _xrdclhttp_lib() is not None and (XRDCL_HEADERS / "XrdCl" / "XrdClFile.hh").exists()


def _plugin_version() -> str:
    """The Debian package's version, from dpkg (the payload image leaves out /usr/share/doc)."""
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", _PLUGIN_PACKAGE],
                              capture_output=True, text=True, timeout=20, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    found = re.match(r"(?:\d+:)?([\d.]+)", proc.stdout.strip())
    return found.group(1) if proc.returncode == 0 and found else "?"


@functools.cache
def http_client() -> str:
    """What the root engine reads http(s) with, said the way a record keeps it."""
    version = root_version()
    if xrdclhttp_available():
        return (f"XrdClHttp {_plugin_version()} (Davix) in ROOT {version}'s XRootD client, "
                "X.509 proxy, no token")  # fmt: skip
    return f"TWebFile (ROOT {version}, no auth)"


def http_auth_problem(auth: str) -> str | None:
    """Why the root engine's HTTP client cannot present the credential ``auth`` names (None: it
    can). XrdClHttp 5.5 sends the X.509 proxy but no bearer token; TWebFile sends neither."""
    if auth == "none" or (auth == "x509" and xrdclhttp_available()):
        return None
    client = "XrdClHttp 5.5, no token" if xrdclhttp_available() else "TWebFile"
    return (f"the root engine's HTTP client ({client}) cannot authenticate: "
            "use the uproot engine or xrootd for this site")  # fmt: skip


def _plugin_conf_dir() -> str:
    """A private XRD_PLUGINCONFDIR with only the http(s) plug-in: root:// reads keep XRootD's
    own client exactly as before, and no other host plug-in is loaded into measurements."""
    directory = Path(tempfile.mkdtemp(prefix="instore-xrdcl-"))
    atexit.register(shutil.rmtree, directory, True)
    (directory / "http.conf").write_text(
        f"url = {';'.join(f'{n}://*' for n in PLAIN_HTTP_SCHEMES)}\nlib = {_xrdclhttp_lib()}\n"
        "enable = true\n"
    )
    return str(directory)


@functools.cache
def root() -> ModuleType:
    """Import and configure ROOT once per process."""
    os.environ.setdefault("ROOT_MAX_THREADS", "1")
    if xrdclhttp_available():  # read by XrdCl when it starts: before ROOT is imported
        os.environ.setdefault("XRD_PLUGINCONFDIR", _plugin_conf_dir())
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
def xrdclhttp() -> Any:
    """Declare the XrdClHttp-backed TFile (cpp/xrdclhttp.cxx) once; the ``instore`` namespace."""
    ROOT = root()
    ROOT.gSystem.Load("libXrdCl")  # the wheel's XRootD client, which the plug-in joins
    ROOT.gInterpreter.AddIncludePath(str(XRDCL_HEADERS))
    return declare("xrdclhttp")


# C++ files another one uses: declared first (cling has no include path to our sources).
_NEEDS: dict[str, tuple[str, ...]] = {
    "payload": ("cpuburn",), "payload_rntuple": ("cpuburn",),
    "generate": ("rntuple_options",), "generate_like": ("rntuple_options",),
}  # fmt: skip


@functools.cache
def declare(name: str) -> Any:
    """Declare ``instore/cpp/<name>.cxx`` to cling once; return the ``instore`` C++ namespace."""
    for needed in _NEEDS.get(name, ()):
        declare(needed)
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
