"""Report sections of single runs: comparisons (``hetsched compare --outdir``) and simulations
(``hetsched simulate --outdir``).

A comparison section shows the policy-by-policy table (rank, metric, CI,
stability), the paired differences, the per-class values (classes numbered
from 1 with the system's names) and, for the mapping model, which machines
(by name) each class went to; then the CI plots. Every string comes from the
results file, so every one is escaped (:mod:`.kit`).
"""

from __future__ import annotations

import math
from typing import Any

from .kit import esc, fmt, table

__all__ = ["compare_section", "simulate_section", "MAX_POLICY_COLS"]

#: per-class tables show this many policies (best first); all of them follow in a <details> block
MAX_POLICY_COLS = 8


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _pair(x: Any) -> tuple[Any, Any]:
    return (x[0], x[1]) if isinstance(x, list) and len(x) == 2 else (None, None)


def _class_label(k: int, names: list[str] | None) -> str:
    return f"{k} ({names[k - 1]})" if names and 0 < k <= len(names) else str(k)


def _ci_text(ci: Any) -> str:
    lo, hi = _pair(ci)
    return "–" if lo is None and hi is None else f"[{fmt(lo)}, {fmt(hi)}]"


def _dropped_text(c: dict) -> str:
    """`` of 18,239 in the log (173 dropped: run time 0 (173))`` for a trace's results, else ``""``."""
    from ..traces.workload import drop_text

    n, d = c.get("jobs_in_log"), c.get("dropped")
    if not isinstance(n, int) or not isinstance(d, dict) or not all(isinstance(v, int) for v in d.values()):
        return ""
    return f" of {n:,} in the log ({drop_text(d)})"


def setup_text(c: dict) -> str:
    if c.get("trace"):
        return (f"trace {c.get('trace')}: {fmt(c.get('jobs'))} jobs{_dropped_text(c)} at load {fmt(c.get('load'))}, "
                f"at most {fmt(c.get('reps'))} windows (the same for every policy)")
    hor = f" × {fmt(c.get('horizon'))} time units" if c.get("horizon") is not None else ""
    return f"{fmt(c.get('reps'))} replications{hor}, seed {fmt(c.get('seed'))}, common random numbers (paired)"


def _policy_table(c: dict, metric: str, pct: str) -> str:
    head = ["rank", "policy", metric, f"{pct} CI low", f"{pct} CI high", "± %", "stable", "note"]
    rows, cls, raw = [], [], []
    for p in c["policies"]:
        stable = p.get("stable") is True
        mean = _num(p.get("mean")) if stable else None
        lo, hi = _pair(p.get("ci"))
        rel = _num(p.get("rel_half_width"))
        note = "" if stable else f"unstable: no number ({fmt(p.get('message', ''))})"
        if stable and str(p.get("message", "")).startswith("no CI"):  # a trace that cannot support an interval
            note = str(p.get("message"))
        if p.get("exact") is not None:
            note = ("exact value " + fmt(p.get("exact"))) + ("" if p.get("simulated", True) else " (not simulated)")
        rows.append([p.get("rank"), p.get("policy"), mean if stable else "unstable", lo if stable else None,
                     hi if stable else None, None if rel is None or not stable else 100 * rel,
                     "yes" if stable else "no", note])
        cls.append(["", "t", "" if stable else "bad", "", "", "", "" if stable else "bad", "t"])
        raw.append([False] * len(head))
    return table(head, rows, cls=cls)


def _diff_table(c: dict, metric: str, pct: str) -> str:
    head = ["first", "second", f"{metric} difference", f"{pct} CI low", f"{pct} CI high", "significant",
            "unpaired CI low", "unpaired CI high", "note"]
    rows, cls = [], []
    for d in c["differences"]:
        if d.get("metric", metric) != metric:
            continue
        lo, hi = _pair(d.get("ci"))
        ulo, uhi = _pair(d.get("ci_unpaired"))
        sig = d.get("significant") is True
        rows.append([d.get("policy"), d.get("versus"), _num(d.get("diff")), lo, hi, "yes" if sig else "no", ulo, uhi,
                     d.get("note", "")])
        cls.append(["t", "t", "sig" if sig else "", "", "", "ok" if sig else "", "", "", "t"])
    return table(head, rows, cls=cls) if rows else '<p class="muted">no difference of this metric</p>'


def _class_table(c: dict, pols: list[dict], names: list[str] | None, pct: str) -> str:
    n = max((len(p.get("per_class") or []) for p in pols), default=0)
    head = ["class"] + [str(p.get("policy")) for p in pols]
    rows = []
    for k in range(n):
        row: list[Any] = [_class_label(k + 1, names)]
        for p in pols:
            pcs = p.get("per_class") or []
            e = pcs[k] if k < len(pcs) else {}
            if p.get("stable") is not True:
                row.append("unstable")
            else:
                row.append(f"{fmt(e.get('mean'))} {_ci_text(e.get('ci'))}")
        rows.append(row)
    return table(head, rows)


def _shares(c: dict, pols: list[dict], names: list[str] | None) -> str:
    machines = c.get("machine_names") or []
    parts = []
    for p in pols:
        share = p.get("share")
        if not share or p.get("stable") is not True:
            continue
        n_cls, n_m = len(share), max(len(r) for r in share)
        head = ["machine"] + [f"class {_class_label(i + 1, names)}" for i in range(n_cls)]
        rows = []
        for j in range(n_m):
            label = f"{j + 1} ({machines[j]})" if j < len(machines) else str(j + 1)
            rows.append([label] + [share[i][j] if j < len(share[i]) else None for i in range(n_cls)])
        parts.append(f"<h5>{esc(p.get('policy'))}</h5>{table(head, rows)}")
    if not parts:
        return ""
    return ("<details><summary>Where each class went: fraction of its tasks per machine, by policy</summary>"
            + "".join(parts) + "</details>")


def compare_section(rec, figure_html: str) -> str:
    """One comparison (a ``compare --outdir`` folder) as HTML."""
    c = rec.doc
    metric = str(c.get("metric", ""))
    conf = _num(c.get("confidence")) or 0.95
    pct = f"{100 * conf:g}%"
    names = c.get("class_names") or None
    pols = [p for p in c["policies"]]
    stable = [p for p in pols if p.get("stable") is True]
    ok = c.get("status") == 0
    mark = (f'<span class="mark {"ok" if ok else "warn"}">status {esc(fmt(c.get("status")))}: '
            f'{esc(fmt(c.get("message", "")))}</span>')
    ranking = " ".join(f'<span class="mark none">{esc(fmt(g.get("rank")))}. '
                       f'{esc(", ".join(str(x) for x in (g.get("policies") or [])))}</span>'
                       for g in (c.get("ranking") or []) if isinstance(g, dict))
    out = [f"<p>{esc(c.get('model', ''))} model; <b>{esc(metric)}</b> = {esc(c.get('metric_description', ''))}, "
           f"lower is better; {esc(setup_text(c))}</p>",
           f"<p>{mark}</p><p>ranking (ties share a rank): {ranking}</p>",
           f"<h4>Policies</h4>{_policy_table(c, metric, pct)}",
           f"<h4>Paired differences of {esc(metric)}</h4>"
           f'<p class="muted">first minus second, over the same replications; significant when the {pct} CI '
           f"excludes 0; the unpaired (Welch) interval beside it ignores the pairing</p>{_diff_table(c, metric, pct)}"]
    for other in (c.get("metrics") or [])[1:]:
        out.append(f"<details><summary>Paired differences of {esc(other)}</summary>"
                   f"{_diff_table(c, str(other), pct)}</details>")
    if any(p.get("per_class") for p in pols) and max(len(p.get("per_class") or []) for p in pols) > 1:
        shown = pols[:MAX_POLICY_COLS]
        out.append(f"<h4>Per class, {esc(metric)} ({pct} CI)</h4>{_class_table(c, shown, names, pct)}")
        if len(pols) > len(shown):
            out.append(f"<details><summary>all {len(pols)} policies</summary>"
                       f"{_class_table(c, pols, names, pct)}</details>")
    out.append(_shares(c, stable, names))
    if figure_html:
        out.append(f"<h4>Plots</h4>{figure_html}")
    return "".join(out)


def simulate_section(rec, figure_html: str) -> str:
    """One simulation (a ``simulate --outdir`` folder) as HTML."""
    s = rec.doc
    metric = str(s.get("metric", ""))
    unstable = s.get("unstable") is True
    if unstable:
        head = (f'<span class="mark bad">unstable</span> {esc(metric)} has no number '
                f"(untrusted {esc(fmt(s.get('mean_untrusted')))}): {esc(fmt(s.get('message', '')))}")
    elif s.get("status") == 3:  # a trace replay whose windows cannot support an interval
        head = (f"<b>{esc(metric)} = {esc(fmt(s.get('mean')))}</b> (the replay's own mean), "
                f'<span class="mark warn">no CI</span>: {esc(fmt(s.get("message", "")))}')
    else:
        head = f"<b>{esc(metric)} = {esc(fmt(s.get('mean')))}</b>, 95% CI {esc(_ci_text(s.get('ci')))}"
    names = s.get("class_names") if isinstance(s.get("class_names"), list) else None
    rows = []
    for pc in s.get("per_class") or []:
        if not isinstance(pc, dict):
            continue
        k = pc.get("class")
        k = int(k) if isinstance(k, int) and not isinstance(k, bool) else 0
        rows.append([_class_label(k, names), pc.get("mean"), _ci_text(pc.get("ci"))]
                    + [pc.get(x) for x in ("Q", "W") if x != metric])
    extra = [x for x in ("Q", "W") if x != metric]
    out = [f"<p>{esc(s.get('scenario', ''))} under <b>{esc(s.get('policy', ''))}</b> ({esc(s.get('model', ''))} "
           f"model): {head}</p>",
           f'<p class="muted">{esc(fmt(s.get("reps")))} replications × {esc(fmt(s.get("horizon")))} time units, '
           f"seed {esc(fmt(s.get('seed')))}; {esc(fmt(s.get('events')))} events</p>"]
    if s.get("jobs") is not None and s.get("jobs_in_log") is not None:  # a trace replay: every job accounted for
        hpc = "".join(f", {label} {esc(fmt(s.get(k)))}" for k, label in (("wait", "mean wait"),
                                                                         ("bsld", "mean bounded slowdown"))
                      if s.get(k) is not None)
        out.append(f"<p>trace {esc(fmt(s.get('trace')))}: {esc(fmt(s.get('jobs')))} jobs replayed"
                   f"{esc(_dropped_text(s))}{hpc}</p>")
    if rows:
        out.append("<h4>Per class</h4>" + table(["class", metric, "95% CI", *extra], rows))
    if figure_html:
        out.append(f"<h4>Plots</h4>{figure_html}")
    return "".join(out)
