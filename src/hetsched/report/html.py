"""One self-contained HTML report of every result under ``results/``.

:func:`build_report` reads each experiment folder written by
``hetsched reproduce`` (``results.json``, ``table.txt`` and the plots) and
writes one HTML file with no external resource (CSS inline, images inline as
PNG data or SVG, no script, no network):

* an index of every shipped experiment: its status (complete, quick,
  interrupted, unstable points, diverges from the paper, not run), its run time
  and a link to its section;
* per experiment: the table in the paper's layout (``table.txt``), the rows as
  a table with the paper's printed values beside ours (columns named
  ``paper_X`` / ``printed_X`` are placed right after ``X``; a value more than
  :data:`DIVERGE_REL` away from the printed one is marked), the unit of every
  column, the plots, the notes, the modelling assumptions that apply (from
  ``docs/_parts/``, with a link to ``docs/assumptions.md`` when the report is
  written inside a checkout), and the provenance record.

The report never overwrites a file it did not write (it marks its own files
with a ``generator`` meta tag) unless ``force`` is given.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HetschedError

__all__ = ["build_report", "load_results", "DIVERGE_REL", "GENERATOR"]

GENERATOR = "hetsched report"
#: relative difference from a printed value beyond which a cell is marked
DIVERGE_REL = 0.10

_DOCS = Path(__file__).resolve().parents[3] / "docs"

# experiment-id prefix -> the assumption parts that apply (docs/_parts/assumptions-*.md)
_ASSUMPTION_PARTS = (
    ("thesis-table-2", ("sim",)), ("thesis-2", ("sim",)), ("thesis-table-3", ("desktop",)),
    ("thesis-fig-3", ("desktop",)), ("thesis-3", ("desktop",)), ("thesis-ch3", ("desktop",)),
    ("thesis-table-4", ("decentral",)), ("thesis-fig-4", ("decentral",)), ("coalloc", ("mdp",)),
    ("gang", ("srn",)), ("muscle", ("muscle",)), ("mgst", ("dispatch", "desktop")), ("traces", ("sim", "traces")),
)


@dataclass
class ExperimentRecord:
    """What the report knows of one results folder."""

    id: str
    folder: Path
    doc: dict[str, Any]
    table_text: str
    figures: list[Path] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.doc.get("rows") or [])

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.doc.get("provenance") or {})


def load_results(results_dir: Path) -> list[ExperimentRecord]:
    """Every experiment folder under ``results_dir`` that holds a ``results.json``."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise HetschedError(f"results folder {str(results_dir)!r} does not exist (run `hetsched reproduce ID` first)")
    out = []
    for folder in sorted(p for p in results_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        f = folder / "results.json"
        if not f.is_file():
            continue
        try:
            doc = json.loads(f.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HetschedError(f"{str(f)!r}: not a hetsched results file ({exc})") from None
        if not isinstance(doc, dict) or "rows" not in doc:
            raise HetschedError(f"{str(f)!r}: not a hetsched results file (no 'rows')")
        table = (folder / "table.txt").read_text() if (folder / "table.txt").is_file() else ""
        figs = []
        for name in doc.get("figures") or []:
            p = Path(name)
            cand = p if p.is_absolute() else folder / p.name
            if cand.is_file() and _inside(cand, folder):
                figs.append(cand)
        out.append(ExperimentRecord(str(doc.get("id") or folder.name), folder, doc, table, figs))
    return out


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


# --------------------------------------------------------------------------- statuses
def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _paper_pairs(columns: list[str]) -> dict[str, str]:
    """``{ours: paper}`` for columns ``X`` that have ``paper_X`` or ``printed_X``."""
    pairs = {}
    for c in columns:
        for pre in ("paper_", "printed_"):
            if c.startswith(pre) and c[len(pre):] in columns:
                pairs[c[len(pre):]] = c
    return pairs


def _diverging_cells(rows: list[dict[str, Any]], pairs: dict[str, str]) -> set[tuple[int, str]]:
    bad = set()
    for k, r in enumerate(rows):
        for ours, paper in pairs.items():
            a, b = r.get(ours), r.get(paper)
            if _is_num(a) and _is_num(b) and b != 0 and abs(a - b) / abs(b) > DIVERGE_REL:
                bad.add((k, ours))
    return bad


def _unstable_count(rows: list[dict[str, Any]]) -> int:
    n = 0
    for r in rows:
        if r.get("stable") is False:  # the experiments' row convention
            n += 1
        elif any((("unstable" in str(k).lower()) and v is True) or (isinstance(v, str) and v.lower().startswith("unstable"))
               for k, v in r.items()):
            n += 1
    return n


def statuses(rec: ExperimentRecord) -> list[tuple[str, str]]:
    """``[(css class, label)]`` marks for one experiment."""
    out = []
    status = rec.doc.get("status")
    if isinstance(status, int) and not isinstance(status, bool):  # the result protocol: 0 complete, 1 some unstable
        label = {0: "complete", 1: "complete", 2: "interrupted", 3: "check failed"}.get(status, f"status {status}")
        out.append(("ok" if status in (0, 1) else "bad", label))
    else:  # results written before status was an integer
        status = status or rec.provenance.get("status") or "complete"
        out.append(("ok" if status == "complete" else "bad", status))
    if rec.provenance.get("quick"):
        out.append(("warn", "quick mode"))
    n_unst = _unstable_count(rec.rows)
    if n_unst:
        out.append(("warn", f"unstable: {n_unst} row{'s' if n_unst > 1 else ''}"))
    cols = _columns(rec.rows)
    pairs = _paper_pairs(cols)
    if pairs:
        n_div = len(_diverging_cells(rec.rows, pairs))
        out.append(("warn", f"diverges from the paper: {n_div} value{'s' if n_div != 1 else ''}")
                   if n_div else ("ok", "matches the paper's printed values"))
    if not rec.provenance:
        out.append(("warn", "no provenance"))
    return out


# --------------------------------------------------------------------------- rendering
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;
 padding:0 1rem;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6rem} h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.5rem}
h3{font-size:1.02rem;margin-bottom:.3rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:right;white-space:nowrap}
th{background:#f2f2f2} td.t{text-align:left;white-space:normal}
td.paper{background:#f6f8ff;color:#334} td.div{background:#ffe7e3;font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
pre{background:#f7f7f7;padding:.6rem;overflow-x:auto;font-size:.8rem}
.mark{display:inline-block;border-radius:.8rem;padding:.05rem .6rem;margin:.1rem .2rem .1rem 0;font-size:.78rem}
.ok{background:#e3f5e1;color:#185c17} .warn{background:#fff3cd;color:#6b4e00} .bad{background:#f8d7da;color:#7a1620}
.none{background:#eee;color:#555}
img,svg{max-width:100%;height:auto;border:1px solid #eee}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem;font-size:.85rem} dt{font-weight:600}
.assume{font-size:.88rem;border-left:3px solid #bcd;padding-left:.8rem}
.muted{color:#666;font-size:.85rem}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _fmt(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if not math.isfinite(x):
            return "–"
        if x == 0:
            return "0"
        a = abs(x)
        return f"{x:.4g}" if 1e-3 <= a < 1e6 else f"{x:.3e}"
    if isinstance(x, (list, tuple)):
        return ", ".join(_fmt(v) for v in x)
    return str(x)


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    return cols


def _ordered(cols: list[str], pairs: dict[str, str]) -> list[str]:
    paper_cols = set(pairs.values())
    out = []
    for c in cols:
        if c in paper_cols:
            continue
        out.append(c)
        if c in pairs:
            out.append(pairs[c])
    return out + [c for c in cols if c not in out]


def _rows_table(rec: ExperimentRecord) -> str:
    rows = rec.rows
    if not rows:
        return '<p class="muted">no rows</p>'
    cols = _columns(rows)
    pairs = _paper_pairs(cols)
    order = _ordered(cols, pairs)
    bad = _diverging_cells(rows, pairs)
    paper_cols = set(pairs.values())
    units = rec.doc.get("units") or {}
    head = "".join(f'<th title="{_esc(units.get(c, ""))}">{_esc(c)}'
                   + (f'<br><span class="muted">{_esc(units[c].split(" (")[0])}</span>' if c in units else "")
                   + "</th>" for c in order)
    body = []
    for k, r in enumerate(rows):
        cells = []
        for c in order:
            v = r.get(c)
            cls = "paper" if c in paper_cols else ("div" if (k, c) in bad else ("t" if isinstance(v, str) else ""))
            cells.append(f'<td class="{cls}">{_esc(_fmt(v))}</td>' if cls else f"<td>{_esc(_fmt(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _figure(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".svg":
        text = path.read_text()
        i = text.find("<svg")
        return f'<figure>{text[i:] if i >= 0 else ""}<figcaption class="muted">{_esc(path.name)}</figcaption></figure>'
    mime = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}.get(suffix)
    if mime is None:
        return ""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{_esc(path.name)}" src="data:{mime};base64,{data}">'
            f'<figcaption class="muted">{_esc(path.name)}</figcaption></figure>')


def _assumptions(exp_id: str) -> str:
    parts: tuple[str, ...] = ()
    for prefix, names in _ASSUMPTION_PARTS:
        if exp_id.startswith(prefix):
            parts = names
            break
    texts = []
    for name in parts:
        f = _DOCS / "_parts" / f"assumptions-{name}.md"
        if f.is_file():
            texts.append(f.read_text())
    if not texts:
        return ""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = "".join(md.render(t) for t in texts)
    return f'<details><summary>Assumptions that apply ({", ".join(parts)})</summary><div class="assume">{body}</div></details>'


def _provenance(prov: dict[str, Any]) -> str:
    if not prov:
        return '<p class="muted">no provenance recorded (results written before provenance existed)</p>'
    items = []
    for key in ("command", "started", "duration_seconds", "status", "seed", "reps", "horizon", "quick",
                "parameters", "host", "platform", "versions", "git"):
        if key not in prov or prov[key] in (None, {}, ""):
            continue
        v = prov[key]
        if isinstance(v, dict):
            v = ", ".join(f"{k}={w}" for k, w in v.items())
        items.append(f"<dt>{_esc(key)}</dt><dd>{_esc(v)}</dd>")
    return f"<dl>{''.join(items)}</dl>"


def _marks(ms: list[tuple[str, str]]) -> str:
    return "".join(f'<span class="mark {c}">{_esc(t)}</span>' for c, t in ms)


def _experiment_titles() -> dict[str, tuple[str, str]]:
    try:
        from .. import experiments

        return {e.id: (e.title, e.source) for e in experiments.registry().values()}
    except Exception:  # noqa: BLE001 - the report still works on results alone
        return {}


def build_report(results_dir: Path | str = "results", output: Path | str | None = None, *,
                 force: bool = False) -> Path:
    """Write the HTML report of everything under ``results_dir``; return its path.

    ``output`` defaults to ``results_dir/report.html``. An existing ``output``
    that this function did not write is never replaced unless ``force``.
    """
    results_dir = Path(results_dir)
    recs = load_results(results_dir)
    output = Path(output) if output is not None else results_dir / "report.html"
    if output.is_symlink():
        raise HetschedError(f"report file {str(output)!r} is a symbolic link; refusing to write through it")
    if output.exists() and not force:
        head = output.read_bytes()[:4096].decode("utf-8", "replace") if output.is_file() else ""
        if f'name="generator" content="{GENERATOR}"' not in head:
            raise HetschedError(f"report file {str(output)!r} exists and was not written by hetsched; "
                                f"pass --force to replace it or -o to write elsewhere")
    if not output.parent.is_dir():
        raise HetschedError(f"report file {str(output)!r}: folder {str(output.parent)!r} does not exist")
    titles = _experiment_titles()
    by_id = {r.id: r for r in recs}

    index = []
    for eid in sorted(set(titles) | set(by_id)):
        title = titles.get(eid, ("", ""))[0]
        rec = by_id.get(eid)
        if rec is None:
            index.append(f'<tr><td class="t">{_esc(eid)}</td><td class="t">{_esc(title)}</td>'
                         f'<td class="t"><span class="mark none">not run</span></td><td></td><td></td></tr>')
            continue
        dur = rec.provenance.get("duration_seconds")
        index.append(f'<tr><td class="t"><a href="#exp-{_esc(eid)}">{_esc(eid)}</a></td><td class="t">{_esc(title)}</td>'
                     f'<td class="t">{_marks(statuses(rec))}</td><td>{_esc(_fmt(dur)) + " s" if dur is not None else "–"}</td>'
                     f"<td>{len(rec.rows)}</td></tr>")

    link = ""
    assumptions_md = _DOCS / "assumptions.md"
    if assumptions_md.is_file():
        rel = os.path.relpath(assumptions_md, output.resolve().parent)
        link = f' All modelling choices: <a href="{_esc(Path(rel).as_posix())}">docs/assumptions.md</a>.'

    sections = []
    for rec in recs:
        title, source = titles.get(rec.id, ("", ""))
        notes = "".join(f"<li>{_esc(n)}</li>" for n in rec.doc.get("notes") or [])
        sections.append(
            f'<section id="exp-{_esc(rec.id)}"><h2>{_esc(rec.id)} — {_esc(title)}</h2>'
            f'<p class="muted">{_esc(source)}</p><p>{_marks(statuses(rec))}</p>'
            + (f"<h3>Table in the paper's layout</h3><pre>{_esc(rec.table_text)}</pre>" if rec.table_text.strip() else "")
            + f"<h3>Rows</h3>{_rows_table(rec)}"
            + ("<h3>Plots</h3>" + "".join(_figure(p) for p in rec.figures) if rec.figures else "")
            + (f"<h3>Notes</h3><ul>{notes}</ul>" if notes else "")
            + _assumptions(rec.id)
            + f"<h3>Provenance</h3>{_provenance(rec.provenance)}"
            + '<p><a href="#top">back to the index</a></p></section>'
        )

    from .. import provenance

    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="generator" content="{GENERATOR}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hetsched report — {_esc(results_dir.name)}</title><style>{_CSS}</style></head>
<body><header id="top"><h1>hetsched report</h1>
<p class="muted">{len(recs)} experiment results from <code>{_esc(results_dir)}</code>; hetsched
{_esc(provenance.versions().get("hetsched"))}. Cells marked red differ from the paper's printed value by more than
{DIVERGE_REL:.0%}.{link}</p></header>
<h2>Index</h2><div class="scroll"><table><thead><tr><th>id</th><th>experiment</th><th>status</th><th>run time</th>
<th>rows</th></tr></thead><tbody>{"".join(index)}</tbody></table></div>
{"".join(sections)}
</body></html>
"""
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(doc)
    os.replace(tmp, output)
    return output
