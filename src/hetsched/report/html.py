"""One self-contained, inert HTML report of any results: ``hetsched report DIR...``.

:func:`build_report` reads every results folder under the given folders
(:mod:`.load`: the experiments of ``hetsched reproduce``, the comparisons of
``hetsched compare --outdir``, the simulations of ``hetsched simulate
--outdir``) and writes one HTML file with no external resource:

* **Contents**: one row per result present (kind, id, title, status marks,
  run time, rows); the shipped experiments never run are one line after it;
  results files that cannot be read are listed, one line each, with the reason;
* **Comparisons**, one section per system: the policy-by-policy table, the
  paired differences, the per-class values by class name, which machines (by
  name) each class went to, and the CI plots (:mod:`.runs`);
* **Simulations** and **Experiments**: the table in the paper's layout
  (``table.txt``), the rows with their units and the paper's printed values
  beside ours (columns ``paper_X`` / ``printed_X`` right after ``X``; a value
  more than :data:`DIVERGE_REL` away is marked), the plots, the notes, the
  modelling assumptions that apply and the provenance record.

Wide tables show chosen columns and put the full table in a ``<details>``
block; every table sorts by a click on its header (a small script).

**The page is inert**: every string from a results folder is escaped; figures
are ``<img src="data:…;base64,…">`` (an SVG as an image never runs script);
tables and figures are read only from inside their folder, never through a
symbolic link; and a Content-Security-Policy ``<meta>`` allows no script but
the report's own (by its SHA-256 hash), no style but its own, images only from
``data:`` and nothing from the network.

The report never overwrites a file it did not write (it marks its own files
with a ``generator`` meta tag) unless ``force`` is given.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
from pathlib import Path
from typing import Any, Iterable

from ..errors import HetschedError
from .kit import esc, figure, fmt, wide_table
from .load import RunRecord, Skipped, scan

__all__ = ["build_report", "load_results", "statuses", "DIVERGE_REL", "GENERATOR", "ExperimentRecord",
           "SORT_SCRIPT", "csp"]

GENERATOR = "hetsched report"
#: relative difference from a printed value beyond which a cell is marked
DIVERGE_REL = 0.10

ExperimentRecord = RunRecord  # the name before comparisons and simulations joined the report

_DOCS = Path(__file__).resolve().parents[3] / "docs"

# experiment-id prefix -> the assumption parts that apply (docs/_parts/assumptions-*.md)
_ASSUMPTION_PARTS = (
    ("thesis-table-2", ("sim",)), ("thesis-2", ("sim",)), ("thesis-table-3", ("desktop",)),
    ("thesis-fig-3", ("desktop",)), ("thesis-3", ("desktop",)), ("thesis-ch3", ("desktop",)),
    ("thesis-table-4", ("decentral",)), ("thesis-fig-4", ("decentral",)), ("coalloc", ("mdp",)),
    ("gang", ("srn",)), ("muscle", ("muscle",)), ("mgst", ("dispatch", "desktop")), ("traces", ("sim", "traces")),
)


def load_results(results_dir: Path | str) -> list[RunRecord]:
    """Every readable results folder under ``results_dir`` (bad files are left out: :func:`.load.scan`)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise HetschedError(f"results folder {str(results_dir)!r} does not exist (run `hetsched reproduce ID` first)")
    return scan([results_dir])[0]


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


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        cols += [str(c) for c in r if str(c) not in cols]
    return cols


def statuses(rec: RunRecord) -> list[tuple[str, str]]:
    """``[(css class, label)]`` marks for one result."""
    out = []
    status = rec.doc.get("status")
    if isinstance(status, int) and not isinstance(status, bool):  # the result protocol: 0 complete, 1 some unstable
        label = {0: "complete", 1: "complete", 2: "interrupted", 3: "check failed"}.get(status, f"status {status}")
        out.append(("ok" if status in (0, 1) else "bad", label))
    else:  # results written before status was an integer
        status = status or rec.provenance.get("status") or "complete"
        out.append(("ok" if status == "complete" else "bad", str(status)))
    if rec.provenance.get("quick"):
        out.append(("warn", "quick mode"))
    if rec.kind == "compare":
        c = rec.doc
        n_unst = sum(1 for p in c["policies"] if p.get("stable") is False)
        if n_unst:
            out.append(("warn", f"unstable: {n_unst} polic{'ies' if n_unst > 1 else 'y'}"))
    elif rec.kind == "simulate":
        if rec.doc.get("unstable") is True:
            out.append(("warn", "unstable"))
    else:
        n_unst = _unstable_count(rec.rows)
        if n_unst:
            out.append(("warn", f"unstable: {n_unst} row{'s' if n_unst > 1 else ''}"))
        pairs = _paper_pairs(_columns(rec.rows))
        if pairs:
            n_div = len(_diverging_cells(rec.rows, pairs))
            out.append(("warn", f"diverges from the paper: {n_div} value{'s' if n_div != 1 else ''}")
                       if n_div else ("ok", "matches the paper's printed values"))
    if not rec.provenance:
        out.append(("warn", "no provenance"))
    if rec.notes:
        out.append(("warn", f"{len(rec.notes)} file{'s' if len(rec.notes) > 1 else ''} left out"))
    return out


# --------------------------------------------------------------------------- rendering
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;
 padding:0 1rem;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6rem} h2{font-size:1.3rem;border-bottom:2px solid #ccc;padding-bottom:.2rem;margin-top:2.8rem}
h3{font-size:1.12rem;border-bottom:1px solid #ddd;padding-bottom:.15rem;margin-top:2rem}
h4{font-size:1rem;margin-bottom:.3rem} h5{font-size:.9rem;margin:.6rem 0 .2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:right;white-space:nowrap}
th{background:#f2f2f2} td.t{text-align:left;white-space:normal;max-width:28rem;overflow-wrap:anywhere}
table.sortable th{cursor:pointer} table.sortable th:hover{background:#e4e9f2}
th[aria-sort=ascending]::after{content:" \\25B2";font-size:.7em} th[aria-sort=descending]::after{content:" \\25BC";font-size:.7em}
td.paper{background:#f6f8ff;color:#334} td.div{background:#ffe7e3;font-weight:600}
td.bad{color:#7a1620;font-weight:600} td.ok{color:#185c17} td.sig{font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
pre{background:#f7f7f7;padding:.6rem;overflow-x:auto;font-size:.8rem}
.mark{display:inline-block;border-radius:.8rem;padding:.05rem .6rem;margin:.1rem .2rem .1rem 0;font-size:.78rem}
.ok{background:#e3f5e1;color:#185c17} .warn{background:#fff3cd;color:#6b4e00} .bad{background:#f8d7da;color:#7a1620}
.none{background:#eee;color:#555}
img{max-width:100%;height:auto;border:1px solid #eee}
details{margin:.4rem 0} summary{cursor:pointer;color:#234}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem;font-size:.85rem} dt{font-weight:600}
dd{margin:0;overflow-wrap:anywhere}
.assume{font-size:.88rem;border-left:3px solid #bcd;padding-left:.8rem}
.muted{color:#666;font-size:.85rem}
"""

#: the report's only script: click a header of a ``table.sortable`` to sort its rows (numbers by ``data-v``)
SORT_SCRIPT = """
(function(){
  function key(td){var v=td.getAttribute('data-v');return v===null?null:parseFloat(v);}
  var tables=document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables,function(t){
    if(!t.tHead||!t.tBodies.length){return;}
    var ths=t.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths,function(th,i){
      th.addEventListener('click',function(){
        var tb=t.tBodies[0],rows=Array.prototype.slice.call(tb.rows);
        var asc=th.getAttribute('aria-sort')!=='ascending';
        Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        rows.sort(function(a,b){
          var x=a.cells[i],y=b.cells[i];if(!x||!y){return 0;}
          var kx=key(x),ky=key(y),r;
          if(kx!==null&&ky!==null){r=kx-ky;}else if(kx!==null){r=-1;}else if(ky!==null){r=1;}
          else{r=x.textContent.localeCompare(y.textContent);}
          return asc?r:-r;});
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
})();
"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def csp() -> str:
    """The report's Content-Security-Policy: its own script and style (by hash), ``data:`` images, nothing else."""
    return (f"default-src 'none'; script-src '{_sha256(SORT_SCRIPT)}'; style-src '{_sha256(_CSS)}'; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def _marks(ms: list[tuple[str, str]]) -> str:
    return "".join(f'<span class="mark {c}">{esc(t)}</span>' for c, t in ms)


def _rows_table(rec: RunRecord) -> str:
    rows = rec.rows
    if not rows:
        return '<p class="muted">no rows</p>'
    cols = _columns(rows)
    pairs = _paper_pairs(cols)
    paper_cols = set(pairs.values())
    order = [c for c in cols if c not in paper_cols]
    for ours, paper in pairs.items():
        order.insert(order.index(ours) + 1, paper)
    bad = _diverging_cells(rows, pairs)
    units = rec.doc.get("units") or {}

    def cell_class(k: int, c: str, v: Any) -> str:
        return "paper" if c in paper_cols else ("div" if (k, c) in bad else ("t" if isinstance(v, str) else ""))

    rows_s = [{str(k): v for k, v in r.items()} for r in rows]
    return wide_table(order, rows_s, cell_class=cell_class, titles={c: str(units.get(c, "")) for c in order},
                      pairs=pairs)


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
            v = ", ".join(f"{k}={fmt(w)}" for k, w in list(v.items())[:40])
        items.append(f"<dt>{esc(key)}</dt><dd>{esc(fmt(v))}</dd>")
    return f"<dl>{''.join(items)}</dl>"


def _experiment_titles() -> dict[str, tuple[str, str]]:
    try:
        from .. import experiments

        return {e.id: (e.title, e.source) for e in experiments.registry().values()}
    except Exception:  # noqa: BLE001 - the report still works on results alone
        return {}


def _title(rec: RunRecord, titles: dict[str, tuple[str, str]]) -> tuple[str, str]:
    if rec.kind == "compare":
        c = rec.doc
        pols = ", ".join(str(p.get("policy")) for p in c["policies"][:6]) + (" …" if len(c["policies"]) > 6 else "")
        return f"{pols} on {fmt(c.get('system', ''))}", fmt(c.get("title", ""))
    if rec.kind == "simulate":
        s = rec.doc
        return f"{fmt(s.get('scenario', ''))} under {fmt(s.get('policy', ''))}", ""
    return titles.get(rec.id, ("", ""))


def _section(rec: RunRecord, anchor: str, titles) -> str:
    from .runs import compare_section, simulate_section

    title, source = _title(rec, titles)
    figs = "".join(figure(p) for p in rec.figures)
    left = "".join(f"<li>{esc(n)}</li>" for n in rec.notes)
    head = (f'<section id="{anchor}"><h3>{esc(rec.id)}' + (f" — {esc(title)}" if title else "") + "</h3>"
            + (f'<p class="muted">{esc(source)}</p>' if source else "") + f"<p>{_marks(statuses(rec))}</p>"
            + (f'<ul class="muted">{left}</ul>' if left else ""))
    if rec.kind == "compare":
        body = compare_section(rec, figs)
        body += (f"<details><summary>Text output</summary><pre>{esc(rec.table_text)}</pre></details>"
                 if rec.table_text.strip() else "")
    elif rec.kind == "simulate":
        body = simulate_section(rec, figs)
        body += f"<details><summary>All rows</summary>{_rows_table(rec)}</details>"
    else:
        notes = "".join(f"<li>{esc(n)}</li>" for n in rec.doc.get("notes") or [])
        body = ((f"<h4>Table in the paper's layout</h4><pre>{esc(rec.table_text)}</pre>"
                 if rec.table_text.strip() else "")
                + f"<h4>Rows</h4>{_rows_table(rec)}"
                + (f"<h4>Plots</h4>{figs}" if figs else "")
                + (f"<h4>Notes</h4><ul>{notes}</ul>" if notes else "")
                + _assumptions(rec.id))
    return head + body + f"<h4>Provenance</h4>{_provenance(rec.provenance)}" + \
        '<p><a href="#top">back to the contents</a></p></section>'


def _check_output(output: Path, force: bool) -> None:
    if output.is_symlink():
        raise HetschedError(f"report file {str(output)!r} is a symbolic link; refusing to write through it")
    if output.exists() and not output.is_file():
        raise HetschedError(f"report file {str(output)!r} exists and is not a regular file; refusing to replace it")
    if output.exists() and not force:
        try:
            with open(output, "rb") as fh:
                head = fh.read(4096).decode("utf-8", "replace")
        except OSError:
            head = ""
        if f'name="generator" content="{GENERATOR}"' not in head:
            raise HetschedError(f"report file {str(output)!r} exists and was not written by hetsched; "
                                f"pass --force to replace it or -o to write elsewhere")
    if not output.parent.is_dir():
        raise HetschedError(f"report file {str(output)!r}: folder {str(output.parent)!r} does not exist")


def _write(output: Path, doc: str) -> None:
    """Through the one safe writer (:func:`hetsched.safeio.write_text`: a fresh temporary file in the target
    folder, renamed over the target; never through a link, never over a non-regular file); whether a
    foreign file may be replaced was decided by :func:`_check_output`."""
    from ..safeio import write_text

    write_text(output, doc, force=True, what="report file")


def build_report(results_dir: Path | str | Iterable[Path | str] = "results", output: Path | str | None = None, *,
                 force: bool = False, skipped: list[Skipped] | None = None) -> Path:
    """Write the HTML report of everything under ``results_dir`` (one folder or several); return its path.

    ``output`` defaults to ``report.html`` in the first folder. An existing
    ``output`` that this function did not write is never replaced unless
    ``force``. Results files that cannot be read are listed in the report and
    appended to ``skipped`` (if given), never raised.
    """
    dirs = [Path(results_dir)] if isinstance(results_dir, (str, os.PathLike)) else [Path(d) for d in results_dir]
    if not dirs:
        raise HetschedError("report: give at least one results folder")
    for d in dirs:
        if not d.is_dir():
            raise HetschedError(f"results folder {str(d)!r} does not exist (run `hetsched reproduce ID` first)")
    recs, bad = scan(dirs)
    if skipped is not None:
        skipped.extend(bad)
    output = Path(output) if output is not None else dirs[0] / "report.html"
    _check_output(output, force)
    titles = _experiment_titles()
    anchors = {id(r): f"run-{k + 1}" for k, r in enumerate(recs)}
    order = ([r for r in recs if r.kind == "compare"] + [r for r in recs if r.kind == "simulate"]
             + [r for r in recs if r.kind == "experiment"])
    kind_name = {"compare": "comparison", "simulate": "simulation", "experiment": "experiment"}
    index = []
    for rec in order:
        title = _title(rec, titles)[0]
        dur = rec.provenance.get("duration_seconds")
        dur_cell = f'<td data-v="{float(dur)!r}">{esc(fmt(dur))} s</td>' if _is_num(dur) else "<td>–</td>"
        index.append(f'<tr><td class="t">{kind_name[rec.kind]}</td><td class="t"><a href="#{anchors[id(rec)]}">'
                     f'{esc(rec.id)}</a></td><td class="t">{esc(title)}</td><td class="t">{_marks(statuses(rec))}</td>'
                     f'{dur_cell}<td data-v="{len(rec.rows)}">{len(rec.rows)}</td></tr>')
    present = {r.id for r in recs}
    not_run = [eid for eid in sorted(titles) if eid not in present]
    not_run_line = (f'<p class="muted">Not run ({len(not_run)}): {esc(", ".join(not_run))} '
                    f"(<code>hetsched reproduce ID</code>)</p>" if not_run else "")
    bad_block = ""
    if bad:
        bad_block = ("<h3>Results not shown</h3><ul>" + "".join(f"<li><code>{esc(s)}</code></li>" for s in bad)
                     + "</ul>")
    link = ""
    assumptions_md = _DOCS / "assumptions.md"
    if assumptions_md.is_file():
        rel = os.path.relpath(assumptions_md, output.resolve().parent)
        link = f' All modelling choices: <a href="{esc(Path(rel).as_posix())}">docs/assumptions.md</a>.'
    sections = []
    comps = [r for r in order if r.kind == "compare"]
    systems: dict[str, list[RunRecord]] = {}
    for r in comps:
        systems.setdefault(str(r.doc.get("system", "")), []).append(r)
    for sysid, rs in systems.items():
        sections.append(f"<h2>Comparisons on {esc(sysid)}</h2>" + "".join(_section(r, anchors[id(r)], titles)
                                                                          for r in rs))
    sims = [r for r in order if r.kind == "simulate"]
    if sims:
        sections.append("<h2>Simulations</h2>" + "".join(_section(r, anchors[id(r)], titles) for r in sims))
    exps = [r for r in order if r.kind == "experiment"]
    if exps:
        sections.append("<h2>Experiments</h2>" + "".join(_section(r, anchors[id(r)], titles) for r in exps))

    from .. import provenance

    where = ", ".join(str(d) for d in dirs)
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp()}">
<meta name="generator" content="{GENERATOR}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hetsched report — {esc(dirs[0].name)}</title><style>{_CSS}</style></head>
<body><header id="top"><h1>hetsched report</h1>
<p class="muted">{len(recs)} results from <code>{esc(where)}</code>; hetsched
{esc(provenance.versions().get("hetsched"))}. Cells marked red differ from the paper's printed value by more than
{DIVERGE_REL:.0%}. Click a column header to sort a table.{link}</p></header>
<h2>Contents</h2><table class="sortable"><thead><tr><th>kind</th><th>id</th><th>what</th><th>status</th>
<th>run time</th><th>rows</th></tr></thead><tbody>{"".join(index)}</tbody></table>
{not_run_line}{bad_block}
{"".join(sections)}
<script>{SORT_SCRIPT}</script>
</body></html>
"""
    _write(output, doc)
    return output
