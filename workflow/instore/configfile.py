"""Reading the project's YAML files: parse, validate against a JSON schema, fail in one line.

Every config file (the study, each site) goes through here, so a malformed file always gets
the same kind of answer: the file, the field, what is wrong, and what to do.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from instore.errors import InstoreError

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMAS_DIR = REPO_ROOT / "workflow" / "schemas"
CONFIG_DIR = REPO_ROOT / "config"


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS_DIR / f"{name}.schema.json").read_text())


def read_yaml(path: Path) -> Any:
    """Parse a YAML file; a missing file or bad syntax is one line with the line number."""
    if not path.is_file():
        raise InstoreError(f"{path}: no such file", "check the path")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise InstoreError(f"{path}:{line} is not valid YAML", "fix the YAML syntax") from err


def fix_for(error: jsonschema.ValidationError, schema_name: str) -> str:
    """Turn a schema violation into something the user can do."""
    kind, value = error.validator, error.validator_value
    fixes = {
        "required": f"add the missing field (see workflow/schemas/{schema_name}.schema.json)",
        "enum": f"use one of {', '.join(map(str, value)) if isinstance(value, list) else value}",
        "additionalProperties": "remove or correct the unknown field",
        "pattern": f"make it match {value}",
        "type": f"give a value of type {value}",
        "minimum": f"give a value of at least {value}",
        "exclusiveMinimum": f"give a value greater than {value}",
        "maximum": f"give a value of at most {value}",
        "minItems": f"give at least {value} item(s)",
    }
    return fixes.get(kind, f"fix the value ({kind} {value!r})")


def where(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def validate(data: Any, schema_name: str, path: Path) -> None:
    """Raise one InstoreError for the most relevant schema violation, naming file and field."""
    validator = jsonschema.Draft202012Validator(schema(schema_name))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise InstoreError(
            f"{path}: field {where(error)}: {error.message}", fix_for(error, schema_name)
        )
