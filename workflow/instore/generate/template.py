"""A real file's schema and value statistics, kept as a small JSON template.

``derive`` reads a TTree written by an experiment's software (a CMS NanoAOD, say) with uproot
and keeps, per branch: its name, leaf type, counter (for jagged collections) or fixed width,
and what its values look like: the frequent values with their probabilities, quantiles of the
rest, the mantissa bits its floats keep (NanoAOD rounds most floats to 10-12 bits), or the
steps of a running number. ``instore.generate.values`` draws new events from that, so a
generated file has the template's branches and compresses as the template does. The template
also keeps each branch's compressed bytes per event, measured by ROOT rewriting the template
with every basket as its own key (a small file keeps its baskets inside the tree's record,
where their size is not recorded per branch).

Named templates ship with the package (``templates/<name>.json``): the project keeps what it
derived, not the file it derived it from.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tempfile
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from instore.errors import InstoreError

TEMPLATE_VERSION = 1
QUANTILES = 33  # 32 equal-probability bins of the non-frequent values
FREQUENT = 0.02  # a value seen this often is kept as an atom (defaults, zeros, flags)
MAX_ATOMS = 64
# Leaf type codes (ROOT's leaflist letters) and the numpy dtype a column is drawn in.
LEAF_DTYPES: dict[str, str] = {
    "O": "bool", "B": "int8", "b": "uint8", "S": "int16", "s": "uint16", "I": "int32",
    "i": "uint32", "L": "int64", "l": "uint64", "F": "float32", "D": "float64",
}  # fmt: skip
_NUMPY_LEAF = {np.dtype(v).newbyteorder(">").str: k for k, v in LEAF_DTYPES.items()} | {
    np.dtype(v).str: k for k, v in LEAF_DTYPES.items()
}


@dataclass
class BranchModel:
    """One branch: how it is stored and how its values are distributed."""

    name: str
    leaf: str  # ROOT leaflist type letter (F, I, i, b, O, l, ...)
    counter: str | None = None  # the counter branch of a jagged branch
    width: int = 1  # values per entry of a non-jagged branch (fixed arrays)
    atoms: list[list[float]] = field(default_factory=list)  # [value, probability] pairs
    quantiles: list[float] = field(default_factory=list)  # of the values not in atoms
    mantissa_bits: int = 23  # float values are rounded to this many mantissa bits
    steps: list[list[float]] = field(default_factory=list)  # running numbers: [step, p]
    start: float = 0.0  # running numbers: the first value
    template_bytes_per_event: float = 0.0  # compressed, as ROOT stores it (see module doc)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(LEAF_DTYPES[self.leaf])

    @property
    def leaflist(self) -> str:
        shape = (
            f"[{self.counter}]" if self.counter else (f"[{self.width}]" if self.width > 1 else "")
        )
        return f"{self.name}{shape}/{self.leaf}"


@dataclass
class Template:
    """A file's tree as data: branches in file order, and where the template came from."""

    name: str
    tree: str
    entries: int
    compression: int  # ROOT's setting, e.g. 101 = zlib level 1
    branches: list[BranchModel]
    source: dict[str, Any] = field(default_factory=dict)  # file name, sha256, licence
    version: int = TEMPLATE_VERSION

    @property
    def tree_name(self) -> str:
        """The name generated files give the tree: the template's, at the file's top level."""
        return self.tree.rsplit("/", 1)[-1]

    @property
    def bytes_per_event(self) -> float:
        return sum(b.template_bytes_per_event for b in self.branches)

    def branch(self, name: str) -> BranchModel:
        return next(b for b in self.branches if b.name == name)

    def save(self, path: Path) -> None:
        """As compact JSON: floats kept to 7 significant digits (a float32's precision)."""
        path.write_text(json.dumps(_rounded(asdict(self)), separators=(",", ":")) + "\n")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.7g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def named_templates() -> list[str]:
    folder = resources.files("instore").joinpath("generate", "templates")
    return sorted(
        p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json")
    )


@functools.lru_cache(maxsize=8)
def load_template(like: str | Path) -> Template:
    """A template by name (shipped), from a template JSON, or derived from a ROOT file."""
    text = str(like)
    if text in named_templates():
        path = Path(
            str(resources.files("instore").joinpath("generate", "templates", f"{text}.json"))
        )
        return _from_json(path)
    path = Path(text)
    if not path.exists():
        raise InstoreError(
            f"no template named {text!r} and no such file",
            f"give a ROOT file or one of: {', '.join(named_templates())}",
        )
    return _from_json(path) if path.suffix == ".json" else derive(path)


def _from_json(path: Path) -> Template:
    try:
        data = json.loads(path.read_text())
        if data.get("version") != TEMPLATE_VERSION:
            raise InstoreError(
                f"{path}: template version {data.get('version')} is not {TEMPLATE_VERSION}",
                "derive it again with `instore generate --like FILE --save-template PATH`",
            )
        branches = [BranchModel(**b) for b in data.pop("branches")]
        return Template(branches=branches, **data)
    except (ValueError, TypeError, KeyError) as err:
        raise InstoreError(
            f"{path} is not an instore template ({err})",
            "derive one with `instore generate --like FILE.root --save-template PATH`",
        ) from err


# --- deriving ---------------------------------------------------------------------------------


def _find_tree(file: Any, tree: str | None) -> tuple[str, Any]:
    if tree:
        try:
            return tree, file[tree]
        except KeyError as err:
            raise InstoreError(f"{file.file_path} has no tree {tree!r}",
                               "list its trees with `instore inspect FILE`") from err  # fmt: skip
    trees = [k.split(";")[0] for k, c in file.classnames(recursive=True).items() if c == "TTree"]
    if not trees:
        raise InstoreError(
            f"{file.file_path} holds no TTree",
            "give a file with a TTree (an RNTuple template is not supported yet)",
        )
    biggest = max(trees, key=lambda t: file[t].num_entries)
    return biggest, file[biggest]


def _leaf_and_counter(branch: Any) -> tuple[str, str | None, int]:
    leaves = branch.member("fLeaves")
    if len(leaves) != 1 or branch.branches:
        raise InstoreError(
            f"branch {branch.name} is not a flat branch of numbers",
            "templates support NanoAOD-style flat trees (split objects are not supported yet)",
        )
    leaf = leaves[0]
    count = leaf.member("fLeafCount")
    interp = branch.interpretation
    dtype = getattr(interp, "from_dtype", None) or getattr(interp.content, "from_dtype", None)
    letter = _NUMPY_LEAF.get(np.dtype(dtype).str) if dtype is not None else None
    if letter is None:
        raise InstoreError(f"branch {branch.name} has a type templates cannot draw ({interp})",
                           "templates support numbers and bools, flat or jagged")  # fmt: skip
    return letter, (count.member("fName") if count is not None else None), int(leaf.member("fLen"))


def _significant_bits(values: np.ndarray) -> int:
    """The mantissa bits the template's floats keep (the most any value uses)."""
    v = values[np.isfinite(values) & (values != 0)]
    if v.dtype == np.float64:
        v = v.astype(np.float32)
    if v.size == 0:
        return 0
    mant = v.view(np.uint32) & 0x7FFFFF
    low = mant & (~mant + np.uint32(1))  # lowest set bit
    with np.errstate(divide="ignore"):
        trailing = np.where(mant == 0, 23, np.log2(np.maximum(low, 1)).astype(int))
    return int(23 - trailing.min())


def _value_model(model: BranchModel, values: np.ndarray) -> None:
    if values.size == 0:
        return
    values = values.astype(np.float64)
    if model.counter is None and model.width == 1 and values.size > 2 and model.leaf in "iIlL":
        steps = np.diff(values)
        if np.all(steps > 0) and len(np.unique(values)) == values.size:
            model.start = float(values[0])
            uniq, counts = np.unique(steps, return_counts=True)
            model.steps = [[float(s), c / steps.size] for s, c in zip(uniq, counts, strict=True)]
            return
    uniq, counts = np.unique(values, return_counts=True)
    frequent = counts / values.size >= FREQUENT
    if uniq.size <= MAX_ATOMS:
        frequent[:] = True
    model.atoms = [[float(v), c / values.size] for v, c in
                   zip(uniq[frequent], counts[frequent], strict=True)]  # fmt: skip
    rest = np.repeat(uniq[~frequent], counts[~frequent])
    if rest.size:
        model.quantiles = [float(q) for q in np.quantile(rest, np.linspace(0, 1, QUANTILES))]
    if model.leaf in "FD":
        model.mantissa_bits = _significant_bits(values)


def derive(path: Path, tree: str | None = None, name: str | None = None) -> Template:
    """A template from a ROOT file's TTree (the one named, else the one with most entries)."""
    import uproot

    try:
        file = uproot.open(path)
    except Exception as err:
        raise InstoreError(f"cannot open {path} as a ROOT file ({err})",
                           "give a ROOT file that ROOT or uproot can read") from err  # fmt: skip
    with file:
        tree_name, t = _find_tree(file, tree)
        branches = []
        for b in t.branches:
            leaf, counter, width = _leaf_and_counter(b)
            model = BranchModel(b.name, leaf, counter, 1 if counter else width)
            values = b.array(library="np")
            if counter:
                values = np.concatenate(values) if len(values) else np.zeros(0)
            _value_model(model, np.asarray(values).ravel())
            branches.append(model)
        counters = {b.counter for b in branches if b.counter}
        for b in branches:
            if b.name in counters and b.dtype.itemsize != 4:
                b.leaf = "i"  # the writer reads counters as 32-bit
        template = Template(
            name=name or path.stem,
            tree=tree_name,
            entries=int(t.num_entries),
            compression=_root_compression(file),
            branches=branches,
            source={"file": path.name, "sha256": _sha256(path)},
        )
    _measure_bytes(path, template)
    return template


def _root_compression(file: Any) -> int:
    c = file.file.compression
    algorithm = {"ZLIB": 1, "LZMA": 2, "LZ4": 4, "ZSTD": 5}.get(type(c).__name__, 1) if c else 0
    return algorithm * 100 + (c.level if c else 0)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _measure_bytes(path: Path, template: Template) -> None:
    """Each branch's compressed bytes per event, with every basket a key of its own (ROOT)."""
    from instore.rootenv import declare

    cpp = declare("generate_like")
    with tempfile.TemporaryDirectory(prefix="instore-template-") as tmp:
        out = Path(tmp) / "rewritten.root"
        n = cpp.rewrite(str(path), template.tree, str(out), template.compression)
        if n < 0:
            raise InstoreError(f"ROOT could not rewrite {path}'s tree (code {n})",
                               "check the file opens in ROOT and the temporary disk has room")  # fmt: skip
        per_branch = branch_bytes(out, template.tree_name)  # CloneTree writes it at the top
    for b in template.branches:
        b.template_bytes_per_event = per_branch.get(b.name, 0) / max(1, template.entries)


def branch_bytes(path: Path, tree: str) -> dict[str, int]:
    """Compressed bytes on disk per branch (its baskets' keys)."""
    import uproot

    with uproot.open(path) as f:
        return {b.name: int(b.compressed_bytes) for b in f[tree].branches}
