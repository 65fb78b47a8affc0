"""One spec per engine (instore.payload.specs), and everything else derives from it: adding an
engine touches its spec, its module and the vocabulary, and no other module keeps a list of
engines or checks an engine's name."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

import instore
import pytest
from instore import vocabulary
from instore.cli import build_parser
from instore.errors import InstoreError
from instore.payload import runner
from instore.payload import specs as engines
from instore.payload.specs import FILE_MODULES, MT_MODES, PAYLOADS, REPLAY_ENGINE, SPECS
from instore.sweep.engines import REGISTRY

PACKAGE = Path(instore.__file__).parent
# Literal engine-name checks outside the spec, by function: none (the summaries' preference for
# the root engine's points is its spec's compared_first). The list may only shrink.
LEFT: dict[str, int] = {}


def test_one_spec_per_engine_of_the_vocabulary() -> None:
    assert tuple(SPECS) == vocabulary.ENGINES
    assert all(name == spec.name for name, spec in SPECS.items())
    assert [s.name for s in SPECS.values() if s.replays_traces] == [REPLAY_ENGINE]
    for spec in SPECS.values():
        assert spec.payload in FILE_MODULES, f"{spec.name} forks from a payload that reads files"
        assert bool(spec.thread_modes) != bool(spec.one_thread), (
            f"{spec.name}: thread modes, or why it has none")  # fmt: skip
        assert spec.http in (engines.ROOT_CLIENT, engines.PYTHON_CLIENT)
        assert spec.xrootd in (engines.ROOT_CLIENT, engines.PYTHON_CLIENT)
        assert set(spec.protocols) <= set(vocabulary.PROTOCOLS)
        assert set(spec.layouts) <= set(vocabulary.LAYOUTS)


def test_an_engine_forks_from_a_payload_with_its_own_xrootd_client() -> None:
    """ROOT's XRootD client and PyPI xrootd crash a process that loads both."""
    for spec in SPECS.values():
        assert SPECS[spec.payload].xrootd == spec.xrootd, spec.name


def test_each_file_engines_module_implements_the_engine_protocol() -> None:
    assert {n: importlib.import_module(m) for n, m in FILE_MODULES.items()} == runner.ENGINES
    for module in runner.ENGINES.values():
        for function in ("prepare", "set_threads", "run"):
            assert callable(getattr(module, function, None)), f"{module.__name__}.{function}"
    assert {s.command for s in SPECS.values() if s.module} == {engines.READ_COMMAND}


def test_the_lists_kept_apart_before_are_derived_from_the_specs() -> None:
    choices = {
        (a.dest, p.prog): a.choices
        for p in _subparsers(build_parser()).values()
        for a in p._actions
        if a.choices is not None
    }
    assert tuple(choices["engine", "instore read"]) == tuple(FILE_MODULES)
    assert tuple(choices["mt_mode", "instore read"]) == MT_MODES
    assert tuple(choices["engine", "instore warm"]) == PAYLOADS == ("root", "uproot")
    assert MT_MODES == ("cluster", "implicit", "executors")
    assert {n: e.spec for n, e in REGISTRY.items()} == SPECS
    assert not hasattr(vocabulary, "PAYLOAD_ENGINES") and not hasattr(vocabulary, "REPLAY_ENGINE")
    from instore.cli import COMMANDS, JOB_MODULES

    # every command an engine's jobs run has the modules its warm payload imports before forking
    assert set(JOB_MODULES) == {s.command for s in SPECS.values()}
    assert all(COMMANDS[command] in modules for command, modules in JOB_MODULES.items())
    assert engines.forked_by("uproot") == (SPECS["uproot"], SPECS["replay"])


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The instore command's subcommands' parsers, by name."""
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_thread_modes_come_from_the_spec() -> None:
    assert engines.resolve_mode("root", 4, None) == "cluster"
    assert engines.resolve_mode("uproot", 4, None) == "executors"
    assert engines.resolve_mode("root", 1, "implicit") is None
    with pytest.raises(InstoreError, match="the replay engine runs one thread"):
        engines.resolve_mode("replay", 2, None)
    with pytest.raises(InstoreError, match="choose cluster or implicit"):
        engines.resolve_mode("root", 2, "executors")


class _EngineChecks(ast.NodeVisitor):
    """Per function (its innermost), the comparisons of an engine with an engine's name
    (``engine == "root"``, ``part["engine"] == "root"``) and indexings of a list of engines by position (``ENGINES[:2]``)."""

    def __init__(self) -> None:
        self.function = "<module>"
        self.found: dict[str, int] = {}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        named = [s for s in sides if isinstance(s, ast.Constant) and s.value in SPECS]
        about = any("engine" in ast.unparse(s) for s in sides if s not in named)
        self._count(bool(named) and about)  # not the replay section, nor a record's kind
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        named = getattr(node.value, "id", getattr(node.value, "attr", ""))
        self._count("ENGINES" in named and isinstance(node.slice, ast.Slice | ast.Constant))
        self.generic_visit(node)

    def _count(self, hit: bool) -> None:
        if hit:
            self.found[self.function] = self.found.get(self.function, 0) + 1


def _engine_checks(path: Path) -> dict[str, int]:
    checks = _EngineChecks()
    checks.visit(ast.parse(path.read_text()))
    return checks.found


def test_no_module_but_the_spec_checks_an_engines_name() -> None:
    found: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "engines.py" or path.parent != PACKAGE:
            for function, n in _engine_checks(path).items():
                found[function] = found.get(function, 0) + n
    new = {function: n for function, n in found.items() if n > LEFT.get(function, 0)}
    assert new == {}, "look the engine up in instore.payload.specs (its spec) instead"


def test_the_check_finds_a_literal_engine_name(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "E = ENGINES[:2]\ndef f(engine, section):\n"
        '    return engine == "uproot" or section == "replay"\n'
    )
    assert _engine_checks(module) == {"<module>": 1, "f": 1}
