"""A comparison as text (``hetsched compare``, ``str(result)``) and as HTML (Jupyter)."""

from __future__ import annotations

import base64
import html
import math

from ..results import fmt
from .metrics import METRICS
from .result import CompareResult, safe_text

__all__ = ["render", "render_html", "setup_line", "RANK_RULE"]

RANK_RULE = "rank = 1 + the number of policies significantly better (their paired CI excludes 0); ties share a rank"


def _ci(lo, hi) -> str:
    return f"[{fmt(lo)}, {fmt(hi)}]"


def setup_line(r: CompareResult) -> str:
    """How the comparison was run, in one line."""
    if r.trace:
        from ..traces.workload import drop_text

        of = f" of {r.jobs_in_log:,} ({drop_text(r.dropped or {})})" if r.jobs_in_log is not None else ""
        run = (f"trace {safe_text(r.trace)}: {r.jobs:,} jobs{of} at load {fmt(r.load)}, at most {r.reps} windows "
               f"(the same windows for every policy)")
    else:
        hor = f" x {fmt(r.horizon, 6)} time units" if r.horizon is not None else ""
        run = f"{r.reps} replications{hor}, seed {r.seed}, common random numbers (paired)"
    return run


def render(r: CompareResult) -> str:
    m = METRICS[r.metric]
    pct = f"{100 * r.confidence:g}%"
    lines = [f"{safe_text(r.system)} — {safe_text(r.title)}" if r.title else safe_text(r.system),
             f"{len(r.policies)} policies on the {r.model} model; {r.metric} = {m.description} ({m.unit}); "
             f"lower is better",
             setup_line(r), ""]
    w = max(6, *(len(safe_text(p.policy)) for p in r.policies))
    lines.append(f"{'rank':>4}  {'policy':<{w}}  {r.metric:>10}  {pct + ' CI':<24} {'+-':>7}")
    for p in r.policies:
        name = safe_text(p.policy)
        if not p.stable:
            why = safe_text(p.message.removeprefix("unstable: "))
            unt = f"{r.metric} over the run {fmt(p.mean_untrusted)}, untrusted; " if math.isfinite(
                p.mean_untrusted) else ""
            lines.append(f"{p.rank:>4}  {name:<{w}}  {'UNSTABLE':>10}  ({unt}{why})")
            continue
        tag = " (exact)" if not p.simulated else (f"  exact {fmt(p.exact)}" if p.exact is not None else "")
        rel = "" if not math.isfinite(p.rel_half_width) else f"{100 * p.rel_half_width:.2f}%"
        if p.simulated and not math.isfinite(p.ci[0]) and p.message.startswith("no CI"):
            tag += f"  ({safe_text(p.message)})"
        lines.append(f"{p.rank:>4}  {name:<{w}}  {fmt(p.mean):>10}  {_ci(*p.ci):<24} {rel:>7}{tag}")
    exact = [p for p in r.policies if p.exact is not None]
    if exact:
        e = exact[0]
        lines.append("")
        lines.append(f"gap to the exact {safe_text(e.policy)} ({fmt(e.exact)}; {pct} CI of each gap = the "
                     f"policy's CI minus the exact value):")
        for p in r.policies:
            if p.stable and p is not e:
                rel = f" ({100 * (p.mean - e.exact) / e.exact:+.2f}%)" if e.exact else ""
                lines.append(f"  {safe_text(p.policy):<{w}}  {fmt(p.mean - e.exact):>10}{rel}  "
                             f"{_ci(p.ci[0] - e.exact, p.ci[1] - e.exact)}")
        if not e.simulated and e.message and e.message != "ok":
            lines.append(f"  {safe_text(e.policy)}: {safe_text(e.message)}")
    for metric in r.metrics:
        ds = [d for d in r.differences if d.metric == metric]
        if not ds:
            continue
        lines.append("")
        lines.append(f"paired differences of {metric} (first minus second; {pct} CI over the same "
                     f"{'windows' if r.trace else 'replications'}; * = the CI excludes 0):")
        wp = max(len(safe_text(d.policy)) + len(safe_text(d.versus)) + 3 for d in ds)
        for d in ds:
            pair = f"{safe_text(d.policy)} - {safe_text(d.versus)}"
            if d.diff is None:
                lines.append(f"  {pair:<{wp}}  {safe_text(d.note)}")
                continue
            x = d.diff
            un = f"   (unpaired {_ci(x.unpaired_low, x.unpaired_high)})" if x.n else ""
            lines.append(f"  {pair:<{wp}}  {fmt(x.mean):>10} {_ci(x.low, x.high):<24}{' *' if x.significant else '  '}"
                         f"{un}" + (f"   {safe_text(d.note)}" if d.note else ""))
    classes = [p for p in r.policies if p.per_class]
    if classes and len(classes[0].per_class) > 1:
        lines.append("")
        lines.append(f"per class, {r.metric} ({pct} CI):")
        labels = [r.class_label(pc["class"]) for pc in classes[0].per_class]
        wc = max(5, *(len(safe_text(x)) for x in labels))
        cols = [safe_text(p.policy) for p in classes]
        grid = []
        for k in range(len(labels)):
            cells = []
            for p in classes:
                pc = p.per_class[k]
                if not p.stable:
                    cells.append("unstable")
                elif pc["mean"] is None:
                    cells.append("-")
                else:
                    cells.append(f"{fmt(pc['mean'])} {_ci(*(pc.get('ci') or [None, None]))}")
            grid.append(cells)
        widths = [max(len(c), *(len(row[j]) for row in grid)) for j, c in enumerate(cols)]
        lines.append(f"  {'class':<{wc}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cols, widths)))
        for lab, row in zip(labels, grid):
            lines.append(f"  {safe_text(lab):<{wc}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(row, widths)))
    lines.append("")
    lines.append(RANK_RULE)
    lines.append(f"status {r.status}: {safe_text(r.message)}; {r.events:,} events in {r.seconds:.2f} s")
    return "\n".join(lines)


def _png(fig) -> str:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    from .plots import close

    close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def render_html(r: CompareResult, *, plot: bool = True) -> str:
    """Jupyter's view: the ranking table, the differences, and the CI plot as an inline PNG."""
    e = html.escape
    pct = f"{100 * r.confidence:g}%"
    color = "#070" if r.success else "#b00"
    rows = []
    for p in r.policies:
        if p.stable:
            val = f"<td>{e(fmt(p.mean))}</td><td>{e(_ci(*p.ci))}</td>"
        else:
            val = f"<td colspan='2'><b>unstable</b> ({e(p.message.removeprefix('unstable: '))})</td>"
        rows.append(f"<tr><td>{p.rank}</td><td>{e(p.policy)}</td>{val}</tr>")
    diffs = []
    for d in r.differences:
        if d.metric != r.metric:
            continue
        if d.diff is None:
            diffs.append(f"<tr><td>{e(d.policy)} &minus; {e(d.versus)}</td><td colspan='3'>{e(d.note)}</td></tr>")
            continue
        x = d.diff
        diffs.append(f"<tr><td>{e(d.policy)} &minus; {e(d.versus)}</td><td>{e(fmt(x.mean))}</td>"
                     f"<td>{e(_ci(x.low, x.high))}</td><td>{'yes' if x.significant else 'no'}</td></tr>")
    img = ""
    if plot:
        try:
            img = f"<br><img alt='means with CIs' src='data:image/png;base64,{_png(r.plot_means())}'>"
        except Exception:  # noqa: BLE001 - a display must not raise
            img = ""
    return (f"<div><b>CompareResult</b>: {e(r.system)} &mdash; {e(METRICS[r.metric].description)} "
            f"({e(r.metric)}), {e(setup_line(r))}<br>"
            f"<span style='color:{color}'>{e(r._status_line())}</span>"
            f"<table><tr><th>rank</th><th>policy</th><th>{e(r.metric)}</th><th>{pct} CI</th></tr>"
            f"{''.join(rows)}</table>"
            f"<table><tr><th>paired difference</th><th>{e(r.metric)}</th><th>{pct} CI</th><th>significant</th></tr>"
            f"{''.join(diffs)}</table>{img}</div>")
