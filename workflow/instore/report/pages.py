"""``reports/index.html``: each site's headline first (its best and worst setup, its
recommendations), then the conditions as a short table (the full JSON one click away) and the
provenance of the runs; all read from the sites' records and summaries."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from instore.report import intervals
from instore.report.compare import best_and_worst
from instore.report.conditions import conditions_html, prevailing
from instore.summary.command import recommendations_path, summary_path
from instore.summary.load import read_site, sections_present
from instore.summary.sections import title

STYLE = (
    "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}"
    "th{background:#f4f4f4;white-space:nowrap}section.instore-site{margin-bottom:2.5em}"
    ".instore-headline li{margin:.2em 0}details{margin:.5em 0}summary{cursor:pointer;color:#555}"
    "pre{background:#f8f8f8;padding:.5em;overflow-x:auto;font-size:85%}"
)


def _json(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else {}


def _distinct(values: Iterable[Any]) -> str:
    found = sorted({str(v) for v in values if v is not None and v == v})
    return ", ".join(found) if found else "none"


def site_facts(rows: pd.DataFrame) -> dict[str, str]:
    """Provenance of a site's runs, as label -> text (the conditions have their own table)."""
    prov = [_json(p) for p in rows["provenance"]]
    versions = {k: v for p in prov for k, v in (p.get("versions") or {}).items() if v}
    releases = {p.get("root_version") for p in prov if p.get("root_version")}
    if releases:  # the `root` wheel's own version says little; the ROOT release says what ran
        versions["root"] = f"{versions.get('root', '?')} (ROOT {', '.join(sorted(releases))})"
    return {
        "jobs": f"{(rows['status'] == 'ok').sum()} ok, {(rows['status'] != 'ok').sum()} failed",
        "measured": f"{rows['start_time'].min()} to {rows['start_time'].max()}",
        "hosts / kernels": f"{_distinct(p.get('host') for p in prov)} / {_distinct(p.get('kernel') for p in prov)}",
        "software": ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "runtime / image": f"{_distinct(rows.get('runtime', []))} / {_distinct(rows.get('image_digest', []))}",
        # http(s) was read with these clients (not a site's Davix unless it says XrdClHttp)
        "HTTP clients": _distinct(c for c in rows.get("http_client", []) if c != "n/a"),
        "worker's own names": _own_names(rows),
    }


def _own_names(rows: pd.DataFrame) -> str:
    """Where the XRootD client's lookups of the worker's own addresses were answered."""
    named = rows.get("own_names_in_hosts", pd.Series(dtype=object)).fillna(False).astype(bool)
    if named.all() and len(named):
        return "the container's hosts file (no DNS query per open)"
    if not named.any():
        return "the worker's resolver (DNS: a burst of opens can wait on it)"
    return f"the container's hosts file for {named.sum()} of {len(named)} jobs, else DNS"


def _setup(label: str, row: pd.Series) -> str:
    """``Best setup: xrootd (85% [82%, 88%] CPU efficiency, 1,204 [1,150, 1,260] events/s per
    job)``: each figure the median with its 95% interval, as on the site's pages."""
    eff = intervals.text(intervals.of(row, "cpu_efficiency"), percent=True)
    rate = intervals.text(intervals.of(row, "event_rate_hz"))
    rate_text = f", {rate} events/s per job" if rate else ""
    return (
        f"<li><b>{label}:</b> {html.escape(str(row['protocol']))} "
        f"({html.escape(eff)} CPU efficiency{html.escape(rate_text)})</li>"
    )


def headline(results: Path, site: str) -> str:
    """Best and worst setup on the same work, then the site's recommendations, linked."""
    items = []
    if summary_path(results, site).is_file():
        ends = best_and_worst(pd.read_parquet(summary_path(results, site)))
        if ends is not None:
            items += [_setup("Best setup", ends[0]), _setup("Worst setup", ends[1])]
    if not items:
        items.append("<li>No protocol comparison measured yet.</li>")
    recs = []
    if recommendations_path(results, site).is_file():
        recs = json.loads(recommendations_path(results, site).read_text())
    advice = "".join(
        f'<li>{html.escape(r["text"])} <a href="{site}/{html.escape(r["figure"])}">(evidence)</a></li>'
        for r in recs
    )
    advice = f"<ol>{advice}</ol>" if advice else "<p>No recommendation yet.</p>"
    return (
        f'<ul class="instore-headline">{"".join(items)}</ul><p><b>Recommendations</b></p>{advice}'
    )


def _site_block(results: Path, site: str) -> str:
    rows = read_site(results, site)
    cond, changed = prevailing(rows)
    name = html.escape(site)
    links = " | ".join(
        f'<a href="{site}/{s}.html">{html.escape(title(s))}</a>'
        for s in sections_present(results, site)
    )
    facts = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in site_facts(rows).items()
    )
    description = html.escape(str(cond.get("description") or ""))
    return (
        f'<section class="instore-site"><h2 id="site-{name}"><a href="{site}/index.html">{name}</a></h2>'
        f"<p>{description}</p>{headline(results, site)}<p>Sections: {links}</p>"
        f"<h3>Conditions</h3>{conditions_html(cond, changed)}"
        f'<h3>Runs</h3><table class="instore-runs">{facts}</table></section>'
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
        f"<style>{STYLE}</style></head><body><h1>instore study</h1>{comparison}"
        f"<p>{html.escape(intervals.SENTENCE)}</p>{blocks}</body></html>\n"
    )


def write_index(results: Path, reports: Path, sites: list[str]) -> Path:
    out = reports / "index.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(index_html(results, sites, (reports / "compare.html").is_file()))
    return out
