"""HTML building blocks of the report: escaping, numbers, sortable tables, wide tables, figures.

Everything that reaches the page from a results folder goes through
:func:`esc` (text) or :func:`figure` (images as ``data:`` URIs inside an
``<img>``, never as markup), so a hostile results folder cannot add markup or
script to the page.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any, Sequence

from .load import FIGURE_TYPES

__all__ = ["esc", "fmt", "table", "wide_table", "figure", "choose_columns", "MAX_COLS"]

#: a table wider than this shows chosen columns; the full table goes in a <details> block
MAX_COLS = 9
#: columns a wide table keeps first (the experiment row convention's uniform columns)
_UNIFORM = ("metric", "value", "ci_low", "ci_high", "rel_half_width", "stable", "printed", "rel_error",
            "value_untrusted")


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def fmt(x: Any) -> str:
    """A cell's text: numbers to 4 significant digits, booleans yes/no, None/NaN as an en dash."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if not math.isfinite(x):
            return "–" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        if x == 0:
            return "0"
        a = abs(x)
        return f"{x:.4g}" if 1e-3 <= a < 1e6 else f"{x:.3e}"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, (list, tuple)):
        return ", ".join(fmt(v) for v in x[:50]) + (" …" if len(x) > 50 else "")
    if isinstance(x, dict):
        try:
            s = json.dumps(x, default=str)
        except (TypeError, ValueError, RecursionError):
            s = str(type(x).__name__)
        return s if len(s) <= 300 else s[:297] + "..."
    s = str(x)
    return s if len(s) <= 2000 else s[:1997] + "..."


def _sort_key(x: Any) -> str | None:
    """The numeric value a sortable column sorts by (``data-v``), or None for text."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return repr(float(x)) if math.isfinite(float(x)) else None


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, cls: Sequence[Sequence[str]] | None = None,
          titles: Sequence[str] | None = None, sortable: bool = True, raw: Sequence[Sequence[bool]] | None = None
          ) -> str:
    """A table; cells are escaped unless ``raw[k][c]`` (markup made here, e.g. status marks)."""
    ths = "".join(f'<th title="{esc(titles[c]) if titles else ""}">{esc(h)}</th>' for c, h in enumerate(head))
    body = []
    for k, r in enumerate(rows):
        cells = []
        for c, v in enumerate(r):
            klass = cls[k][c] if cls else ""
            if klass == "" and isinstance(v, str):
                klass = "t"
            key = _sort_key(v)
            attrs = (f' class="{klass}"' if klass else "") + (f' data-v="{key}"' if key is not None else "")
            text = v if raw and raw[k][c] else esc(fmt(v))
            cells.append(f"<td{attrs}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    sort = ' class="sortable"' if sortable else ""
    return (f'<div class="scroll"><table{sort}><thead><tr>{ths}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def choose_columns(cols: list[str], rows: list[dict], pairs: dict[str, str], limit: int = MAX_COLS) -> list[str]:
    """At most ``limit`` columns worth showing first: identifiers (text), the uniform columns, the main metric
    and its printed value, then the others in order."""
    if len(cols) <= limit:
        return cols
    text_cols = [c for c in cols if any(isinstance(r.get(c), str) for r in rows[:50]) and c not in _UNIFORM]
    metric_cols = []
    for r in rows[:50]:
        m = r.get("metric")
        if isinstance(m, str) and m in cols and m not in metric_cols:
            metric_cols.append(m)
    pick: list[str] = []
    for group in (text_cols[:3], metric_cols, [pairs[m] for m in metric_cols if m in pairs],
                  [c for c in _UNIFORM if c in cols], cols):
        for c in group:
            if c not in pick and len(pick) < limit:
                pick.append(c)
    return [c for c in cols if c in pick]


def wide_table(cols: list[str], rows: list[dict], *, cell_class, titles: dict[str, str], pairs: dict[str, str],
               head_extra: dict[str, str] | None = None) -> str:
    """The rows with chosen columns; when some are left out, the full table follows in a <details> block."""
    def render(columns: list[str]) -> str:
        head = [c for c in columns]
        body = [[r.get(c) for c in columns] for r in rows]
        cls = [[cell_class(k, c, r.get(c)) for c in columns] for k, r in enumerate(rows)]
        return table(head, body, cls=cls, titles=[titles.get(c, "") + (head_extra or {}).get(c, "") for c in columns])

    shown = choose_columns(cols, rows, pairs)
    if len(shown) == len(cols):
        return render(cols)
    left = [c for c in cols if c not in shown]
    return (render(shown)
            + f'<details><summary>all {len(cols)} columns ({len(left)} more: {esc(", ".join(left[:12]))}'
            + (" …" if len(left) > 12 else "") + f")</summary>{render(cols)}</details>")


def figure(path: Path) -> str:
    """An image file as ``<img src="data:…;base64,…">`` (SVG too: an SVG image never runs script)."""
    mime = FIGURE_TYPES.get(path.suffix.lower())
    if mime is None:
        return ""
    try:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError:
        return ""
    return (f'<figure><img alt="{esc(path.name)}" src="data:{mime};base64,{data}">'
            f'<figcaption class="muted">{esc(path.name)}</figcaption></figure>')
