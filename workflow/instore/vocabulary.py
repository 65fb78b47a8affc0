"""The study's vocabularies, each listed once: file layouts, access protocols, engines, auth
kinds, container runtimes and study sections. Code takes them from here (``generate.layouts``,
``site.config``, ``engines``, ``credentials``, ``container.runtime``, ``study``) and the
JSON schemas under ``workflow/schemas`` are generated from them: ``python -m
instore.vocabulary`` writes every enum (and the study's section keys) in place, and
tests/unit/test_vocabulary.py pins that the schemas and the code registries agree.

Why the schemas are generated from the code, not read by it: the payload image ships the
``instore`` package alone (containers/Containerfile), without ``workflow/schemas``, and code
that runs in a job (the engines, the runtime) needs these names; the schemas stay plain JSON
files, which the validator, the generated reference page and editors read as they are. This
module imports nothing of instore, so anything may import it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

TTREE_LAYOUTS: tuple[str, ...] = ("unordered", "by-branch", "ordered")
RNTUPLE_LAYOUTS: tuple[str, ...] = ("rntuple", "rntuple-small", "rntuple-matched")
LAYOUTS: tuple[str, ...] = TTREE_LAYOUTS + RNTUPLE_LAYOUTS
FORMATS: tuple[str, ...] = ("ttree", "rntuple")  # what a job reads (records' ``format``)
TTREE, RNTUPLE = FORMATS
PROTOCOLS: tuple[str, ...] = ("posix", "stage-in", "xrootd", "http", "fuse", "xcache")
ENGINES: tuple[str, ...] = ("root", "uproot", "replay")  # instore.payload.specs: a spec for each
AUTH_KINDS: tuple[str, ...] = ("x509", "token", "none")
# What a site lets the study change or use (a section's `needs:`; instore.site.config says
# which site can what): its link's RTT and bandwidth, its disk's block readahead, I/O scheduler
# and file system, an XCache, and emptying that XCache.
CAPABILITIES: tuple[str, ...] = (
    "link", "block_readahead", "io_scheduler", "filesystem", "xcache", "cold_cache",
)  # fmt: skip
RUNTIMES: tuple[str, ...] = ("podman", "apptainer", "none")
AUTO_RUNTIME = "auto"  # a runtime setting, not a runtime: the first one found
RUNTIME_SETTINGS: tuple[str, ...] = (AUTO_RUNTIME, *RUNTIMES)
SECTIONS: tuple[str, ...] = (
    "layout", "cache", "protocols", "readahead", "jobfill", "format", "caching", "scale", "replay",
    "load", "scheduler", "filesystem",
)  # fmt: skip
# The parts sections play for the code below the report (a section's page is its own module's,
# instore.summary.sections.<name>): the sections whose payload jobs the model is fitted on, the
# one whose grid names what each engine reads, those whose points replay a recorded analysis,
# those whose points are a ramp of clients, and the one whose RTTs and links the fit never saw.
PAYLOAD_FIT_SECTIONS: tuple[str, ...] = ("layout", "cache", "protocols", "readahead", "jobfill")
FORMAT_SECTION = "format"
TRACE_SECTIONS: tuple[str, ...] = ("replay", "load")
RAMP_SECTIONS: tuple[str, ...] = ("load",)
HELD_OUT_SECTION = "caching"

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"
SECTION_GRID = {"$ref": "#/$defs/grid"}
# Where each vocabulary stands in the schemas: (schema, JSON pointer to the enum, values).
ENUMS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("study", "/$defs/grid/properties/layout/items/enum", LAYOUTS),
    ("study", "/$defs/profile/properties/traces/additionalProperties/properties/layout/enum",
     TTREE_LAYOUTS),
    ("study", "/$defs/grid/properties/protocol/items/enum", PROTOCOLS),
    ("study", "/$defs/grid/properties/engine/items/enum", ENGINES),
    ("study", "/$defs/grid/properties/needs/items/enum", CAPABILITIES),
    ("site", "/$defs/protocol/enum", PROTOCOLS),
    ("site", "/properties/auth/enum", AUTH_KINDS),
    ("config", "/properties/runtime/enum", RUNTIME_SETTINGS),
)  # fmt: skip
SECTIONS_POINTER = "/$defs/profile/properties/sections/properties"  # study: a key per section


def schema_path(name: str) -> Path:
    return SCHEMAS_DIR / f"{name}.schema.json"


def at(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer (RFC 6901: ``~1`` is ``/``, ``~0`` is ``~``)."""
    for part in pointer.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


def disagreements() -> list[str]:
    """Where the schemas say otherwise than this module, one line each (empty: they agree)."""
    found = []
    for name, pointer, values in ENUMS:
        written = at(json.loads(schema_path(name).read_text()), pointer)
        if tuple(written) != values:
            found.append(f"{name}.schema.json {pointer}: {written}, the code: {list(values)}")
    sections = at(json.loads(schema_path("study").read_text()), SECTIONS_POINTER)
    if tuple(sections) != SECTIONS or any(v != SECTION_GRID for v in sections.values()):
        found.append(f"study.schema.json {SECTIONS_POINTER}: {list(sections)}, the code: "
                     f"{list(SECTIONS)}")  # fmt: skip
    return found


def _section_lines(text: str) -> str:
    """The study schema with its sections' keys written from SECTIONS (indent kept)."""
    block = re.compile(r'(?P<indent>[ ]*)"\w+": \{"\$ref": "#/\$defs/grid"\}(,\n)?'
                       r'(?:(?P=indent)"\w+": \{"\$ref": "#/\$defs/grid"\},?\n?)*')  # fmt: skip
    match = block.search(text)
    if match is None:
        raise ValueError("study.schema.json: no block of section keys to write")
    indent, ref = match["indent"], json.dumps(SECTION_GRID)
    lines = ",\n".join(f'{indent}"{s}": {ref}' for s in SECTIONS)
    tail = "\n" if match.group(0).endswith("\n") else ""
    return text[: match.start()] + lines + tail + text[match.end() :]


def write_schemas() -> list[Path]:
    """Write every vocabulary into the schemas, keeping their layout; the files changed."""
    changed = []
    for name in dict.fromkeys(n for n, _, _ in ENUMS):
        path = schema_path(name)
        text = before = path.read_text()
        for schema, pointer, values in ENUMS:
            if schema != name:
                continue
            old = json.dumps(at(json.loads(text), pointer))
            text = text.replace(f'"enum": {old}', f'"enum": {json.dumps(list(values))}')
        if name == "study":
            text = _section_lines(text)
        if text != before:
            path.write_text(text)
            changed.append(path)
    if disagreements():
        raise ValueError("; ".join(disagreements()))
    return changed


if __name__ == "__main__":
    for written in write_schemas():
        print(f"wrote {written}", file=sys.stderr)
