"""``instore report`` (execute, render, site, index) and ``instore lab``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from instore.configfile import REPO_ROOT
from instore.errors import InstoreError
from instore.report.execute import execute, render
from instore.report.lab import EXPLORER, run_lab
from instore.report.pages import write_index
from instore.summary.load import sections_present

NOTEBOOKS = REPO_ROOT / "notebooks"


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

    site = actions.add_parser(
        "site", help="execute and render every section notebook and the overview for one site"
    )
    site.add_argument("--site", required=True)
    _add_dirs(site)
    site.set_defaults(func=_site)

    cmp = actions.add_parser("compare", help="the cross-site comparison page, reports/compare.html")
    cmp.add_argument(
        "--sites", default="", help="comma-separated (default: every site with results)"
    )
    _add_dirs(cmp)
    cmp.set_defaults(func=_compare)

    idx = actions.add_parser("index", help="write reports/index.html over the named sites")
    idx.add_argument("--sites", required=True, help="comma-separated site names")
    _add_dirs(idx)
    idx.set_defaults(func=_index)

    lab = subparsers.add_parser(
        "lab", help="JupyterLab on notebooks/explore.ipynb, on 127.0.0.1 with a token"
    )
    lab.add_argument("--port", type=int, default=8888)
    lab.set_defaults(func=lambda args: run_lab(EXPLORER, args.port))


def _add_dirs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", type=Path, default=Path("results"), help="default: results")
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="default: reports")
    parser.add_argument("--data", type=Path, default=Path("data/files"), help="default: data/files")


def _execute(args: argparse.Namespace) -> int:
    execute(args.notebook, args.out, dict(args.parameter))
    print(f"instore report: executed {args.notebook} -> {args.out}")
    return 0


def _render(args: argparse.Namespace) -> int:
    render(args.executed, args.out)
    print(f"instore report: rendered {args.out}")
    return 0


def page_name(notebook: str) -> str:
    """A site's overview is its index page; every other notebook keeps its name."""
    return "index" if notebook == "overview" else notebook


def site_parameters(site: str, results: Path, data: Path) -> dict[str, Any]:
    return {"site": site, "results": str(results.resolve()), "data": str(data.resolve())}


def report_site(site: str, results: Path, reports: Path, data: Path) -> Path:
    """Every section notebook the site has records for, then its overview (index.html)."""
    sections = sections_present(results, site)
    if not sections:
        raise InstoreError(
            f"{results / site}: no section records", f"run instore sweep --site {site}"
        )
    params = site_parameters(site, results, data)
    for name in [*sections, "overview"]:
        executed = execute(NOTEBOOKS / f"{name}.ipynb", reports / site / f"{name}.ipynb", params)
        render(executed, reports / site / f"{page_name(name)}.html")
    return reports / site / "index.html"


def _site(args: argparse.Namespace) -> int:
    out = report_site(args.site, args.results, args.reports, args.data)
    print(f"instore report: {args.site} -> {out}")
    return 0


def report_compare(sites: list[str], results: Path, reports: Path) -> Path:
    """Execute and render the comparison notebook over ``sites`` (all when empty)."""
    params = {"sites": sites, "results": str(results.resolve())}
    executed = execute(NOTEBOOKS / "compare.ipynb", reports / "compare.ipynb", params)
    return render(executed, reports / "compare.html")


def _compare(args: argparse.Namespace) -> int:
    sites = [s for s in args.sites.split(",") if s]
    print(f"instore report: compare -> {report_compare(sites, args.results, args.reports)}")
    return 0


def _index(args: argparse.Namespace) -> int:
    sites = [s for s in args.sites.split(",") if s]
    out = write_index(args.results, args.reports, sites)
    print(f"instore report: index -> {out}")
    return 0
