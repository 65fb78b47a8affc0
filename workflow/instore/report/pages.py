"""``reports/index.html``: every site's report and the comparison, with the conditions and
provenance of the runs behind them, all read from the sites' Parquet records."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from instore.report.sections import TITLES
from instore.summary.load import read_site, sections_present

STYLE = (
    "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
)


def _json(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else {}


def _distinct(values: Iterable[Any]) -> str:
    found = sorted({str(v) for v in values if v is not None and v == v})
    return ", ".join(found) if found else "none"


def site_facts(rows: pd.DataFrame) -> dict[str, str]:
    """Conditions and provenance of a site's runs, as label -> text."""
    latest = rows.sort_values("start_time").iloc[-1]
    cond = _json(latest["conditions"])
    prov = [_json(p) for p in rows["provenance"]]
    versions = {k: v for p in prov for k, v in (p.get("versions") or {}).items() if v}
    return {
        "kind / storage": f"{latest['site_kind']} / {latest['site_profile']}",
        "description": str(cond.get("description", "")),
        "emulation": json.dumps(cond.get("emulation") or {}, sort_keys=True),
        "calibration": json.dumps(cond.get("calibration"), sort_keys=True),
        "jobs": f"{(rows['status'] == 'ok').sum()} ok, {(rows['status'] != 'ok').sum()} failed",
        "measured": f"{rows['start_time'].min()} to {rows['start_time'].max()}",
        "hosts / kernels": f"{_distinct(p.get('host') for p in prov)} / {_distinct(p.get('kernel') for p in prov)}",
        "software": ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "runtime / image": f"{_distinct(rows.get('runtime', []))} / {_distinct(rows.get('image_digest', []))}",
    }


def _site_block(results: Path, site: str) -> str:
    rows = read_site(results, site)
    links = " | ".join(
        f'<a href="{site}/{s}.html">{html.escape(TITLES[s])}</a>'
        for s in sections_present(results, site)
    )
    facts = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in site_facts(rows).items()
    )
    return (
        f'<h2 id="site-{html.escape(site)}"><a href="{site}/index.html">{html.escape(site)}</a></h2>'
        f"<p>{links}</p><table>{facts}</table>"
    )


def index_html(results: Path, sites: list[str], compare: bool) -> str:
    blocks = "".join(_site_block(results, s) for s in sites)
    comparison = (
        '<p><a href="compare.html">Comparison of all sites on the same work</a></p>'
        if compare
        else ""
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>instore study</title>"
        f"<style>{STYLE}</style></head><body><h1>instore study</h1>{comparison}{blocks}</body></html>\n"
    )


def write_index(results: Path, reports: Path, sites: list[str]) -> Path:
    out = reports / "index.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(index_html(results, sites, (reports / "compare.html").is_file()))
    return out
