"""Draw events like a template's: deterministic from a seed, shaped like the real values.

Each branch has its own random stream (seeded by the file's seed and the branch's name), drawn
in fixed-size chunks, so a branch's values do not depend on which other branches exist or on
the layout being written. Counters are drawn first; a jagged branch then draws as many values
as its counter says.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import numpy as np

from instore.generate.template import BranchModel, Template

CHUNK = 4096  # entries per draw; fixed, so every layout gets the same values


def branch_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence([seed, zlib.crc32(name.encode())]))
    )


def _round_mantissa(x: np.ndarray, bits: int) -> np.ndarray:
    """Keep ``bits`` mantissa bits of float32 values, as NanoAOD's writer does."""
    if bits >= 23:
        return x
    f = x.astype(np.float32)
    drop = np.uint32(23 - bits)
    u = f.view(np.uint32)
    half = np.uint32(1) << (drop - np.uint32(1)) if drop > 0 else np.uint32(0)
    u = ((u + half) >> drop) << drop
    return u.view(np.float32)


def draw(
    model: BranchModel, rng: np.random.Generator, n: int, state: dict[str, float]
) -> np.ndarray:
    """``n`` values of one branch (``state`` carries a running number across chunks)."""
    if model.steps:
        steps = np.array([s for s, _ in model.steps])
        probs = np.array([p for _, p in model.steps])
        taken = rng.choice(steps, size=n, p=probs / probs.sum())
        last = state.get("last", model.start - taken[0])
        values = last + np.cumsum(taken)
        state["last"] = float(values[-1]) if n else last
        return values.astype(model.dtype)
    u = rng.random(n)
    out = np.zeros(n, dtype=np.float64)
    atom_p = sum(p for _, p in model.atoms)
    if model.atoms:
        edges = np.cumsum([p for _, p in model.atoms])
        idx = np.searchsorted(edges, u, side="right")
        hit = idx < len(model.atoms)
        out[hit] = np.array([v for v, _ in model.atoms])[idx[hit]]
    else:
        hit = np.zeros(n, dtype=bool)
    if model.quantiles and (~hit).any():
        # the rest: u rescaled to [0, 1) within the continuous part, then inverted through the
        # template's quantiles (piecewise linear between them)
        rest = (u[~hit] - atom_p) / max(1e-12, 1 - atom_p)
        grid = np.linspace(0, 1, len(model.quantiles))
        out[~hit] = np.interp(np.clip(rest, 0, 1), grid, model.quantiles)
    elif model.atoms and (~hit).any():
        out[~hit] = model.atoms[-1][0]
    if model.leaf in "FD":
        values = out.astype(model.dtype)
        return (
            _round_mantissa(values, model.mantissa_bits).astype(model.dtype)
            if model.leaf == "F"
            else values
        )
    if model.leaf == "O":
        return out != 0
    info = np.iinfo(model.dtype)
    return np.clip(np.rint(out), info.min, info.max).astype(model.dtype)


def chunks(template: Template, n_events: int, seed: int) -> Iterator[tuple[int, list[np.ndarray]]]:
    """(entries, one column per branch in template order), CHUNK entries at a time."""
    rngs = {b.name: branch_rng(seed, b.name) for b in template.branches}
    states: dict[str, dict[str, float]] = {b.name: {} for b in template.branches}
    counters = {b.counter for b in template.branches if b.counter}
    for first in range(0, n_events, CHUNK):
        n = min(CHUNK, n_events - first)
        drawn: dict[str, np.ndarray] = {}
        for b in template.branches:  # counters first: jagged branches need their totals
            if b.name in counters:
                drawn[b.name] = draw(b, rngs[b.name], n, states[b.name]).astype(b.dtype)
        columns = []
        for b in template.branches:
            if b.name not in drawn:
                size = int(drawn[b.counter].sum()) if b.counter else n * b.width
                drawn[b.name] = draw(b, rngs[b.name], size, states[b.name])
            columns.append(np.ascontiguousarray(drawn[b.name]))
        yield n, columns


def max_values(template: Template) -> dict[str, int]:
    """The most values one entry of each branch can hold (what the writer books)."""
    limits = {}
    for b in template.branches:
        if b.counter:
            counter = template.branch(b.counter)
            top = max([v for v, _ in counter.atoms] + counter.quantiles + [1])
            limits[b.name] = int(top) + 1
        else:
            limits[b.name] = b.width
    return limits
