"""Execute a parameterised notebook with papermill and render it to self-contained HTML.

A notebook that raises makes the command fail with the failing cell's error (never an empty
report); the rendered page hides code and keeps figures and tables. A cell that does not finish
in ``CELL_TIMEOUT_S`` is taken for a kernel that stopped answering, and the notebook is run
again once, in a new kernel: ipykernel 7 can leave a request unread with the kernel idle and the
client waiting for ever (ipython/ipykernel#1554). This project's CI met it once, on 2026-11-28
(the explorer notebook, kernel and client both idle in epoll for 9 minutes); a study that
executes some 50 notebooks would have hung with it.

Kernels talk to papermill over Unix sockets named for each kernel, not TCP: jupyter_client
finds a free port by binding and closing it, and the kernel binds it a moment later, so any
process's outgoing connection can take it in between. The CI of 7343e93 lost a whole report
that way (2026-11-29: "Kernel died before replying to kernel_info" as notebooks ran side by
side beside the tests' downloads), and the pipeline runs report notebooks side by side too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from instore.errors import InstoreError

if TYPE_CHECKING:
    from jupyter_client import AsyncKernelManager

KERNEL = "python3"
# A report's cells take seconds (the slowest, a site's What-if grid, about ten on this VM).
CELL_TIMEOUT_S = 180.0
ATTEMPTS = 2
log = logging.getLogger(__name__)
# Keeps a rendered page free of anything fetched at view time (it must open offline).
_REMOTE = re.compile(r'<script[^>]+src="https?://[^"]*"[^>]*>\s*</script>', re.IGNORECASE)


def unix_socket_kernels() -> type[AsyncKernelManager]:
    """nbclient's kernel manager, with the kernel's five channels on Unix sockets under the
    user's Jupyter runtime directory (private to them), named for the kernel alone."""
    import uuid

    from jupyter_client import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from traitlets import CaselessStrEnum

    class UnixSocketKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        def _ip_default(self) -> str:
            runtime = Path(jupyter_runtime_dir())
            runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
            return str(runtime / f"instore-{uuid.uuid4().hex[:12]}")  # then -1 .. -5

    return UnixSocketKernelManager


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
                kernel_manager_class=unix_socket_kernels(),
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
