"""Performance metrics of seed 002: CP (Eq. 1), MCP and LBF (§5).

For one cluster, with makespan ``Gamma`` (last finish minus first start), idle time
``omega`` (idle computer-time inside the makespan window, the sum of the idle
periods of the cluster's computers, as in TITAN) and over-deadline ``theta`` (sum
over its jobs of ``max(0, finish - deadline)``):

``CP = (W^m Gamma + W^i omega + W^o theta) / (W^i + W^m + W^o)``.

Eq. 1 as printed pairs ``W^i`` with the makespan and ``W^m`` with the idle time; by
default we pair each weight with the metric its letter names (m: makespan, i: idle,
o: over-deadline, ``pairing="letters"``); ``pairing="literal"`` takes Eq. 1 as printed
(see ``docs/_parts/assumptions-muscle.md``). Lower is better.

``MCP`` is the mean of the clusters' CP and ``LBF`` their standard deviation
(population form, ``ddof=0``).

HPC workload metrics (:func:`workload_metrics`; Feitelson, Rudolph &
Schwiegelshohn 2005), per job: waiting time ``start - arrival``, response time
``finish - arrival``, bounded slowdown ``max(1, (wait + run) / max(run, tau))``
with ``run = finish - start`` (at the processors and on the cluster the
scheduler chose) and the usual threshold ``tau`` = 10 time units (seconds for an
SWF log, :data:`BSLD_TAU`); per cluster, the utilisation: busy processor-time
over ``m_j`` times the schedule's span ``[first arrival, last finish]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError

__all__ = ["CPWeights", "PAIRINGS", "comprehensive_performance", "cluster_metrics", "mcp_lbf", "workload_metrics",
           "BSLD_TAU"]

#: threshold of the bounded slowdown, in the workload's time unit (seconds for an SWF log)
BSLD_TAU = 10.0


#: how the weights of Eq. 1 meet the metrics: ``letters`` (``w_m`` x makespan, ``w_i`` x idle time)
#: or ``literal`` (Eq. 1 as printed: ``W^i`` x makespan, ``W^m`` x idle time)
PAIRINGS = ("letters", "literal")


@dataclass(frozen=True)
class CPWeights:
    """Weights of Eq. 1: over-deadline ``w_o``, makespan ``w_m``, idle time ``w_i``
    (defaults: the Fig. 2 caption, ``(W^o, W^m, W^i) = (4, 3, 1)``), and how they pair
    with the metrics (:data:`PAIRINGS`; default ``letters``)."""

    w_o: float = 4.0
    w_m: float = 3.0
    w_i: float = 1.0
    pairing: str = "letters"

    def __post_init__(self) -> None:
        if self.pairing not in PAIRINGS:
            raise ModelError(f"pairing: expected one of {', '.join(PAIRINGS)}, got {self.pairing!r}")
        for name in ("w_o", "w_m", "w_i"):
            v = getattr(self, name)
            if not (v >= 0 and np.isfinite(v)):
                raise ModelError(f"{name}: weight must be >= 0 and finite, got {v}")
        if self.w_o + self.w_m + self.w_i <= 0:
            raise ModelError("weights: at least one of w_o, w_m, w_i must be positive")

    def as_array(self) -> np.ndarray:
        """The weights of ``[makespan, idle time, over-deadline]``, the order the compiled kernels use:
        ``[w_m, w_i, w_o]`` (letters) or ``[w_i, w_m, w_o]`` (literal)."""
        if self.pairing == "literal":
            return np.array([self.w_i, self.w_m, self.w_o], dtype=np.float64)
        return np.array([self.w_m, self.w_i, self.w_o], dtype=np.float64)


def comprehensive_performance(makespan, idle, over_deadline, weights: CPWeights = CPWeights()):
    """Eq. 1 (see module doc for the weight pairing)."""
    wk, wi, wo = weights.as_array()
    return (wk * np.asarray(makespan) + wi * np.asarray(idle) + wo * np.asarray(over_deadline)) / (wk + wi + wo)


def cluster_metrics(cluster, start, finish, size, deadline, sizes_m, weights: CPWeights = CPWeights()) -> dict:
    """Per-cluster makespan, idle time, over-deadline, CP of a complete schedule."""
    cluster = np.asarray(cluster)
    n_c = len(sizes_m)
    out = {k: np.zeros(n_c) for k in ("makespan", "idle", "over_deadline", "CP", "busy")}
    out["jobs"] = np.zeros(n_c, dtype=np.int64)
    for j in range(n_c):
        sel = cluster == j
        if not sel.any():
            continue
        st, fi = start[sel], finish[sel]
        busy = float(np.sum(size[sel] * (fi - st)))
        gamma = float(fi.max() - st.min())
        out["makespan"][j] = gamma
        out["busy"][j] = busy
        out["idle"][j] = max(sizes_m[j] * gamma - busy, 0.0)
        out["over_deadline"][j] = float(np.sum(np.maximum(fi - deadline[sel], 0.0)))
        out["jobs"][j] = int(sel.sum())
    out["CP"] = comprehensive_performance(out["makespan"], out["idle"], out["over_deadline"], weights)
    return out


def mcp_lbf(cp: np.ndarray) -> tuple[float, float]:
    """``MCP = mean(CP_j)``, ``LBF = std(CP_j)`` (population standard deviation)."""
    cp = np.asarray(cp, dtype=np.float64)
    return float(cp.mean()), float(cp.std())


def workload_metrics(arrival, start, finish, cluster, size, sizes_m, tau: float = BSLD_TAU) -> dict:
    """Per-job ``wait``, ``response``, ``bounded_slowdown`` and per-cluster ``utilisation`` (module doc).

    Returns arrays ``wait``, ``response``, ``bounded_slowdown`` (one per job),
    ``utilisation`` (one per cluster), the ``span`` and ``tau``, and the means
    ``mean_wait``, ``mean_response``, ``mean_bsld``.
    """
    from ..traces.replay import hpc_metrics

    a, st, fi = (np.asarray(x, np.float64) for x in (arrival, start, finish))
    m = hpc_metrics(a, st, fi, tau=float(tau))
    sizes = np.asarray(sizes_m, np.float64)
    cl = np.asarray(cluster, np.int64)
    busy = np.bincount(cl, weights=np.asarray(size, np.float64) * m["run"], minlength=sizes.size)[:sizes.size]
    span = float(fi.max() - a.min()) if a.size else 0.0
    util = busy / (sizes * span) if span > 0 else np.full(sizes.size, np.nan)
    n = max(a.size, 1)
    return {"wait": m["wait"], "response": m["response"], "bounded_slowdown": m["bounded_slowdown"],
            "utilisation": util, "span": span, "tau": float(tau), "mean_wait": float(m["wait"].sum() / n),
            "mean_response": float(m["response"].sum() / n), "mean_bsld": float(m["bounded_slowdown"].sum() / n)}
