"""Write docs/img/report-index.png: the report index (reports/index.html), rendered from the unit
tests' fixture records and photographed by headless Chromium.

    python docs/gen/screenshot.py [PNG]

Not part of `make docs` (it needs Chromium, and a picture is not checked for staleness); rerun it
when the report index changes its look. The PNG is reduced to a palette to stay small.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "docs" / "img" / "report-index.png"
WINDOW = "1100,900"
COLOURS = 64


def render_index(scratch: Path) -> Path:
    """The report index of the fixture's two sites, as `instore report index` writes it."""
    sys.path.insert(0, str(REPO))
    from instore.report.pages import write_index
    from instore.summary.command import summarize, write

    from tests.unit.data.records import SITES, write_results

    results = write_results(scratch / "results")
    for site in SITES:
        write(results, site, *summarize(results, site))
    return write_index(results, scratch / "reports", list(SITES))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else OUT
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("screenshot: chromium is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="instore-docshot-") as tmp:
        page = render_index(Path(tmp))
        raw = Path(tmp) / "index.png"
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--window-size={WINDOW}", f"--screenshot={raw}", page.as_uri()]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)
        out.parent.mkdir(parents=True, exist_ok=True)
        Image.open(raw).convert("RGB").quantize(COLOURS).save(out, optimize=True)
    print(f"{out}: {out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
