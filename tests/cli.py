"""How tests run the ``instore`` command line, the one way: in a child process of this
interpreter that imports this checkout's package (the ``cli`` fixture: ``cli(*args)`` waits,
``cli.popen(*args)`` starts), or in the test's own process with its output captured (the
``cli_main`` fixture). Both give a ``CompletedProcess`` (``returncode``, ``stdout``,
``stderr``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import instore
import pytest

PACKAGE_ROOT = Path(instore.__file__).resolve().parents[1]  # the folder instore is imported from
BIN = Path(sys.executable).parent  # this interpreter's venv: `instore`, `python`


def command(*args: str) -> list[str]:
    """``instore ARGS`` as this interpreter runs it."""
    return [sys.executable, "-m", "instore.cli", *args]


def _first(entry: str, value: str | None) -> str:
    rest = [p for p in (value or "").split(os.pathsep) if p and p != entry]
    return os.pathsep.join([entry, *rest])


def environ(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (by default this process's environment) with the package under test first on
    PYTHONPATH and the venv first on PATH (as `make test` has it), so that the command and what
    it starts by name use this interpreter and this checkout."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = _first(str(PACKAGE_ROOT), out.get("PYTHONPATH"))
    out["PATH"] = _first(str(BIN), out.get("PATH", os.defpath))
    return out


def run(
    *args: str,
    check: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float | None = 300,
) -> subprocess.CompletedProcess[str]:
    """``instore ARGS`` to its end, its output captured as text. ``env`` is the whole
    environment (as for ``subprocess.run``); ``check``: fail the test, with the end of its
    stderr, unless it exits 0."""
    done = subprocess.run(command(*args), capture_output=True, text=True, env=environ(env),
                          cwd=cwd, timeout=timeout, check=False)  # fmt: skip
    if check:
        assert done.returncode == 0, (
            f"instore {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return done


def popen(*args: str, env: Mapping[str, str] | None = None, **kwargs: Any) -> subprocess.Popen:
    """``instore ARGS`` started, not waited for; ``kwargs`` as for ``subprocess.Popen``."""
    return subprocess.Popen(command(*args), env=environ(env), **kwargs)


class Cli:
    """The ``cli`` fixture: ``cli(*args, ...)`` is ``run``, ``cli.popen`` and
    ``cli.command`` as above."""

    command = staticmethod(command)
    popen = staticmethod(popen)

    def __call__(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return run(*args, **kwargs)


CliMain = Callable[..., subprocess.CompletedProcess[str]]  # the ``cli_main`` fixture


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``instore ARGS`` through ``instore.cli.main`` in this process; what it printed, from
    ``capsys``."""
    from instore.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["instore", *args], code, out, err)
