"""The one result type of every simulator: :class:`SimResult`.

In the style of ``scipy.optimize.OptimizeResult``: a ``status`` code and its
``message``, ``success``, the answer (``metric``, ``mean``, ``ci``,
``per_class``) and diagnostics (``events``, ``wall_seconds``, model-specific
fields in ``extra``, readable as attributes: ``res.messages``). Engines
return it and never print; the command line renders :meth:`SimResult.as_dict`
(the JSON contract of DESIGN.md), Jupyter renders :meth:`_repr_html_`.

``status``: ``0`` the estimate is trustworthy; ``1`` the configuration is
**unstable** (bound or trend rule of :mod:`.instability`, or the allocation LP
says no policy can stabilise it): the run's number is not an estimate of
anything, so ``mean`` is NaN (``null`` in :meth:`as_dict`) and the number is
kept as ``mean_untrusted``. ``success`` is ``status == 0``. The class follows
the project's result protocol (:mod:`hetsched.results`).

``per_class`` is a list of dicts, one per class: ``class`` (1-based),
``mean`` and ``ci`` of the metric for that class, and other per-class
measures under their own names (e.g. ``Q``, ``Q_ci``, ``W``, ``W_ci``).

:func:`from_replications` builds one from a list of per-replication dicts.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ...results import OK, UNSTABLE, Result, fmt as _fmt, jsonable as _jsonable, num as _num

__all__ = ["SimResult", "STATUS_OK", "STATUS_UNSTABLE", "STATUS_NO_CI", "STATUS_MESSAGES", "per_class_entry",
           "estimate",
           "from_replications"]

STATUS_OK, STATUS_UNSTABLE = OK, UNSTABLE
#: a trace replay whose windows cannot support a confidence interval (hetsched.traces.estimate)
STATUS_NO_CI = 3
STATUS_MESSAGES = {STATUS_OK: "ok", STATUS_UNSTABLE: "unstable", STATUS_NO_CI: "no CI"}
METRICS = {"Q": "time-average number in system", "W": "mean completion time", "cost": "long-run average cost"}




@dataclass(repr=False)
class SimResult(Result):
    """Replicated estimate of one simulated model under one policy (see module docstring)."""

    STATUS = {STATUS_OK: "ok: the estimate is trustworthy",
              STATUS_UNSTABLE: "unstable: the queues grow, the run's numbers estimate nothing",
              STATUS_NO_CI: "no CI: a trace replay's windows cannot support a confidence interval "
                            "(mean = the replay's own value; the message says why)"}

    status: int
    message: str
    policy: str
    metric: str
    mean: float
    ci: tuple[float, float]
    per_class: list[dict]
    events: int
    wall_seconds: float
    model: str = ""
    scenario: str = ""
    reps: int = 0
    horizon: float | None = None
    seed: int | None = None
    rel_half_width: float = float("nan")
    options: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    replications: list[dict] = field(default_factory=list, repr=False)
    #: per-task records (a DataFrame, ``records=True``; issue 13), else None; never in :meth:`as_dict`
    records: Any = field(default=None, repr=False)
    #: the run's number when the configuration is unstable (``mean`` is then NaN), else NaN
    mean_untrusted: float = float("nan")

    def __post_init__(self) -> None:
        self.set_estimate(self.mean, self.ci, self.rel_half_width)

    def set_estimate(self, mean: float, ci, rel_half_width: float) -> None:
        """Store an estimate; for an unstable run it goes to ``mean_untrusted`` and ``mean``/``ci`` are NaN."""
        if self.status == STATUS_UNSTABLE:
            if math.isfinite(float(mean)):
                self.mean_untrusted = float(mean)
            nan = float("nan")
            self.mean, self.ci, self.rel_half_width = nan, (nan, nan), nan
            self.per_class = [_untrusted_class(pc) for pc in self.per_class]
        else:
            self.mean, self.ci, self.rel_half_width = float(mean), (float(ci[0]), float(ci[1])), float(rel_half_width)

    @property
    def seconds(self) -> float:
        """Wall time of the simulation itself (the protocol's name for ``wall_seconds``)."""
        return self.wall_seconds

    # ------------------------------------------------------------------ derived
    @property
    def unstable(self) -> bool:
        return self.status == STATUS_UNSTABLE

    def __getattr__(self, name: str):
        # model-specific diagnostics (``messages``, ``contacted``, ...) read as attributes
        if name.startswith("_") or "extra" not in self.__dict__:
            raise AttributeError(name)
        try:
            return self.__dict__["extra"][name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    # ------------------------------------------------------------------ views
    def _frame_rows(self):
        ids = {"model": self.model, "scenario": self.scenario, "policy": self.policy}
        bad = self.unstable
        nan = float("nan")

        def row(measure, value, ci, **more):
            r = {**ids, **more, "measure": measure, "value": nan if bad else value,
                 "ci_low": nan if bad or not ci else ci[0], "ci_high": nan if bad or not ci else ci[1]}
            if bad:
                r["value_untrusted"] = value
            return r

        yield row(self.metric, self.mean_untrusted if bad else self.mean, None if bad else self.ci)
        names = self.extra.get("class_names")
        for pc in self.per_class:
            c = int(pc["class"])
            more = {"class": c}
            if names:
                more["class_name"] = names[c - 1]
            for k, v in pc.items():
                if k in ("class", "ci") or k.endswith("_ci") or isinstance(v, (list, tuple, dict)) or v is None:
                    continue
                key = k[: -len("_untrusted")] if k.endswith("_untrusted") else k
                name = self.metric if key == "mean" else key
                if key == "mean" and self.metric in pc:
                    continue  # the same number under the metric's own name
                ci = pc.get("ci") if key == "mean" else pc.get(f"{key}_ci")
                yield row(name, v, ci, **more)

    def replications_frame(self):
        """The replications as a pandas DataFrame, one row per replication (wide).

        Scalar fields become columns; per-class lists ``x`` become columns
        ``x_1 .. x_N``; nested structures are left out.
        """
        import pandas as pd

        rows = []
        for r, rep in enumerate(self.replications):
            row: dict[str, Any] = {"rep": r}
            for k, v in rep.items():
                if isinstance(v, (bool, int, float, str, np.integer, np.floating, np.bool_)):
                    row[k] = v.item() if hasattr(v, "item") else v
                elif isinstance(v, (list, tuple, np.ndarray)) and len(v) and all(
                        isinstance(x, (int, float, np.integer, np.floating)) for x in np.ravel(np.asarray(v, object))):
                    a = np.asarray(v, float)
                    if a.ndim == 1:
                        for i, x in enumerate(a):
                            row[f"{k}_{i + 1}"] = x
            rows.append(row)
        return pd.DataFrame(rows)

    def as_dict(self) -> dict:
        """The JSON object of the command-line contract (DESIGN.md), JSON-ready."""
        d: dict[str, Any] = {
            "model": self.model, "scenario": self.scenario, "policy": self.policy, "metric": self.metric,
            "mean": self.mean, "ci": list(self.ci), "rel_half_width": self.rel_half_width,
            "per_class": [dict(pc) for pc in self.per_class], "unstable": self.unstable,
            "events": int(self.events), "wall_seconds": float(self.wall_seconds), "seconds": float(self.seconds),
            "status": int(self.status), "success": bool(self.success), "message": self.message,
            "reps": self.reps, "horizon": self.horizon, "seed": self.seed,
        }
        for k, v in self.extra.items():
            d.setdefault(k, v)
        d["options"] = dict(self.options)
        if self.unstable:  # never a number for an unstable configuration
            d["mean_untrusted"] = self.mean_untrusted
            d["ci"] = [None, None]
        return _jsonable(d)

    to_json = as_dict  # the name the mapping model used before

    def _headline(self) -> str:
        who = f"{self.scenario} under {self.policy}" if self.scenario else self.policy
        if self.unstable:
            return f"{who}: UNSTABLE ({self.metric} over the run {_fmt(self.mean_untrusted)}, untrusted)"
        lo, hi = self.ci
        if self.status == STATUS_NO_CI:
            return f"{who}: {self.metric} = {_fmt(self.mean)} (no CI: see the status)"
        return f"{who}: {self.metric} = {_fmt(self.mean)}, 95% CI [{_fmt(lo)}, {_fmt(hi)}]"

    def __repr__(self) -> str:
        model = f"{self.model} model, " if self.model else ""
        return (f"SimResult({model}{self._headline()}\n"
                f"  status {self.status} ({self.message}); {self.reps} replications x {self.horizon} time units, "
                f"seed {self.seed}\n"
                f"  {self.events:,} events in {self.wall_seconds:.3g} s; .per_class, .to_frame(), .as_dict())")

    def _repr_html_(self) -> str:
        e = html.escape
        names = self.extra.get("class_names")
        rows = "".join(
            f"<tr><td>{e(str(names[pc['class'] - 1]) if names else str(pc['class']))}</td>"
            f"<td>{_fmt(pc.get('mean'))}</td>"
            f"<td>{'' if not pc.get('ci') else '[' + _fmt(pc['ci'][0]) + ', ' + _fmt(pc['ci'][1]) + ']'}</td></tr>"
            for pc in self.per_class)
        color = "#b00" if self.unstable else "#070"
        return (f"<div><b>{e(self._headline())}</b><br>"
                f"<span style='color:{color}'>status {self.status}: {e(self.message)}</span><br>"
                f"{self.reps} replications &times; {e(str(self.horizon))} time units, seed {self.seed}; "
                f"{self.events:,} events in {self.wall_seconds:.3g} s"
                f"<table><tr><th>class</th><th>{e(self.metric)}</th><th>95% CI</th></tr>{rows}</table></div>")


def _untrusted_class(pc: dict) -> dict:
    """A per-class entry of an unstable run: every number moved to ``<name>_untrusted`` (idempotent)."""
    out: dict[str, Any] = {"class": pc["class"], "mean": None, "ci": None}
    for k, v in pc.items():
        if k in ("class", "ci", "mean") and not (k == "mean" and v is not None):
            continue
        if k.endswith("_ci"):
            continue
        out[k if k.endswith("_untrusted") else f"{k}_untrusted"] = v
    return out


def estimate(values: Sequence[float]):
    """Student-t estimate of finite values (:func:`hetsched.stats.t_interval`); NaN/inf left out."""
    from ...stats import t_interval

    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    return t_interval(v)


def per_class_entry(i: int, main: Sequence[float], **others: Sequence[float]) -> dict:
    """``{"class": i+1, "mean", "ci"}`` of ``main`` over replications, plus ``name``/``name_ci`` of others."""
    e = estimate(main)
    d: dict[str, Any] = {"class": i + 1, "mean": _num(e.mean), "ci": [_num(e.low), _num(e.high)]}
    for name, vals in others.items():
        o = estimate(vals)
        d[name] = _num(o.mean)
        d[f"{name}_ci"] = [_num(o.low), _num(o.high)] if o.n else None
    return d


def from_replications(
    runs: list[dict], *, model: str, policy: str, metric: str, key: str, per_class: list[dict],
    wall_seconds: float, unstable: bool, message: str = "ok", scenario: str = "", horizon: float | None = None,
    seed: int | None = None, options: dict | None = None, extra: dict | None = None,
) -> SimResult:
    """Build a :class:`SimResult` from replications (``runs[r][key]`` the metric of replication ``r``;
    ``runs[r]["events"]`` its event count)."""
    est = estimate([r[key] for r in runs])
    return SimResult(
        status=STATUS_UNSTABLE if unstable else STATUS_OK, message=message, policy=policy, metric=metric,
        mean=float(est.mean), ci=(float(est.low), float(est.high)), per_class=per_class,
        events=int(sum(int(r.get("events", 0)) for r in runs)), wall_seconds=float(wall_seconds), model=model,
        scenario=scenario, reps=len(runs), horizon=horizon, seed=seed, rel_half_width=float(est.rel_half_width),
        options=dict(options or {}), extra=dict(extra or {}), replications=runs,
    )
