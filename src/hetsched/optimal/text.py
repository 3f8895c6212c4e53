"""An optimal routing as text (``hetsched optimal``, ``str(result)``)."""

from __future__ import annotations

import math

import numpy as np

from ..results import fmt

__all__ = ["render"]

#: largest buffer whose two-machine table is printed in full
MAX_GRID = 40


def _names(r, j: int) -> str:
    return f"{j + 1}" if not r.machine_names else f"{j + 1} ({r.machine_names[j]})"


def _grid(r, cls: int) -> list[str]:
    """Two machines, counts: rows n1, columns n2, the machine chosen (1, 2; '.' blocked)."""
    t = r.table(cls)
    B = t.shape[0] - 1
    lines = [f"  class {cls}" + (f" ({r.class_names[cls - 1]})" if r.class_names and r.class_names[cls - 1] != f"c{cls}" else "")
             + ": rows n1 = 0..B, columns n2 = 0..B; the machine chosen (. = blocked)"]
    head = "".join(f"{k % 10}" for k in range(B + 1))
    lines.append(f"  {'n1':>4}  {head}")
    for a in range(B + 1):
        lines.append(f"  {a:>4}  " + "".join("." if v == 0 else str(v) for v in t[a]))
    return lines


def _examples(r, limit: int = 6) -> list[str]:
    """The most frequent states where the optimal choice differs from MCT's."""
    from .model import greedy_policy

    lv = r._level
    sp = lv.space
    mct = sp.actions[greedy_policy(sp)]
    opt = r.routes
    rows = []
    for i in range(r.N):
        diff = np.flatnonzero((opt[:, i] >= 0) & (opt[:, i] != mct[:, i]))
        for s in diff:
            rows.append((r.alpha[i] * lv.pi[s], i, int(s)))
    rows.sort(reverse=True)
    out = []
    for w, i, s in rows[:limit]:
        out.append(f"    class {i + 1} in [{r._describe(s)}] -> machine {opt[s, i] + 1} (MCT: {mct[s, i] + 1}); "
                   f"{100 * w / sum(r.alpha):.2g}% of arrivals")
    return out


def render(r) -> str:
    lines = [f"{r.system} — {r.title}" if r.title else str(r.system),
             f"optimal routing (exact, CTMDP, long-run average): minimises Q, the mean number in system; "
             f"{r.N} classes x {r.M} machines, load 1/lambda* = {fmt(r.load)}",
             f"state: {r.state_text}"]
    if r.status == 1:
        lines += ["", f"status 1: {r.message}"]
        return "\n".join(lines)
    ok = r.status == 0
    q = fmt(r.value, 6) if ok else f"{fmt(r.value_untrusted, 6)} (untrusted)"
    lines += ["",
              f"  Q (mean number in system)   {q}   bounds [{fmt(r.lower, 8)}, {fmt(r.upper, 8)}] (relative value "
              f"iteration, {r.iterations:,} iterations)",
              f"  W (mean response time)      {fmt(r.W, 6) if ok else '-'}   (Little: Q / accepted rate "
              f"{fmt(r.throughput, 6)})"]
    if r.mct_value is not None and math.isfinite(r.value_untrusted):
        gap = r.mct_value - r.value_untrusted
        lines.append(f"  MCT on the same chain       {fmt(r.mct_value, 6)}   gap {fmt(gap, 4)} "
                     f"({100 * gap / r.value_untrusted:+.2f}%); the optimal policy routes "
                     f"{100 * (r.differs_from_mct or 0):.2f}% of arrivals unlike MCT")
    lines += ["", "truncation: at most B tasks per machine; an arrival whose machines are all full is blocked"
              + (f" (penalty {fmt(r.penalty)})" if r.penalty else ""),
              f"  {'B':>4}  {'states':>10}  {'Q':>12}  {'boundary mass':>13}  {'blocked':>9}  {'change':>9}  "
              f"{'est. error':>10}  {'seconds':>8}"]
    for lv in r.truncation:
        lines.append(f"  {lv['buffer']:>4}  {lv['states']:>10,}  {fmt(lv['value'], 8):>12}  "
                     f"{lv['boundary_mass']:>13.2e}  {lv['blocking']:>9.2e}  "
                     f"{'-' if not math.isfinite(lv['change']) else format(lv['change'], '.2e'):>9}  "
                     f"{'-' if not math.isfinite(lv['error']) else format(lv['error'], '.2e'):>10}  "
                     f"{lv['seconds']:>8.2f}")
    lines.append(f"  negligible when the boundary mass and the estimated error (geometric tail of the changes) are "
                 f"below tol = {r.tol:g}")
    if r._level is not None and r._level.policy is not None:
        lines.append("")
        if r.counts_suffice and r.M == 2 and r.buffer <= MAX_GRID:
            lines.append("optimal policy (machine chosen for an arrival, by queue lengths n1, n2):")
            for i in range(r.N):
                lines += _grid(r, i + 1)
        else:
            ex = _examples(r)
            lines.append("optimal policy: OptimalRouting.route(cls, queues) / policy_frame() give every state"
                         + ("; the most frequent states where it differs from MCT (service rates at each "
                            "machine, in service first):" if ex else "; it agrees with MCT in every state"))
            lines += ex
    lines += ["", r._status_line()]
    return "\n".join(lines)
