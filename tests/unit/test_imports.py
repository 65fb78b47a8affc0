"""No import cycle in the package, counting every import: module-level, inside functions and
under TYPE_CHECKING (a cycle hidden behind a late import is still one), the parent packages'
``__init__`` that importing a submodule runs, and modules named in strings (``"instore.x.y"`` or
``"instore.x.y:Name"``) that ``importlib`` loads."""

from __future__ import annotations

import ast
from pathlib import Path

import instore

PACKAGE = Path(instore.__file__).parent
MAX_LINES = 400  # a module longer than this is split by concern


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports anywhere in its text."""

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(known(a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                found.add(whole if whole in modules else known(base))
    found.update(_named_in_strings(path, modules))
    found.update(p for m in set(found) if m is not None for p in _parents(m, modules))
    return {m for m in found if m is not None and m != name} - _parents(name, modules)


def _parents(name: str, modules: dict[str, Path]) -> set[str]:
    """The packages whose ``__init__`` runs before ``name`` is imported (already running when
    ``name`` itself is imported, so not an edge out of ``name``)."""
    parts = name.split(".")
    return {p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in modules}


def _named_in_strings(path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules of the package a string names, as ``importlib.import_module`` is given them."""
    named = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            module = node.value.partition(":")[0]
            if module in modules:
                named.add(module)
    return named


def module_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports."""
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def package_graph() -> dict[str, set[str]]:
    """Each first-level part of the package (``instore.payload``, ``instore.record``) -> the
    others its modules import: the layers, which import only down."""

    def part(name: str) -> str:
        return ".".join(name.split(".")[:2])

    graph: dict[str, set[str]] = {}
    for name, imported in module_graph().items():
        graph.setdefault(part(name), set()).update(part(m) for m in imported)
    return {name: imported - {name} for name, imported in graph.items()}


def cycles(graph: dict[str, set[str]] | None = None) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan); modules by default."""
    graph = module_graph() if graph is None else graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_import_cycle() -> None:
    assert cycles() == []


def test_no_package_imports_one_that_imports_it_back() -> None:
    """Imports only go down between the package's parts too: no cycle of packages, such as
    credentials.diagnosis -> storage -> credentials, or payload.warm naming the replay's
    modules while the replay runs the payload's runner (both seen, and broken)."""
    assert cycles(package_graph()) == []


def test_no_module_is_over_the_line_limit() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}  # fmt: skip
    assert long == {}


def test_the_site_package_loads_no_dataframes() -> None:
    """``instore site`` commands and the sweep's site code start without numpy and pandas: a
    site's own dataset (which needs them) is loaded only for a site that has one."""
    import subprocess
    import sys

    code = "import sys, instore.site; print('pandas' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# The package's parts from the bottom up: a part imports only parts of the layers below its own.
# A new part takes its place here (tests/unit and docs/development.md say where it goes).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("instore", "vocabulary", "errors", "filenames", "cliutil", "workflowlock",
     "uproot_xrootd", "pagecache"),  # words, errors, file names, dropping cached pages
    ("configfile", "urls", "calibration"),  # config files, URLs, a site's calibration
    ("access", "credentials", "rootenv"),  # how a job reaches a file, with what, through ROOT
    ("storage", "record", "generate"),  # reading and writing storage, the record, test files
    ("payload", "container"),  # a job, and what it runs in
    ("inspect", "study"),  # a file's layout on disk, the study's grid
    ("site", "summary"),  # a site (emulated or real), a section's figures
    ("replay", "run"),  # recorded analyses replayed, a run's config
    ("sweep", "needs"),  # measuring a site, what a run needs installed
    ("predict",),  # the model, fitted on what the sweeps measured
    ("report",),  # the pages
    ("cli",),  # the command line
)  # fmt: skip


def test_every_part_imports_only_parts_of_the_layers_below_it() -> None:
    """Imports go down: a part of the package that imports one of its own layer or above is
    named with the import (no upward import is allowed; ``instore.predict`` taking a sweep's
    records, not the sweep ``predict``'s)."""
    layer = {f"instore.{p}" if p != "instore" else p: i for i, ps in enumerate(LAYERS) for p in ps}
    graph = package_graph()
    assert set(graph) == set(layer), "a part of the package is missing from LAYERS"
    upward = sorted(f"{a} -> {b}" for a, imported in graph.items() for b in imported
                    if layer[b] >= layer[a])  # fmt: skip
    assert upward == []
