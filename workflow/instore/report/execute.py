"""Execute a parameterised notebook with papermill and render it to self-contained HTML.

A notebook that raises makes the command fail with the failing cell's error (never an empty
report); the rendered page hides code and keeps figures and tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from instore.errors import InstoreError

KERNEL = "python3"
# Keeps a rendered page free of anything fetched at view time (it must open offline).
_REMOTE = re.compile(r'<script[^>]+src="https?://[^"]*"[^>]*>\s*</script>', re.IGNORECASE)


def execute(notebook: Path, out: Path, parameters: Mapping[str, Any]) -> Path:
    """Run ``notebook`` with ``parameters`` into ``out``; a failing cell is an InstoreError."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    if not notebook.is_file():
        raise InstoreError(f"{notebook}: no such notebook", "check the notebooks/ directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        pm.execute_notebook(
            str(notebook), str(out), parameters=dict(parameters), kernel_name=KERNEL,
            progress_bar=False, log_output=False,
        )  # fmt: skip
    except PapermillExecutionError as err:
        # the one section notebook draws every section's page: say whose page failed
        name = notebook.name + (f" (section {parameters['section']})" if "section" in parameters
                                else "")  # fmt: skip
        raise InstoreError(
            f"{name} failed in cell {err.exec_count}: {err.ename}: {err.evalue}",
            f"see the executed notebook {out}",
        ) from err
    return out


def render(executed: Path, out: Path) -> Path:
    """HTML with inputs and prompts hidden; images are inline, no remote scripts remain."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    nb = nbformat.read(executed, as_version=4)
    body, _ = exporter.from_notebook_node(nb)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_REMOTE.sub("", body))
    return out


def error_outputs(executed: Path) -> list[str]:
    """Error outputs left in an executed notebook (papermill stops at the first one)."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    return [
        f"{o.get('ename')}: {o.get('evalue')}"
        for cell in nb.cells
        for o in cell.get("outputs", [])
        if o.get("output_type") == "error"
    ]
