"""A rendered site report, opened in headless Chromium: figures load, tables show, no errors.

The page is checked in the browser itself: a small script appended to a copy of each page
counts images that failed to decode, error/stderr outputs and tables, and Chromium's
``--dump-dom`` hands the counts back; a screenshot proves the page paints.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from instore.report.command import NOTEBOOKS, report_compare, report_site
from instore.report.execute import execute, render
from instore.report.pages import write_index
from instore.summary.command import summarize, write

from tests.unit.data.records import SITES, write_results

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).length;
  const errors = document.querySelectorAll(
    '[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output.jp-RenderedText[data-mime-type*="error"]').length;
  const tables = document.querySelectorAll("table").length;
  const out = document.createElement("pre");
  out.id = "instore-probe";
  out.textContent = `images=${imgs.length} broken=${broken} errors=${errors} tables=${tables}`;
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
    found = re.search(r"images=(\d+) broken=(\d+) errors=(\d+) tables=(\d+)", dom)
    assert found, "the probe did not run in the page"
    return dict(
        zip(("images", "broken", "errors", "tables"), map(int, found.groups()), strict=True)
    )


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, small_files: dict[str, Path]) -> Path:
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (make system)")
    root = tmp_path_factory.mktemp("browser")
    results = write_results(root / "results")
    for site in SITES:
        write(results, site, *summarize(results, site))
    out = root / "reports"
    report_site(SITES[0], results, out, small_files["ordered"].parent)
    report_compare([], results, out)
    write_index(results, out, [SITES[0]])
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
    assert counts == {"images": images, "broken": 0, "errors": 0, "tables": tables}


def test_comparison_and_index_pages(reports: Path, tmp_path: Path) -> None:
    compare = probe(reports / "compare.html", tmp_path / "profile")
    assert compare["images"] >= 1 and compare["broken"] == 0 and compare["errors"] == 0
    assert compare["tables"] >= 2
    index = probe(reports / "index.html", tmp_path / "profile")
    assert index["tables"] == 1 and index["errors"] == 0


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
        execute(NOTEBOOKS / "cache.ipynb", bad, {"site": "nosuch", "results": str(tmp_path)})
    assert probe(render(bad, tmp_path / "bad.html"), tmp_path / "profile")["errors"] >= 1
