"""Execute a parameterised notebook with papermill and render it to self-contained HTML.

A notebook that raises makes the command fail with the failing cell's error (never an empty
report); the rendered page hides code and keeps figures and tables. A cell that does not finish
in ``CELL_TIMEOUT_S`` is taken for a kernel that stopped answering, and the notebook is run
again once, in a new kernel: ipykernel 7 can leave a request unread with the kernel idle and the
client waiting for ever (ipython/ipykernel#1554). This project's CI met it once, on 2026-11-28
(the explorer notebook, kernel and client both idle in epoll for 9 minutes); a study that
executes some 50 notebooks would have hung with it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from instore.errors import InstoreError

KERNEL = "python3"
# A report's cells take seconds (the slowest, a site's What-if grid, about ten on this VM).
CELL_TIMEOUT_S = 180.0
ATTEMPTS = 2
log = logging.getLogger(__name__)
# Keeps a rendered page free of anything fetched at view time (it must open offline).
_REMOTE = re.compile(r'<script[^>]+src="https?://[^"]*"[^>]*>\s*</script>', re.IGNORECASE)


def execute(
    notebook: Path,
    out: Path,
    parameters: Mapping[str, Any],
    cell_timeout_s: float = CELL_TIMEOUT_S,
) -> Path:
    """Run ``notebook`` with ``parameters`` into ``out``; a failing cell is an InstoreError, and
    so is a cell that does not finish within ``cell_timeout_s`` in each of ``ATTEMPTS`` kernels."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    if not notebook.is_file():
        raise InstoreError(f"{notebook}: no such notebook", "check the notebooks/ directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    # the one section notebook draws every section's page: say whose page it is
    name = notebook.name + (f" (section {parameters['section']})" if "section" in parameters
                            else "")  # fmt: skip
    for attempt in range(1, ATTEMPTS + 1):
        try:
            pm.execute_notebook(
                str(notebook), str(out), parameters=dict(parameters), kernel_name=KERNEL,
                progress_bar=False, log_output=False, execution_timeout=cell_timeout_s,
            )  # fmt: skip
            return out
        except PapermillExecutionError as err:
            raise InstoreError(
                f"{name} failed in cell {err.exec_count}: {err.ename}: {err.evalue}",
                f"see the executed notebook {out}",
            ) from err
        except TimeoutError as err:  # nbclient's CellTimeoutError: no reply from the kernel
            timed_out = err
            if attempt < ATTEMPTS:
                log.warning("%s: a cell did not finish within %g s (a kernel that stopped "
                            "answering: ipython/ipykernel#1554); executing it again in a new "
                            "kernel", name, cell_timeout_s)  # fmt: skip
    raise InstoreError(
        f"{name}: a cell did not finish within {cell_timeout_s:g} s in {ATTEMPTS} kernels",
        f"see the executed notebook {out}; run it in JupyterLab (make lab) to see which cell "
        "is slow",
    ) from timed_out


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
