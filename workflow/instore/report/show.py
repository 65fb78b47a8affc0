"""Showing figures and tables in an executed notebook so the HTML page stands alone.

Figures become inline PNG (base64) inside an anchored ``<figure>``, so a recommendation can
link to ``page.html#anchor`` and the page needs no files next to it.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

import pandas as pd

from instore.summary.figures import anchor


def _display(markup: str) -> None:
    from IPython.display import HTML, display

    display(HTML(markup))


def figure_html(fig: Any, key: str, caption: str) -> str:
    """The figure as a self-contained ``<figure>`` element, at its key's anchor."""
    return figure_markup(fig, anchor(key), caption)


def figure_markup(fig: Any, anchor_id: str, caption: str) -> str:
    """The figure as a self-contained ``<figure>`` element with the id ``anchor_id`` (a page
    whose figures are not in the sections' table names its own)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()  # panels side by side: keep each one's tick labels off its neighbour
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    text = html.escape(caption)
    return (
        f'<figure id="{anchor_id}" class="instore-figure">'
        f'<img src="data:image/png;base64,{data}" alt="{text}" style="max-width:100%">'
        f"<figcaption>{text}</figcaption></figure>"
    )


def figure(fig: Any, key: str, caption: str) -> None:
    _display(figure_html(fig, key, caption))


def number(value: float) -> str:
    """Three significant figures, but whole numbers in full: 1,052 read calls, not 1.05e+03."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


OVER_MARK = " (!)"
OVER_NOTE = (
    f"{OVER_MARK.strip()}: a CPU efficiency above 100% per core: the job spent CPU beyond the "
    "cores it was given (its client library's threads), or its figure counts CPU its wall did not "
    "span; read it as 100%."
)


def over_mark(column: str, value: float) -> str:
    """OVER_MARK after an efficiency above 1 (``column`` names an efficiency), else nothing."""
    return OVER_MARK if "efficiency" in column and value > 1 else ""


def table(
    frame: pd.DataFrame, caption: str, key: str | None = None, percent: tuple[str, ...] = ()
) -> None:
    """A table with its caption; ``percent`` columns are shown as percentages, and an
    efficiency above 100% is marked and explained under the caption, never shown bare."""
    shown = frame.copy()
    for col in percent:
        shown[col] = shown[col].map(
            lambda v, c=col: "" if pd.isna(v) else f"{v:.0%}{over_mark(str(c), v)}"
        )
    marked = shown.map(lambda v: isinstance(v, str) and v.endswith(OVER_MARK))
    if marked.any().any():
        caption = f"{caption} {OVER_NOTE}"
    ident = f' id="{anchor(key)}"' if key else ""
    body = shown.to_html(index=False, float_format=number, na_rep="", border=0)
    _display(f'<div{ident} class="instore-table"><p><b>{html.escape(caption)}</b></p>{body}</div>')


def note(text: str) -> None:
    _display(f'<p class="instore-note">{html.escape(text)}</p>')


def markdown(text: str) -> None:
    """Markdown, rendered on the page as a notebook's markdown cell is."""
    from IPython.display import Markdown, display

    display(Markdown(text))


def heading(text: str, level: int = 2) -> None:
    _display(f"<h{level}>{html.escape(text)}</h{level}>")
