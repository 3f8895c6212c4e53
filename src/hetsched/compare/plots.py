"""Plots of a comparison (matplotlib Figures; nothing is shown).

* :func:`plot_means` -- each policy's metric with its CI, best first; an
  unstable policy is drawn as a labelled gap, never as a number;
* :func:`plot_differences` -- every paired difference with its CI (thick) and
  the unpaired CI of the same difference (thin, grey), against 0;
* :func:`plot_classes` -- per-class values of the stable policies, classes
  numbered from 1 and named where the system names them.
"""

from __future__ import annotations

import math

from .metrics import METRICS

__all__ = ["plot_means", "plot_differences", "plot_classes", "close"]


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "cairo", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def close(fig) -> None:
    _pyplot().close(fig)


def _label(s: str, n: int = 40) -> str:
    s = "".join(c if c.isprintable() else "?" for c in str(s))
    s = s.replace("$", r"\$")  # no mathtext from user names
    return s if len(s) <= n else s[: n - 1] + "…"


def plot_means(r, ax=None):
    plt = _pyplot()
    n = len(r.policies)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.42 * n))
    else:
        fig = ax.figure
    ys = list(range(n))[::-1]
    stable = [p for p in r.policies if p.stable]
    lo_all = min((p.ci[0] for p in stable if math.isfinite(p.ci[0])), default=0.0)
    for y, p in zip(ys, r.policies):
        if p.stable:
            lo, hi = p.ci
            err = [[p.mean - lo if math.isfinite(lo) else 0], [hi - p.mean if math.isfinite(hi) else 0]]
            ax.errorbar([p.mean], [y], xerr=err, fmt="o", color="tab:blue" if p.simulated else "black",
                        capsize=4, ms=5)
            if p.exact is not None and p.simulated:
                ax.plot([p.exact], [y], marker="D", color="black", ms=5, ls="none")
        else:
            ax.annotate("unstable (no number)", (lo_all, y), color="tab:red", va="center", fontsize="small")
    ax.set_yticks(ys, [f"{p.rank}. {_label(p.policy)}" for p in r.policies])
    ax.set_ylim(-0.7, n - 0.3)
    m = METRICS[r.metric]
    ax.set_xlabel(f"{r.metric}: {m.description} ({m.unit}), {100 * r.confidence:g}% CI")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(_label(f"{r.system}: policies ranked (lower is better)", 90), fontsize="medium")
    fig.tight_layout()
    return fig


def plot_differences(r, ax=None, metric: str | None = None):
    plt = _pyplot()
    metric = metric or r.metric
    ds = [d for d in r.differences if d.metric == metric]
    n = max(len(ds), 1)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.42 * n))
    else:
        fig = ax.figure
    ys = list(range(len(ds)))[::-1]
    for y, d in zip(ys, ds):
        x = d.diff
        if x is None:
            ax.annotate("unstable: no difference", (0, y), color="tab:red", va="center", fontsize="small")
            continue
        if x.n and math.isfinite(x.unpaired_low) and math.isfinite(x.unpaired_high):
            ax.plot([x.unpaired_low, x.unpaired_high], [y - 0.18, y - 0.18], color="0.6", lw=1.2,
                    label="unpaired CI" if y == ys[0] else None)
        if math.isfinite(x.low) and math.isfinite(x.high):
            color = "tab:green" if x.significant else "tab:gray"
            ax.errorbar([x.mean], [y], xerr=[[x.mean - x.low], [x.high - x.mean]], fmt="o", color=color,
                        capsize=4, ms=5, label="paired CI" if y == ys[0] else None)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(ys, [_label(f"{d.policy} − {d.versus}", 60) for d in ds])
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel(f"difference of {metric} (first minus second), {100 * r.confidence:g}% CI; "
                  f"green: excludes 0")
    ax.grid(True, axis="x", alpha=0.3)
    if ds:
        ax.legend(fontsize="small", loc="best")
    ax.set_title(_label(f"{r.system}: paired differences on common random numbers", 90), fontsize="medium")
    fig.tight_layout()
    return fig


def plot_classes(r, ax=None):
    import numpy as np

    plt = _pyplot()
    pols = [p for p in r.policies if p.stable and p.per_class]
    n_cls = len(pols[0].per_class) if pols else 0
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + 0.9 * n_cls * max(len(pols), 1) * 0.35), 4.0))
    else:
        fig = ax.figure
    width = 0.8 / max(len(pols), 1)
    x = np.arange(n_cls)
    for k, p in enumerate(pols):
        means = [np.nan if pc["mean"] is None else pc["mean"] for pc in p.per_class]
        lo = [0 if not pc.get("ci") or pc["ci"][0] is None else pc["mean"] - pc["ci"][0] for pc in p.per_class]
        hi = [0 if not pc.get("ci") or pc["ci"][1] is None else pc["ci"][1] - pc["mean"] for pc in p.per_class]
        ax.bar(x + (k - (len(pols) - 1) / 2) * width, means, width, yerr=[lo, hi], capsize=3,
               label=_label(p.policy))
    ax.set_xticks(x, [_label(r.class_label(c + 1), 30) for c in range(n_cls)])
    ax.set_xlabel("class")
    m = METRICS[r.metric]
    ax.set_ylabel(f"{r.metric} per class ({m.unit})")
    if pols:
        ax.legend(fontsize="small", loc="best")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(_label(f"{r.system}: per class, {100 * r.confidence:g}% CI (stable policies)", 90),
                 fontsize="medium")
    fig.tight_layout()
    return fig
