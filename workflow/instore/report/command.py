"""``instore report`` (execute, render, index) and ``instore lab``.

The pipeline's report rules call these, one notebook or page per job; which notebooks run for
a site (the study's sections) is theirs to say (workflow/rules/reports.smk).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from instore.configfile import REPO_ROOT
from instore.report.execute import execute, render

NOTEBOOKS = REPO_ROOT / "notebooks"
# `instore report render` runs once per page of a study: it imports nbconvert only, not the
# pages' pandas (index) nor the lab's Jupyter (about a second each run, imported when used).


def parameter(text: str) -> tuple[str, Any]:
    """``key=value``; the value is read as JSON when it parses (lists, numbers), else a string."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"parameter {text!r} is not key=value")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="execute the report notebooks and render HTML")
    actions = p.add_subparsers(dest="report_command", metavar="ACTION", required=True)

    ex = actions.add_parser("execute", help="run a notebook with papermill parameters")
    ex.add_argument("notebook", type=Path)
    ex.add_argument("--out", type=Path, required=True, help="the executed notebook")
    ex.add_argument(
        "-p", "--parameter", type=parameter, action="append", default=[], metavar="KEY=VALUE"
    )
    ex.set_defaults(func=_execute)

    rd = actions.add_parser(
        "render", help="an executed notebook to self-contained HTML, code hidden"
    )
    rd.add_argument("executed", type=Path)
    rd.add_argument("--out", type=Path, required=True)
    rd.set_defaults(func=_render)

    idx = actions.add_parser("index", help="write reports/index.html over the named sites")
    idx.add_argument("--sites", required=True, help="comma-separated site names")
    idx.add_argument("--results", type=Path, default=Path("results"), help="default: results")
    idx.add_argument("--reports", type=Path, default=Path("reports"), help="default: reports")
    idx.set_defaults(func=_index)

    lab = subparsers.add_parser(
        "lab", help="JupyterLab on notebooks/explore.ipynb, on 127.0.0.1 with a token"
    )
    lab.add_argument("--port", type=int, default=8888)
    lab.set_defaults(func=_lab)


def _execute(args: argparse.Namespace) -> int:
    execute(args.notebook, args.out, dict(args.parameter))
    print(f"instore report: executed {args.notebook} -> {args.out}")
    return 0


def _render(args: argparse.Namespace) -> int:
    render(args.executed, args.out)
    print(f"instore report: rendered {args.out}")
    return 0


def _lab(args: argparse.Namespace) -> int:
    from instore.report.lab import EXPLORER, run_lab

    return run_lab(EXPLORER, args.port)


def _index(args: argparse.Namespace) -> int:
    from instore.report.pages import write_index

    sites = [s for s in args.sites.split(",") if s]
    out = write_index(args.results, args.reports, sites)
    print(f"instore report: index -> {out}")
    return 0
