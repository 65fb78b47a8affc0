"""Freeze the venv this runs in into the three locks (``make lock``): what a study needs
(requirements.lock), what only emulated sites add (requirements-emulated.lock) and the tools of
the tests, lint and docs (requirements-dev.lock). Each lock holds its .in file's packages and
everything they pull in (extras included) that an earlier lock does not already hold."""

from __future__ import annotations

import importlib.metadata as md
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

ENVS = Path(__file__).resolve().parent
# Earlier sets first: a package the study needs is pinned in the study's lock only.
SETS = ("requirements-bootstrap", "requirements", "requirements-emulated", "requirements-dev")
HEADER = {
    "requirements-bootstrap": "the installer of the other locks (make venv puts it in first, "
    "with pip)",
    "requirements": "the study (make setup), on the distribution's own Python (Debian 12: 3.11.2)",
    "requirements-emulated": "what only emulated sites add (make study with one, make test)",
    "requirements-dev": "the tools of the tests, the lint and the docs (make test, lint, docs)",
}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def direct(name: str) -> list[str]:
    lines = (ENVS / f"{name}.in").read_text().splitlines()
    return [ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip()]


def closure(roots: list[str], installed: dict[str, md.Distribution]) -> set[str]:
    """Every installed distribution ``roots`` pull in, following the extras they ask for."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(norm(Requirement(r).name), frozenset(Requirement(r).extras)) for r in roots]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        if name not in installed:
            sys.exit(f"lock: {name} is not installed in this venv; install it first")
        seen.add((name, extras))
        for line in installed[name].requires or []:
            req = Requirement(line)
            markers = [{"extra": e} for e in ("", *extras)]
            if req.marker is None or any(req.marker.evaluate(m) for m in markers):
                todo.append((norm(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


def main() -> None:
    installed = {norm(d.metadata["Name"]): d for d in md.distributions()}
    installed.pop("instore", None)
    taken: set[str] = set()
    for name in SETS:
        pins = closure(direct(name), installed) - taken
        taken |= pins
        pinned = (f"{installed[p].metadata['Name']}=={installed[p].version}" for p in pins)
        lines = sorted(pinned, key=str.lower)
        text = (f"# Pinned: {HEADER[name]}.\n# From envs/{name}.in; regenerate with make lock "
                "(freezes .venv; installs nothing).\n" + "\n".join(lines) + "\n")  # fmt: skip
        (ENVS / f"{name}.lock").write_text(text)
    left = sorted(set(installed) - taken - {"pip", "setuptools", "wheel"})
    if left:
        print(f"lock: installed but needed by none of the .in files (not pinned): {left}")


if __name__ == "__main__":
    main()
