"""Monitoring and the allocation LP of the dispatcher (thesis §3.3, §3.5.2).

:class:`Monitor` owns what the policies' LP needs: the arrival-rate estimates
``alpha``, the observed execution times per (class, worker), ``lambda*`` and the
support of ``delta*`` (which classes each machine may take under LPAS_DG).

*When the LP is solved.* Every event that changes what the LP sees — a worker
joining or leaving, a machine declared silent or answering again, a machine
taken down or up, an estimate replaced after drift — marks the LP *stale*
(:meth:`Monitor.mark`). With ``resolve_every=None`` (the default, §3.3: "a new
``delta*`` must be produced at every availability/unavailability event") a stale
LP is re-solved at the dispatcher's next pass, i.e. at once. With
``resolve_every=T`` seconds it is re-solved only at the instants ``t0 + k T``
(``t0`` = the first solve), and only if something changed since the last solve
— the periodic ``T_system`` of §3.5.2, where the machines' availabilities reach
the scheduler once per period. Between two solves every machine keeps the
support it had; a machine that joined meanwhile may take every class it has a
rate for until the next solve includes it.

*Drift* (recommendations 1-3 of §3.5.2): every ``monitor_interval`` seconds the
observed arrival rate of each class is compared with its estimate; at every
completion the observed execution rate of the pair (class, worker); with
``delay_correction`` the LP uses ``p_ij mu_ij``, ``p_ij = (t5-t4)/(t7-t1)``. An
estimate is replaced when it differs from the observation by more than
``drift_threshold`` (relative) after ``min_samples`` observations.

The LP (3.1)-(3.3) is solved over the machines that are up and not silent: one
column per machine up to 100 machines for LPAS_DG (``lp_grouping="auto"``, the
simulator's rule), interchangeable machines aggregated beyond (and always for
the robust variant, which uses the central solution).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np

from ..errors import ModelError, UnstableError
from ..policies.pull import LPAS_DG, LPAS_DG_ROBUST
from .options import DispatchOptions

__all__ = ["Monitor"]


class Monitor:
    """LP solves, arrival and execution-rate monitoring (module docstring).

    ``log`` receives event dicts (``{"t": ..., "event": "lp" | "drift", ...}``).
    Machines are the objects of :mod:`hetsched.dispatch.state` (fields ``rate``,
    ``a``, ``up``, ``silent``, ``worker``, ``eligible``).
    """

    def __init__(self, options: DispatchOptions, classes: list[str], log: Callable[[dict], None], now: float):
        self.o = options
        self.classes = classes
        self.N = N = len(classes)
        self.code = options.code
        self.uses_lp = self.code in (LPAS_DG, LPAS_DG_ROBUST)
        if options.alpha is not None and len(options.alpha) != N:
            raise ModelError(f"alpha: expected {N} arrival rates > 0 (one per class), got {list(options.alpha)}")
        self.alpha = None if options.alpha is None else np.array(options.alpha, dtype=float)
        self.log = log
        self.lam = float("nan")
        self.solves = 0
        self.stale = True
        self.stale_since = now                # the first change since the last solve
        self.t0: float | None = None          # first solve (periodic re-solves are at t0 + k T)
        self.arr_count = np.zeros(N, dtype=np.int64)
        self.arr_since = now
        self.obs: dict[tuple[int, str], list[float]] = {}  # (class, worker) -> [n, sum exec, sum t7-t1]
        self.initial_unstable = False

    # ------------------------------------------------------------------ when to solve
    def mark(self, now: float) -> None:
        """Something the LP sees changed at time ``now``."""
        if not self.stale:
            self.stale = True
            self.stale_since = now

    def _when(self) -> float:
        """When the stale LP is re-solved: at once, or at the first period boundary at or after the change."""
        T = self.o.resolve_every
        if T is None or self.t0 is None:
            return -math.inf
        k = math.ceil((self.stale_since - self.t0) / T - 1e-9)
        return self.t0 + max(k, 0) * T

    def due(self, now: float) -> bool:
        """Is a re-solve due now?"""
        return self.stale and now >= self._when()

    def wake(self) -> float | None:
        """When a pending periodic re-solve will run (None: nothing pending, or not periodic)."""
        if not self.stale or self.o.resolve_every is None or self.t0 is None:
            return None
        return self._when()

    # ------------------------------------------------------------------ the LP
    def solve(self, machines: Iterable, now: float, initial: bool = False) -> None:
        """Re-solve over the live machines and set every machine's ``eligible`` (LP support)."""
        self.stale = False
        if self.t0 is None:
            self.t0 = now
        machines = list(machines)
        for m in machines:
            m.eligible = m.rate > 0
        live = [m for m in machines if m.up and not m.silent]
        if self.alpha is None or not live:
            return
        from ..errors import SolverError
        from ..lp import solve_allocation

        mu = np.array([m.rate * self.p(m) for m in live]).T  # N x M'
        a = np.array([m.a for m in live])
        grouping = self.o.lp_grouping
        if grouping == "auto":  # the simulator's rule (hetsched.sim.desktop)
            grouping = "machines" if self.code == LPAS_DG and len(live) <= 100 else "groups"
        index: dict = {}
        col = []
        for j in range(mu.shape[1]):
            key = j if grouping == "machines" else (tuple(np.round(mu[:, j], 12)), round(a[j], 12))
            col.append(index.setdefault(key, len(index)))
        col_arr = np.asarray(col)
        first = [col.index(c) for c in range(len(index))]
        counts = np.bincount(col_arr)
        solution = "central" if self.code == LPAS_DG_ROBUST else "vertex"
        try:
            res = solve_allocation(mu[:, first], self.alpha, a=a[first], counts=counts,
                                   solution=solution).raise_for_status()
        except (ModelError, SolverError) as exc:
            self.lam = 0.0
            self.log({"t": now, "event": "lp", "lambda": 0.0, "note": str(exc)})
            if initial:
                self.initial_unstable = True
                if not self.o.allow_unstable:
                    raise UnstableError(f"the system cannot be stabilised ({exc})") from exc
            return
        self.solves += 1
        self.lam = float(res.lam)
        self.log({"t": now, "event": "lp", "lambda": self.lam, "machines": len(live)})
        if initial and not res.stabilizable:
            self.initial_unstable = True
            if not self.o.allow_unstable:
                raise UnstableError(
                    f"the system cannot be stabilised: lambda* = {self.lam:.4f} <= 1 for alpha = "
                    f"{self.alpha.tolist()} on {len(live)} machine(s) (no policy, {self.o.policy!r} included, "
                    f"keeps the queues bounded; reduce alpha or add workers, or pass allow_unstable)")
        if self.uses_lp:
            sup = res.delta > res.zero_tol
            for m, c in zip(live, col_arr):
                m.eligible = sup[:, c] & (m.rate > 0)

    def p(self, m) -> np.ndarray:
        """Delay correction ``p_ij`` (recommendation 3) for the LP, 1 where unknown."""
        p = np.ones(self.N)
        if not self.o.delay_correction:
            return p
        for i in range(self.N):
            o = self.obs.get((i, m.worker))
            if o is not None and o[0] >= self.o.min_samples and o[2] > 0:
                p[i] = min(1.0, o[1] / o[2])
        return p

    # ------------------------------------------------------------------ drift
    def arrival(self, i: int, n: int = 1) -> None:
        self.arr_count[i] += n

    def check_arrivals(self, now: float) -> None:
        """Recommendation 1: compare the observed arrival rates of the last interval with the estimates."""
        elapsed = (now - self.arr_since) / self.o.time_unit
        if self.alpha is None or not self.o.adapt_arrivals or elapsed <= 0:
            return
        changed = False
        for i in range(self.N):
            n = self.arr_count[i]
            if n >= self.o.min_samples:
                obs = n / elapsed
                if abs(obs - self.alpha[i]) > self.o.drift_threshold * self.alpha[i]:
                    self.log({"t": now, "event": "drift", "what": "alpha", "class": self.classes[i],
                              "estimate": float(self.alpha[i]), "observed": float(obs)})
                    self.alpha[i] = obs
                    changed = True
        self.arr_count[:] = 0
        self.arr_since = now
        if changed:
            self.mark(now)

    def observe_exec(self, m, machines: Iterable, i: int, exec_s: float, total_s: float, now: float) -> None:
        """Recommendation 2 (and 3): one completed task of class ``i`` on machine ``m``."""
        if not (self.o.adapt_rates or self.o.delay_correction):
            return
        o = self.obs.setdefault((i, m.worker), [0, 0.0, 0.0])
        o[0] += 1
        o[1] += exec_s
        o[2] += total_s
        if not self.o.adapt_rates or o[0] < self.o.min_samples or o[1] <= 0:
            return
        est_eff = m.rate[i] * m.a
        obs_eff = o[0] * self.o.time_unit / o[1]
        if est_eff > 0 and abs(obs_eff - est_eff) > self.o.drift_threshold * est_eff:
            new = obs_eff / m.a
            for mm in machines:
                if mm.worker == m.worker:
                    mm.rate[i] = new
            self.log({"t": now, "event": "drift", "what": "mu", "class": self.classes[i], "worker": m.worker,
                      "estimate": float(est_eff / m.a), "observed": float(new)})
            o[:] = [0, 0.0, 0.0]
            self.mark(now)
        elif self.o.delay_correction and o[0] % self.o.min_samples == 0:
            self.mark(now)
