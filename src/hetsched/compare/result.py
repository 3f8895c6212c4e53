"""The answer of :func:`hetsched.compare`: :class:`CompareResult` (the project's result protocol).

Policies are listed in ranking order (rank, then mean, then the order given);
classes and machines are numbered from 1, with the user's names where the
system has them. An unstable policy has no number: its ``mean`` is NaN
(``null`` in JSON), the run's number is ``mean_untrusted``, it is ranked
last, and no difference involving it is computed.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..results import Result, fmt, jsonable
from .metrics import METRICS, is_trace, replication_values, trace_difference, trace_estimate
from .stats import Difference, paired_difference, rank_with_ties

__all__ = ["CompareResult", "PolicyOutcome", "PairedDifference", "build_result", "safe_text", "system_names"]

OK, SOME_UNSTABLE, ALL_UNSTABLE = 0, 1, 2


def safe_text(s: Any) -> str:
    """``s`` with control characters shown as escapes (names reach terminals and files)."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(s))


@dataclass
class PolicyOutcome:
    """One policy of a comparison."""

    policy: str
    stable: bool
    rank: int
    metric: str
    mean: float
    ci: tuple[float, float]
    rel_half_width: float
    n: int
    message: str
    #: the ranking metric per replication (per trace window); for an unstable policy untrusted
    values: list[float]
    #: every compared metric: ``{metric: {"mean", "ci", "n"}}`` (NaN for an unstable policy)
    metrics: dict[str, dict]
    #: ``[{"class": 1, "class_name", "mean", "ci", "mean_untrusted"}, ...]`` of the ranking metric
    per_class: list[dict]
    mean_untrusted: float = float("nan")
    #: per class, the fraction of its tasks each machine received (mapping model), N x M; else None
    share: list[list[float]] | None = None
    #: the exact value from an exact solver (:data:`hetsched.compare.core.EXACT`), else None
    exact: float | None = None
    simulated: bool = True
    sim: Any = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        d = {"policy": self.policy, "rank": self.rank, "stable": self.stable, "metric": self.metric,
             "mean": self.mean, "ci": list(self.ci), "rel_half_width": self.rel_half_width, "n": self.n,
             "message": self.message, "metrics": self.metrics, "per_class": self.per_class,
             "simulated": self.simulated}
        if self.exact is not None:
            d["exact"] = self.exact
        if self.stable:
            d["values"] = self.values
        else:
            d["mean_untrusted"] = self.mean_untrusted
            d["values_untrusted"] = self.values
        if self.share is not None:
            d["share"] = self.share
        return jsonable(d)


@dataclass
class PairedDifference:
    """``mean(policy) - mean(versus)`` of one metric on common random numbers (None: not computable)."""

    policy: str
    versus: str
    metric: str
    diff: Difference | None
    note: str = ""

    @property
    def significant(self) -> bool:
        return self.diff is not None and self.diff.significant

    def as_dict(self) -> dict[str, Any]:
        d = self.diff
        out: dict[str, Any] = {"policy": self.policy, "versus": self.versus, "metric": self.metric}
        if d is None:
            out.update({"diff": None, "ci": [None, None], "significant": False, "note": self.note})
        else:
            out.update({"diff": d.mean, "ci": [d.low, d.high], "significant": d.significant, "n": d.n,
                        "ci_unpaired": [d.unpaired_low, d.unpaired_high],
                        "better": (self.policy if d.high < 0 else self.versus if d.low > 0 else None)})
            if self.note:
                out["note"] = self.note
        return jsonable(out)


@dataclass(repr=False)
class CompareResult(Result):
    """Policies compared on one system (see the module docstring and :func:`hetsched.compare`)."""

    STATUS = {OK: "ok: every policy is stable; the ranking and the differences are trustworthy",
              SOME_UNSTABLE: "unstable: some policies are unstable (ranked last, shown without a number)",
              ALL_UNSTABLE: "unstable: every policy is unstable (no ranking)"}

    status: int
    message: str
    system: str
    title: str
    model: str
    metric: str
    metrics: list[str]
    policies: list[PolicyOutcome]
    differences: list[PairedDifference]
    reps: int
    horizon: float | None
    seed: Any
    confidence: float
    seconds: float
    class_names: list[str] | None = None
    machine_names: list[str] | None = None
    trace: str | None = None
    load: float | None = None
    jobs: int | None = None
    options: dict = field(default_factory=dict)
    #: a trace: its jobs (replayed or dropped) and the dropped ones by reason (hetsched.traces.workload)
    jobs_in_log: int | None = None
    dropped: dict | None = None
    #: events simulated, over every policy and replication
    events: int = 0

    # ------------------------------------------------------------------ access
    @property
    def ranking(self) -> list[list[str]]:
        """Policies grouped by rank, best first (ties share a group; unstable ones last)."""
        groups: dict[int, list[str]] = {}
        for p in self.policies:
            groups.setdefault(p.rank, []).append(p.policy)
        return [groups[r] for r in sorted(groups)]

    def policy(self, name: str) -> PolicyOutcome:
        for p in self.policies:
            if p.policy == name:
                return p
        raise KeyError(f"no policy {name!r} in this comparison; policies: {[p.policy for p in self.policies]}")

    def difference(self, a: str, b: str, metric: str | None = None) -> PairedDifference:
        """``mean(a) - mean(b)`` (paired), whichever order it is stored in."""
        metric = metric or self.metric
        for d in self.differences:
            if d.metric != metric:
                continue
            if (d.policy, d.versus) == (a, b):
                return d
            if (d.policy, d.versus) == (b, a):
                x = d.diff
                flip = None if x is None else Difference(-x.mean, -x.high, -x.low, x.n, -x.unpaired_high,
                                                          -x.unpaired_low)
                return PairedDifference(a, b, metric, flip, d.note)
        raise KeyError(f"no difference {a!r} - {b!r} of {metric!r}")

    def class_label(self, c: int) -> str:
        """``"2"`` or ``"2 (batch)"`` for class 2 (numbered from 1)."""
        if self.class_names:
            return f"{c} ({self.class_names[c - 1]})"
        return str(c)

    # ------------------------------------------------------------------ protocol
    def as_dict(self) -> dict[str, Any]:
        return jsonable({
            "system": self.system, "title": self.title, "model": self.model, "metric": self.metric,
            "metric_description": METRICS[self.metric].description, "metrics": self.metrics,
            "reps": self.reps, "horizon": self.horizon, "seed": self.seed, "confidence": self.confidence,
            "trace": self.trace, "load": self.load, "jobs": self.jobs, "jobs_in_log": self.jobs_in_log,
            "dropped": self.dropped, "options": self.options,
            "class_names": self.class_names, "machine_names": self.machine_names,
            "ranking": [{"rank": self.policy(g[0]).rank, "policies": g} for g in self.ranking],
            "policies": [p.as_dict() for p in self.policies],
            "differences": [d.as_dict() for d in self.differences],
            "events": int(self.events), "status": int(self.status), "success": self.success,
            "message": self.message, "seconds": float(self.seconds),
        })

    def _frame_rows(self):
        nan = float("nan")
        base = {"model": self.model, "scenario": self.system}
        for p in self.policies:
            ids = {**base, "policy": p.policy}
            yield {**ids, "measure": "rank", "value": float(p.rank), "stable": p.stable}
            for m, st in p.metrics.items():
                r = {**ids, "measure": m, "value": st["mean"] if p.stable else nan,
                     "ci_low": st["ci"][0] if p.stable else nan, "ci_high": st["ci"][1] if p.stable else nan,
                     "stable": p.stable}
                if not p.stable:
                    r["value_untrusted"] = st.get("mean_untrusted", nan)
                yield r
            if p.exact is not None:
                yield {**ids, "measure": f"{self.metric}_exact", "value": p.exact, "stable": p.stable}
            for pc in p.per_class:
                r = {**ids, "class": pc["class"], "measure": self.metric,
                     "value": nan if pc["mean"] is None else pc["mean"],
                     "ci_low": nan if not pc.get("ci") else pc["ci"][0],
                     "ci_high": nan if not pc.get("ci") else pc["ci"][1], "stable": p.stable}
                if self.class_names:
                    r["class_name"] = self.class_names[pc["class"] - 1]
                if not p.stable:
                    r["value_untrusted"] = pc.get("mean_untrusted", nan)
                yield r
            if p.share is not None and p.stable:
                for i, row in enumerate(p.share):
                    for j, v in enumerate(row):
                        r = {**ids, "class": i + 1, "machine": j + 1, "measure": "share", "value": v,
                             "stable": p.stable}
                        if self.class_names:
                            r["class_name"] = self.class_names[i]
                        if self.machine_names:
                            r["machine_name"] = self.machine_names[j]
                        yield r
        for d in self.differences:
            x = d.diff
            yield {**base, "policy": d.policy, "measure": f"{d.metric}_diff",
                   "value": nan if x is None else x.mean, "ci_low": nan if x is None else x.low,
                   "ci_high": nan if x is None else x.high, "versus": d.versus,
                   "significant": d.significant, "ci_unpaired_low": nan if x is None else x.unpaired_low,
                   "ci_unpaired_high": nan if x is None else x.unpaired_high}

    def to_frame(self):
        """The comparison in long format: per policy its rank, metrics, per-class values and machine shares,
        then every paired difference (``measure`` ``<metric>_diff``, ``versus`` the second policy)."""
        df = super().to_frame()
        for c in ("class", "machine"):
            if c in df:
                df[c] = df[c].astype("Int64")
        return df

    def _headline(self) -> str:
        parts = []
        for p in self.policies:
            parts.append(f"{p.rank}. {safe_text(p.policy)} {fmt(p.mean)}" if p.stable
                         else f"{safe_text(p.policy)} unstable")
        what = "windows" if self.trace else "replications"
        return f"{safe_text(self.system)}, {self.metric} over {self.reps} {what}: " + ", ".join(parts)

    def __repr__(self) -> str:
        return (f"CompareResult({self._headline()}\n  {self._status_line()}\n"
                f"  .ranking, .policies, .differences, .to_frame(), .as_dict(), .plot_means())")

    def __str__(self) -> str:
        from .text import render

        return render(self)

    def _repr_html_(self) -> str:
        from .text import render_html

        return render_html(self)

    # ------------------------------------------------------------------ plots
    def plot_means(self, ax=None):
        """Each policy's metric with its CI (matplotlib Figure)."""
        from .plots import plot_means

        return plot_means(self, ax=ax)

    def plot_differences(self, ax=None, metric: str | None = None):
        """Every paired difference with its CI, the unpaired CI beside it (Figure)."""
        from .plots import plot_differences

        return plot_differences(self, ax=ax, metric=metric)

    def plot_classes(self, ax=None):
        """Per-class values of every stable policy, classes by name (Figure)."""
        from .plots import plot_classes

        return plot_classes(self, ax=ax)


# --------------------------------------------------------------------------- building
def system_names(system) -> tuple[list[str] | None, list[str]]:
    """``(class names or None, machine names)`` of a System: class names only where the user gave them
    (not the defaults ``c1 ..``); machine names always (the user's, the groups' labels, or ``m1 ..``)."""
    cn = getattr(system, "class_names", None)
    given = getattr(system, "class_names_given", cn is not None)
    mn = getattr(system, "machine_names", None)
    if not mn:
        mn = system.machine_labels()
    return (list(cn) if cn and given else None), list(mn)


def _names(kind: str, system) -> tuple[list[str] | None, list[str] | None]:
    return system_names(system) if kind == "system" else (None, None)


def _stat(values: np.ndarray, confidence: float) -> dict:
    from ..stats import t_interval

    v = values[np.isfinite(values)]
    e = t_interval(v, confidence) if v.size else None
    if e is None:
        return {"mean": float("nan"), "ci": [float("nan"), float("nan")], "n": 0}
    return {"mean": e.mean, "ci": [e.low, e.high], "n": e.n}


def _outcome(label: str, res, metrics: list[str], confidence: float, class_names) -> PolicyOutcome:
    metric = metrics[0]
    stable = not res.unstable
    mstats: dict[str, dict] = {}
    vals0 = replication_values(res, metric) if res.replications or res.extra.get("W_windows") else np.zeros(0)
    for m in metrics:
        vals = replication_values(res, m) if vals0.size else np.zeros(0)
        if m == res.metric and confidence == 0.95:
            # the model's own estimate: the very numbers hs.simulate gives
            st = {"mean": res.mean, "ci": list(res.ci), "n": int(np.isfinite(vals).sum()) if vals.size else 0}
            if not stable:
                st["mean_untrusted"] = res.mean_untrusted
        else:
            if is_trace(res):  # a trace replay: the window estimate, with no interval where it has none
                est = trace_estimate(res, m, confidence)
                st = {"mean": est.mean, "ci": [est.low, est.high], "n": est.windows}
            else:
                st = _stat(vals, confidence)
            if not stable:
                st = {"mean": float("nan"), "ci": [float("nan"), float("nan")], "n": st["n"],
                      "mean_untrusted": st["mean"]}
        mstats[m] = st
    main = mstats[metric]
    per_class = []
    for pc in res.per_class:
        c = int(pc["class"])
        if metric == res.metric:
            mean, ci = pc.get("mean"), pc.get("ci")
            unt = pc.get("mean_untrusted", pc.get(f"{metric}_untrusted"))
        else:
            mean, ci = pc.get(metric), pc.get(f"{metric}_ci")
            unt = pc.get(f"{metric}_untrusted")
        e = {"class": c, "mean": mean if stable else None, "ci": ci if stable else None}
        if class_names:
            e["class_name"] = class_names[c - 1]
        if not stable:
            e["mean_untrusted"] = unt
        per_class.append(e)
    share = None
    if res.replications and "share" in res.replications[0]:
        share = np.mean([r["share"] for r in res.replications], axis=0).tolist()
    mean = main["mean"] if stable else float("nan")
    lo, hi = (main["ci"] if stable else (float("nan"), float("nan")))
    rel = (hi - lo) / 2 / abs(mean) if stable and mean not in (0,) and math.isfinite(mean) else float("nan")
    return PolicyOutcome(policy=label, stable=stable, rank=0, metric=metric, mean=float(mean),
                         ci=(float(lo), float(hi)), rel_half_width=float(rel), n=int(main["n"]),
                         message=res.message, values=[float(x) for x in vals0], metrics=mstats,
                         per_class=per_class, mean_untrusted=float(main.get("mean_untrusted", float("nan"))),
                         share=share, sim=res)


def _exact_outcome(label: str, ans, metrics: list[str]) -> PolicyOutcome:
    v = float(ans.value)
    return PolicyOutcome(policy=label, stable=True, rank=0, metric=metrics[0], mean=v, ci=(v, v),
                         rel_half_width=0.0, n=0, message=ans.message, values=[],
                         metrics={metrics[0]: {"mean": v, "ci": [v, v], "n": 0}}, per_class=[], exact=v,
                         simulated=False)


def _diff(a: PolicyOutcome, b: PolicyOutcome, metric: str, confidence: float) -> PairedDifference:
    if not (a.stable and b.stable):
        who = ", ".join(p.policy for p in (a, b) if not p.stable)
        return PairedDifference(a.policy, b.policy, metric, None, f"unstable: {who} (no number to compare)")
    if not a.simulated or not b.simulated:  # an exact value: the other's interval, shifted
        ex = a if not a.simulated else b
        if metric not in ex.metrics:
            return PairedDifference(a.policy, b.policy, metric, None, f"{ex.policy}: no exact value of {metric}")
        if not a.simulated and not b.simulated:
            d = a.mean - b.mean
            return PairedDifference(a.policy, b.policy, metric, Difference(d, d, d, 0, d, d), "both exact")
        if not a.simulated:  # exact(a) - b
            st = b.metrics[metric]
            lo, hi, m = a.mean - st["ci"][1], a.mean - st["ci"][0], a.mean - st["mean"]
        else:  # a - exact(b)
            st = a.metrics[metric]
            lo, hi, m = st["ci"][0] - b.mean, st["ci"][1] - b.mean, st["mean"] - b.mean
        return PairedDifference(a.policy, b.policy, metric, Difference(m, lo, hi, st["n"], lo, hi),
                                "against an exact value")
    if is_trace(a.sim):  # same log, same jobs: the per-job differences, cut at the same windows
        d, note = trace_difference(a.sim, b.sim, metric, confidence)
        return PairedDifference(a.policy, b.policy, metric, d, note)
    va = replication_values(a.sim, metric)
    vb = replication_values(b.sim, metric)
    return PairedDifference(a.policy, b.policy, metric, paired_difference(va, vb, confidence))


def build_result(*, kind, system, model, order, sims, exact, metrics, confidence, reps, horizon, seed, tw, trace,
                 load, options, seconds) -> CompareResult:
    class_names, machine_names = _names(kind, system)
    outs: list[PolicyOutcome] = []
    for label in order:
        if label in sims:
            o = _outcome(label, sims[label], metrics, confidence, class_names)
            if label in exact:
                o.exact = float(exact[label].value)
        else:
            o = _exact_outcome(label, exact[label], metrics)
        outs.append(o)
    metric = metrics[0]
    n = len(outs)
    better: dict[tuple[int, int], bool] = {}
    for i in range(n):
        for j in range(i + 1, n):
            d = _diff(outs[i], outs[j], metric, confidence).diff
            if d is not None and d.significant:
                better[(i, j) if d.high < 0 else (j, i)] = True
    ranks = rank_with_ties(n, better, [o.stable for o in outs])
    for o, r in zip(outs, ranks):
        o.rank = r
    pos = {o.policy: k for k, o in enumerate(outs)}
    outs.sort(key=lambda o: (o.rank, o.mean if o.stable else math.inf, pos[o.policy]))
    diffs = [_diff(outs[i], outs[j], m, confidence) for m in metrics for i in range(n) for j in range(i + 1, n)]
    n_unst = sum(not o.stable for o in outs)
    if n_unst == 0:
        status, message = OK, "ok"
    elif n_unst < n:
        status = SOME_UNSTABLE
        message = ("unstable: " + ", ".join(o.policy for o in outs if not o.stable)
                   + f" ({outs[-1].message.removeprefix('unstable: ')})")
    else:
        status, message = ALL_UNSTABLE, "unstable: every policy is unstable; " + outs[0].message
    no_ci = [o.policy for o in outs if o.stable and o.sim is not None and o.message.startswith("no CI")]
    if no_ci:  # a trace whose windows cannot support an interval (hetsched.traces.estimate)
        message += f"; no CI for {', '.join(no_ci)} (the trace's windows cannot support one; ties where unsure)"
    if kind == "system":
        sid, title = system.id, system.title
    else:
        sid = f"coalloc(lam1={system.lam1:.4g}, lam2={system.lam2:.4g})"
        title = "two-cluster co-allocation (seed 000)"
    first = next((o.sim for o in outs if o.sim is not None), None)
    if tw is not None:
        n_reps, hor = int(reps), None
    else:
        n_reps = first.reps if first is not None else int(reps)
        hor = first.horizon if first is not None else horizon
    return CompareResult(
        status=status, message=safe_text(message), system=sid, title=title, model=model, metric=metric,
        metrics=list(metrics), policies=outs, differences=diffs, reps=n_reps, horizon=hor, seed=seed,
        confidence=confidence, seconds=float(seconds), class_names=class_names, machine_names=machine_names,
        trace=_trace_label(trace, tw), load=None if tw is None else float(tw.load),
        jobs=None if tw is None else len(tw), options=dict(options),
        jobs_in_log=None if tw is None else int(tw.jobs_in_log), dropped=None if tw is None else dict(tw.dropped),
        events=int(sum(int(o.sim.events) for o in outs if o.sim is not None)),
    )


def _trace_label(trace, tw) -> str | None:
    if trace is None:
        return None
    if isinstance(trace, (str, bytes)) or hasattr(trace, "__fspath__"):
        import os

        return os.fsdecode(trace)
    src = getattr(tw, "source", None)
    return str(src) if src else f"{type(trace).__name__} ({len(tw)} jobs)"
