"""The one result type of every simulator: :class:`SimResult`.

In the style of ``scipy.optimize.OptimizeResult``: a ``status`` code and its
``message``, ``success``, the answer (``metric``, ``mean``, ``ci``,
``per_class``) and diagnostics (``events``, ``wall_seconds``, model-specific
fields in ``extra``, readable as attributes: ``res.messages``). Engines
return it and never print; the command line renders :meth:`SimResult.as_dict`
(the JSON contract of DESIGN.md), Jupyter renders :meth:`_repr_html_`.

``status``: ``0`` the estimate is trustworthy; ``1`` the configuration is
**unstable** (bound or trend rule of :mod:`.instability`, or the allocation LP
says no policy can stabilise it): ``mean`` is then not an estimate of
anything, :meth:`as_dict` gives ``mean: null`` and keeps the run's value as
``mean_untrusted``. ``success`` is ``status == 0``.

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

__all__ = ["SimResult", "STATUS_OK", "STATUS_UNSTABLE", "STATUS_MESSAGES", "per_class_entry", "estimate",
           "from_replications"]

STATUS_OK, STATUS_UNSTABLE = 0, 1
STATUS_MESSAGES = {STATUS_OK: "ok", STATUS_UNSTABLE: "unstable"}
METRICS = {"Q": "time-average number in system", "W": "mean completion time", "cost": "long-run average cost"}


def _num(x):
    """JSON-friendly scalar: numpy scalars to Python, NaN/inf to None."""
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    return _num(x)


@dataclass
class SimResult:
    """Replicated estimate of one simulated model under one policy (see module docstring)."""

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

    # ------------------------------------------------------------------ derived
    @property
    def success(self) -> bool:
        return self.status == STATUS_OK

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
    def to_frame(self):
        """The replications as a pandas DataFrame, one row per replication.

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
            "events": int(self.events), "wall_seconds": float(self.wall_seconds),
            "status": int(self.status), "success": bool(self.success), "message": self.message,
            "reps": self.reps, "horizon": self.horizon, "seed": self.seed,
        }
        for k, v in self.extra.items():
            d.setdefault(k, v)
        d["options"] = dict(self.options)
        if self.unstable:  # never a number for an unstable configuration
            d["mean_untrusted"] = self.mean
            d["mean"] = None
            d["ci"] = [None, None]
            d["rel_half_width"] = None
            d["per_class"] = [{"class": pc["class"], "mean": None, "ci": None,
                               **{f"{k}_untrusted": v for k, v in pc.items()
                                  if k not in ("class", "ci") and not k.endswith("_ci")}}
                              for pc in self.per_class]
        return _jsonable(d)

    to_json = as_dict  # the name the mapping model used before

    def _headline(self) -> str:
        who = f"{self.scenario} under {self.policy}" if self.scenario else self.policy
        if self.unstable:
            return f"{who}: UNSTABLE ({self.metric} over the run {self.mean:.4g}, untrusted)"
        lo, hi = self.ci
        return f"{who}: {self.metric} = {self.mean:.4g}, 95% CI [{lo:.4g}, {hi:.4g}]"

    def __repr__(self) -> str:
        model = f"{self.model} model, " if self.model else ""
        return (f"SimResult({model}{self._headline()}\n"
                f"  status {self.status} ({self.message}); {self.reps} replications x {self.horizon} time units, "
                f"seed {self.seed}\n"
                f"  {self.events:,} events in {self.wall_seconds:.3g} s; .per_class, .to_frame(), .as_dict())")

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(
            f"<tr><td>{pc['class']}</td><td>{_fmt(pc.get('mean'))}</td>"
            f"<td>{'' if not pc.get('ci') else '[' + _fmt(pc['ci'][0]) + ', ' + _fmt(pc['ci'][1]) + ']'}</td></tr>"
            for pc in self.per_class)
        color = "#b00" if self.unstable else "#070"
        return (f"<div><b>{e(self._headline())}</b><br>"
                f"<span style='color:{color}'>status {self.status}: {e(self.message)}</span><br>"
                f"{self.reps} replications &times; {self.horizon} time units, seed {self.seed}; "
                f"{self.events:,} events in {self.wall_seconds:.3g} s"
                f"<table><tr><th>class</th><th>{e(self.metric)}</th><th>95% CI</th></tr>{rows}</table></div>")


def _fmt(x) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


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
