"""A rendered site report, opened in headless Chromium: figures load, tables show, no errors.

The page is checked in the browser itself: a small script appended to a copy of each page
counts images that failed to decode, error/stderr outputs, tables, the conditions table and
raw JSON visible outside a collapsed <details>, and Chromium's ``--dump-dom`` hands the
counts back; screenshots prove the pages paint. The reports are made the way the pipeline's
rules make them: ``instore report execute`` and ``render`` per notebook, then ``index``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from instore.cli import main
from instore.report.command import NOTEBOOKS
from instore.report.execute import execute, render
from instore.study import SECTIONS
from instore.summary.command import summarize, write

from tests.cli import Cli
from tests.unit.data.records import SITES, rows, write_calibration, write_results

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
PROBE = r"""<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).length;
  const errors = document.querySelectorAll(
    '[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output.jp-RenderedText[data-mime-type*="error"]').length;
  const tables = document.querySelectorAll("table").length;
  const conditions = document.querySelectorAll("table.instore-conditions").length;
  const shown = document.body.cloneNode(true);
  shown.querySelectorAll("details, script, style").forEach(e => e.remove());
  const rawJson = (shown.textContent.match(/[{]\s*"[^"]*"\s*:/g) || []).length;
  const openDetails = document.querySelectorAll("details[open]").length;
  const out = document.createElement("pre");
  out.id = "instore-probe";
  out.textContent = `images=${imgs.length} broken=${broken} errors=${errors} tables=${tables} ` +
    `conditions=${conditions} raw_json=${rawJson} open_details=${openDetails}`;
  document.body.appendChild(out);
});
</script>"""


def _chromium(profile: Path, *args: str) -> str:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout


def probe(page: Path, profile: Path) -> dict[str, int]:
    """Load a copy of ``page`` with the probe script and read back its counts."""
    probed = page.with_name(f".probe-{page.name}")
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = _chromium(profile, "--virtual-time-budget=5000", "--dump-dom", probed.as_uri())
    found = re.search(r"images=(\d+) broken=(\d+) errors=(\d+) tables=(\d+) "
                      r"conditions=(\d+) raw_json=(\d+) open_details=(\d+)", dom)  # fmt: skip
    assert found, "the probe did not run in the page"
    names = ("images", "broken", "errors", "tables", "conditions", "raw_json", "open_details")
    return dict(zip(names, map(int, found.groups()), strict=True))


# An emulated site's conditions as the sweep records them, and its calibration: what the
# index and the overview must show as a short table rather than as JSON.
EMULATED = {
    "kind": "emulated", "profile": "lan-hdd", "description": "A LAN site on one SATA spindle.",
    "workers": {"nodes": 1, "cores": 2}, "protocols": ["posix", "xrootd", "http"],
    "emulation": {
        "network": {"bandwidth_mbit": 1000, "rtt_ms_target": 0.5, "rtt_ms_bare": 0.04,
                    "rtt_ms_measured": 0.52, "delay_hold_ms": 0.46},
        "disk": {"size_mb": 1024, "filesystem": "ext4", "readahead_kb": 128, "read_iops": 150,
                 "read_mbps": 120},
    },
}  # fmt: skip
CALIBRATION = {
    "rtt_ms": 0.52, "measured_at": "2025-01-01T00:00:00Z",
    "fio": {"seq_read_mb_per_s": 118.0, "rand_read_iops": 149.0},
    "protocols": {"xrootd": {"mb_per_s": 110.0}, "http": {"mb_per_s": 104.0}},
}  # fmt: skip


def _results(root: Path) -> Path:
    """The fixture's records, the first site recorded as emulated and calibrated."""
    records = rows()
    first = records["site"] == SITES[0]
    conditions = {**EMULATED, "site": SITES[0], "calibration": CALIBRATION}
    records.loc[first, "conditions"] = json.dumps(conditions)
    results = write_results(root / "results", records)
    write_calibration(results, SITES[0], CALIBRATION)
    for site in SITES:
        write(results, site, *summarize(results, site))
    return results


def _make_reports(cli: Cli, results: Path, out: Path, data: Path) -> None:
    """What the report rules run: every section notebook and the overview (the site's
    index.html), the comparison, then the index page."""
    site = SITES[0]
    params = ["-p", f"site={site}", "-p", f"results={results}", "-p", f"data={data}"]
    # the sections the site has records of, as the pipeline runs only those (SECTIONS_RUN)
    measured = [name for name in SECTIONS if (results / site / f"{name}.parquet").is_file()]
    jobs = [(name, out / site / name, params) for name in measured]
    jobs.append(("compare", out / "compare", ["-p", "sites=[]", "-p", f"results={results}"]))

    def make(name: str, stem: Path, parameters: list[str]) -> None:
        executed = stem.with_suffix(".ipynb")
        page = stem.with_name("index.html" if name == "overview" else f"{name}.html")
        notebook, section = (
            ("section", ["-p", f"section={name}"]) if name in SECTIONS else (name, [])
        )
        for argv in (["execute", str(NOTEBOOKS / f"{notebook}.ipynb"), "--out", str(executed),
                      *parameters, *section], ["render", str(executed), "--out", str(page)]):  # fmt: skip
            done = cli("report", *argv, timeout=None)
            assert done.returncode == 0, done.stderr[-2000:]

    # two at a time, as `snakemake --cores 2` runs them (each in a kernel of its own); the
    # overview last, since it links to the section pages
    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(make, *job) for job in jobs]:
            done.result()
    make("overview", out / site / "overview", params)
    index = ["report", "index", "--sites", site, "--results", str(results)]
    assert main([*index, "--reports", str(out)]) == 0


@pytest.fixture(scope="module")
def reports(
    tmp_path_factory: pytest.TempPathFactory, small_files: dict[str, Path], cli: Cli
) -> Path:
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (make system)")
    root = tmp_path_factory.mktemp("browser")
    out = root / "reports"
    _make_reports(cli, _results(root), out, small_files["ordered"].parent)
    return out


@pytest.mark.parametrize(
    ("page", "images", "tables"),
    [
        ("index.html", 0, 2),  # the site overview: runs per section, conditions
        ("cache.html", 1, 1),
        ("protocols.html", 1, 1),
        ("jobfill.html", 1, 1),
        ("readahead.html", 1, 1),
        ("layout.html", 2, 1),  # the access map and the wall/disk times
    ],
)
def test_site_pages_render_without_broken_images_or_errors(
    reports: Path, tmp_path: Path, page: str, images: int, tables: int
) -> None:
    counts = probe(reports / SITES[0] / page, tmp_path / "profile")
    overview = page == "index.html"
    assert counts == {"images": images, "broken": 0, "errors": 0, "tables": tables,
                      "conditions": int(overview), "raw_json": 0, "open_details": 0}  # fmt: skip


def test_comparison_and_index_pages(reports: Path, tmp_path: Path) -> None:
    compare = probe(reports / "compare.html", tmp_path / "profile")
    assert compare["images"] >= 1 and compare["broken"] == 0 and compare["errors"] == 0
    assert compare["tables"] >= 2
    index = probe(reports / "index.html", tmp_path / "profile")
    assert index["tables"] == 2 and index["errors"] == 0  # conditions, runs


def test_index_leads_with_the_headline_and_shows_conditions_not_json(
    reports: Path, tmp_path: Path
) -> None:
    """A site admin's first screen: best and worst setup, the advice, then the conditions as a
    short table with units; the recorded JSON only inside a collapsed <details>."""
    import matplotlib.image as mpimg

    page = reports / "index.html"
    counts = probe(page, tmp_path / "profile")
    assert counts["conditions"] == 1 and counts["raw_json"] == 0 and counts["open_details"] == 0
    text = page.read_text()
    order = [text.index(s) for s in ("Best setup", "Worst setup", "Recommendations", "Conditions")]
    assert order == sorted(order)
    for shown in ("1,000 Mbit/s", "0.5 ms round trip", "measured 0.52 ms", "150 random-read IOPS",
                  "118 MB/s disk (fio sequential)", "1 node(s) x 2 cores"):  # fmt: skip
        assert shown in text, shown
    assert '"rtt_ms_bare": 0.04' in html.unescape(text.split("<details>")[1])  # one click away
    shot = tmp_path / "index.png"
    _chromium(
        tmp_path / "profile", "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri()
    )
    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (1600, 1280) and pixels.std() > 0.01


def test_probe_sees_raw_json_outside_details(tmp_path: Path) -> None:
    """The JSON check can fail: a dict printed in the page is counted, one in <details> is not."""
    page = tmp_path / "json.html"
    page.write_text(
        '<html><body><p>{"rtt_ms": 1}</p><details><pre>{"a": 1}</pre></details></body></html>'
    )
    assert probe(page, tmp_path / "profile")["raw_json"] == 1


def test_screenshot_of_the_overview_is_painted(reports: Path, tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    shot = tmp_path / "overview.png"
    _chromium(tmp_path / "profile", "--window-size=1280,2000", f"--screenshot={shot}",
              (reports / SITES[0] / "index.html").as_uri())  # fmt: skip
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] == 2000 and pixels.shape[1] == 1280
    assert pixels.std() > 0.01  # not a blank page
    links = re.findall(
        r'href="([a-z]+)\.html#(fig-[a-z-]+)"', (reports / SITES[0] / "index.html").read_text()
    )
    assert links, "the overview links no figure"
    for page, anchor in links:
        assert f'id="{anchor}"' in (reports / SITES[0] / f"{page}.html").read_text()


def test_probe_sees_broken_images_and_error_cells(reports: Path, tmp_path: Path) -> None:
    """The checks above can fail: a broken image and a failed cell are both counted."""
    broken = tmp_path / "broken.html"
    broken.write_text('<html><body><img src="data:image/png;base64,AAAA"></body></html>')
    assert probe(broken, tmp_path / "profile")["broken"] == 1
    bad = tmp_path / "bad.ipynb"
    with pytest.raises(Exception, match="failed in cell"):
        execute(NOTEBOOKS / "section.ipynb", bad,
                {"site": "nosuch", "results": str(tmp_path), "section": "cache"})  # fmt: skip
    assert probe(render(bad, tmp_path / "bad.html"), tmp_path / "profile")["errors"] >= 1
