"""Reading the project's configuration: parse, validate against a JSON schema, fail in one line.

Every config source (the study file, each site file, the Snakemake ``--config`` keys) goes
through here, so a mistake always gets the same kind of answer: where, the field, what is
wrong, and what to do. This is the only place that parses YAML.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from instore.errors import InstoreError

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMAS_DIR = REPO_ROOT / "workflow" / "schemas"
CONFIG_DIR = REPO_ROOT / "config"
# A schema may say what to do about a violation of the keywords beside it (e.g. a "not"
# whose meaning only the schema's author can phrase); it wins over the generic fix.
FIX_KEYWORD = "x-fix"


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS_DIR / f"{name}.schema.json").read_text())


def _parse(text: str) -> Any:
    """The one YAML parser: safe, plain data."""
    return yaml.safe_load(text)


def read_yaml(path: Path, what: str = "file", missing_fix: str = "check the path") -> Any:
    """Parse a YAML file; a missing file or bad syntax is one line with the line number.

    ``what`` names the kind of file and ``missing_fix`` the way out when it is absent (a site
    file lists the known sites), so each caller keeps its own helpful phrasing.
    """
    if not path.is_file():
        raise InstoreError(f"{path}: no such {what}", missing_fix)
    try:
        return _parse(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise InstoreError(f"{path}:{line} is not valid YAML", "fix the YAML syntax") from err


def yaml_value(text: str, where: str) -> Any:
    """One value given on a command line, read as YAML (as Snakemake reads ``--config``)."""
    try:
        return _parse(text)
    except yaml.YAMLError as err:
        raise InstoreError(
            f"{where}: {text!r} is not a valid value", "e.g. sites=[mysite]"
        ) from err


def unexpected_keys(error: jsonschema.ValidationError) -> list[str]:
    """The keys an ``additionalProperties: false`` refused (jsonschema only says it in prose)."""
    if not isinstance(error.instance, dict):
        return []
    known = error.schema.get("properties", {})
    patterns = [re.compile(p) for p in error.schema.get("patternProperties", {})]
    return [
        str(key)
        for key in error.instance
        if key not in known and not any(p.search(str(key)) for p in patterns)
    ]


def _unknown_key_fix(error: jsonschema.ValidationError) -> str:
    known = sorted(error.schema.get("properties", {}))
    guesses = [
        f"did you mean {close[0]}?"
        for key in unexpected_keys(error)
        if (close := difflib.get_close_matches(key, known, n=1))
    ]
    listed = f" (known: {', '.join(known)})" if known else ""
    return "; ".join(["remove or correct the unknown field", *guesses]) + listed


def fix_for(error: jsonschema.ValidationError, schema_name: str) -> str:
    """Turn a schema violation into something the user can do."""
    if isinstance(error.schema, dict) and FIX_KEYWORD in error.schema:
        return str(error.schema[FIX_KEYWORD])
    kind, value = error.validator, error.validator_value
    if kind == "additionalProperties":
        return _unknown_key_fix(error)
    fixes = {
        "oneOf": f"give {_alternatives(value)}",
        "anyOf": f"give {_alternatives(value)}",
        "required": f"add the missing field (see workflow/schemas/{schema_name}.schema.json)",
        "enum": f"use one of {', '.join(map(str, value)) if isinstance(value, list) else value}",
        "not": "remove the fields the schema forbids here",
        "pattern": f"make it match {value}",
        "type": f"give a value of type {value}",
        "minimum": f"give a value of at least {value}",
        "exclusiveMinimum": f"give a value greater than {value}",
        "maximum": f"give a value of at most {value}",
        "minItems": f"give at least {value} item(s)",
    }
    return fixes.get(kind, f"fix the value ({kind} {value!r})")


_ARTICLE = {"object": "an object", "array": "a list", "integer": "an integer"}


def _one_kind(sub: Any) -> str:
    """One alternative of a oneOf/anyOf in words: its type, bounds, values or required keys."""
    if not isinstance(sub, dict):
        return "a value"
    if "enum" in sub:
        return "one of " + ", ".join(map(str, sub["enum"]))
    types = sub.get("type", "value")
    kinds = [_ARTICLE.get(t, f"a {t}") for t in (types if isinstance(types, list) else [types])]
    words = " or ".join(kinds)
    if "minimum" in sub:
        words += f" of at least {sub['minimum']}"
    if sub.get("required"):
        words += " with " + ", ".join(sub["required"])
    return words


def _alternatives(subschemas: Any) -> str:
    """A oneOf/anyOf's alternatives in words, instead of the schema itself."""
    subs = subschemas if isinstance(subschemas, list) else []
    return "; or ".join(_one_kind(s) for s in subs) or "a value the schema allows"


def where(error: jsonschema.ValidationError) -> str:
    """The dotted field; for an unknown key, the key itself rather than its parent."""
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "additionalProperties":
        parts += unexpected_keys(error)[:1]
    return ".".join(parts) if parts else "(top level)"


def validate(data: Any, schema_name: str, source: Path | str) -> None:
    """Raise one InstoreError for the most relevant schema violation, naming source and field."""
    validator = jsonschema.Draft202012Validator(schema(schema_name))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise InstoreError(
            f"{source}: field {where(error)}: {error.message}", fix_for(error, schema_name)
        )
