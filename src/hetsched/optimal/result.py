"""The answer of :func:`hetsched.optimal_routing`: :class:`OptimalRouting` (the project's result protocol).

Classes and machines are numbered from 1 in every output; ``route`` and
``table`` take and give those numbers (0 = the arrival is blocked: every
machine that can run it is full in the truncated model).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np

from ..errors import ModelError
from ..results import Result, fmt, jsonable

__all__ = ["OptimalRouting"]

OK, UNSTABLE, TRUNCATION, NOT_CONVERGED = 0, 1, 2, 3
#: largest model whose policy table goes into as_dict() (counts only); policy_frame() has every state
JSON_TABLE_STATES = 20_000


@dataclass(repr=False)
class OptimalRouting(Result):
    """The exact optimal routing of a mapping system (see :func:`hetsched.optimal_routing`)."""

    STATUS: ClassVar[Mapping[int, str]] = {
        OK: "ok: exact optimum of the truncated model, and the truncation is negligible",
        UNSTABLE: "unstable: no policy keeps the system stable, so there is no optimal mean",
        TRUNCATION: "truncation not negligible within max_states: the value is untrusted (value_untrusted)",
        NOT_CONVERGED: "the solver did not converge or its answer failed the re-check (value_untrusted)",
    }

    status: int
    message: str
    seconds: float
    system: str
    title: str
    alpha: list[float]
    mu: list[list[float]]
    load: float
    alphabets: list[int]
    state_text: str
    tol: float
    penalty: float
    value: float = math.nan
    value_untrusted: float = math.nan
    W: float = math.nan
    throughput: float = math.nan
    buffer: int | None = None
    states: int | None = None
    pairs: int | None = None
    boundary_mass: float = math.nan
    blocking: float = math.nan
    change: float = math.nan
    error: float = math.nan
    lower: float = math.nan
    upper: float = math.nan
    iterations: int = 0
    mct_value: float | None = None
    differs_from_mct: float | None = None
    max_states: int | None = None
    next_states: int | None = None
    class_names: list[str] | None = None
    machine_names: list[str] | None = None
    truncation: list = field(default_factory=list)
    _level: Any = field(default=None, repr=False)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _names(system) -> tuple[list[str] | None, list[str]]:
        cn = getattr(system, "class_names", None)
        mn = getattr(system, "machine_names", None) or system.machine_labels()
        return (list(cn) if cn else None), list(mn)

    @classmethod
    def unstable(cls, *, system, alpha, mu, load, alphabets, tol, state_text, penalty, seconds, message):
        cn, mn = cls._names(system)
        return cls(status=UNSTABLE, message=message, seconds=seconds, system=system.id, title=system.title,
                   alpha=[float(a) for a in alpha], mu=np.asarray(mu).tolist(), load=float(load),
                   alphabets=list(alphabets), state_text=state_text, tol=tol, penalty=penalty, class_names=cn,
                   machine_names=mn)

    @classmethod
    def solved(cls, *, system, alpha, mu, load, alphabets, tol, state_text, penalty, levels, mct_value, max_states,
               next_states, seconds):
        cn, mn = cls._names(system)
        final = levels[-1]
        if not (final.converged and final.certified):
            status = NOT_CONVERGED
            why = (f"relative value iteration: {final.message}" if not final.converged else
                   "the optimal policy's stationary cost lies outside the solver's bounds")
            message = f"not trusted at buffer B={final.buffer}: {why}"
        elif final.boundary_mass < tol and final.error < tol:
            status = OK
            message = (f"exact at buffer B={final.buffer} ({final.states:,} states): boundary mass "
                       f"{final.boundary_mass:.2g} and estimated truncation error {final.error:.2g} are below "
                       f"tol={tol:g}")
        else:
            status = TRUNCATION
            if len(levels) < 3:
                what = (f"boundary mass {final.boundary_mass:.2g} (the truncation error needs three buffers "
                        f"solved; buffer >= 3)")
            else:
                what = f"boundary mass {final.boundary_mass:.2g}, estimated truncation error {final.error:.2g}"
            nxt = "" if next_states is None else (f"; the next buffer has {next_states:,} states (max_states="
                                                  f"{max_states:,})")
            message = (f"truncation not negligible at buffer B={final.buffer} ({final.states:,} states): {what}, "
                       f"tol={tol:g}{nxt}")
        ok = status == OK
        value = final.value
        W = value / final.throughput if final.throughput > 0 else math.nan
        res = cls(status=status, message=message, seconds=seconds, system=system.id, title=system.title,
                  alpha=[float(a) for a in alpha], mu=np.asarray(mu).tolist(), load=float(load),
                  alphabets=list(alphabets), state_text=state_text, tol=tol, penalty=penalty,
                  value=value if ok else math.nan, value_untrusted=value, W=W if ok else math.nan,
                  throughput=final.throughput, buffer=final.buffer, states=final.states, pairs=final.pairs,
                  boundary_mass=final.boundary_mass, blocking=final.blocking, change=final.change, error=final.error,
                  lower=final.lower, upper=final.upper, iterations=final.iterations, mct_value=mct_value,
                  max_states=max_states, next_states=next_states, class_names=cn, machine_names=mn,
                  truncation=[lv.as_dict() for lv in levels], _level=final)
        res.differs_from_mct = res._differs_from_mct()
        return res

    # ------------------------------------------------------------------ the policy
    @property
    def N(self) -> int:
        return len(self.alpha)

    @property
    def M(self) -> int:
        return len(self.mu[0])

    @property
    def counts_suffice(self) -> bool:
        return all(a <= 1 for a in self.alphabets)

    @property
    def state_kind(self) -> str:
        return "counts" if self.counts_suffice else "sequences"

    def _need_policy(self) -> Any:
        if self._level is None or self._level.policy is None:
            raise ModelError(f"optimal routing of {self.system}: no policy ({self.message})")
        return self._level

    @property
    def routes(self) -> np.ndarray:
        """``(states, N)``: the machine (from 0) chosen for each class in each state of the truncated model;
        -1 where the class is blocked."""
        lv = self._need_policy()
        if getattr(lv, "routes", None) is not None:
            return lv.routes
        sp = lv.space
        r = sp.actions[lv.policy].copy()
        xs = sp.coords()
        for i, E in enumerate(sp.eligible):
            allf = np.ones(sp.n_states, bool)
            for j in E:
                allf &= sp.machines[j].length[xs[j]] == sp.buffer
            r[allf, i] = -1
        r.setflags(write=False)
        lv.routes = r
        return r

    def route(self, cls: int, queues) -> int:
        """The machine (from 1) the optimal policy gives a class-``cls`` arrival (``cls`` from 1) when machine
        ``j`` holds the classes ``queues[j - 1]`` (from 1, the one in service first); 0 = blocked."""
        lv = self._need_policy()
        sp = lv.space
        if isinstance(cls, bool) or not isinstance(cls, (int, np.integer)) or not 1 <= cls <= self.N:
            raise ModelError(f"cls: expected a class number in 1..{self.N}, got {cls!r}")
        if isinstance(queues, (str, bytes)) or len(queues) != self.M:
            raise ModelError(f"queues: expected {self.M} lists (one per machine) of class numbers, got {queues!r}")
        q = []
        for j, items in enumerate(queues):
            row = []
            for c in items:
                if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= c <= self.N:
                    raise ModelError(f"queues[{j}]: expected class numbers in 1..{self.N}, got {c!r}")
                row.append(int(c) - 1)
            q.append(row)
        s = sp.encode(q)
        return int(self.routes[s, cls - 1]) + 1

    def table(self, cls: int) -> np.ndarray:
        """Counts only: the machine (from 1; 0 blocked) for class ``cls`` at every vector of queue lengths,
        an array of shape ``(B + 1,) * M`` indexed by the number of tasks at each machine."""
        lv = self._need_policy()
        if not self.counts_suffice:
            raise ModelError(f"table: the state of {self.system} is the class sequence at each machine (rates depend "
                             f"on the class), not the queue lengths; use route(cls, queues) or policy_frame()")
        if isinstance(cls, bool) or not isinstance(cls, (int, np.integer)) or not 1 <= cls <= self.N:
            raise ModelError(f"cls: expected a class number in 1..{self.N}, got {cls!r}")
        shape = tuple(int(m.n) for m in lv.space.machines)
        return (self.routes[:, cls - 1] + 1).reshape(shape)

    def policy_frame(self):
        """Every state of the truncated model and the machine (from 1; 0 blocked) chosen for each class, with
        the state's stationary probability under the optimal policy (pandas DataFrame)."""
        import pandas as pd

        lv = self._need_policy()
        sp = lv.space
        r = self.routes
        xs = sp.coords()
        cols: dict[str, Any] = {"state": np.arange(sp.n_states)}
        for j, (m, x) in enumerate(zip(sp.machines, xs)):
            cols[f"n{j + 1}"] = m.length[x]
        if not self.counts_suffice:
            cols["queues"] = [self._describe(s) for s in range(sp.n_states)]
        cols["probability"] = lv.pi
        for i in range(self.N):
            cols[f"class {i + 1}"] = r[:, i] + 1
        return pd.DataFrame(cols)

    def _describe(self, s: int) -> str:
        """``"m1: 2 1 | m2: -"``: the rate symbols at each machine (1 = its fastest class rate ... )."""
        sp = self._level.space
        parts = []
        for j, seq in enumerate(sp.decode(s)):
            rates = sp.machines[j].rates
            parts.append(f"m{j + 1}: " + (" ".join(fmt(rates[c], 3) for c in seq) if seq else "-"))
        return " | ".join(parts)

    def _differs_from_mct(self) -> float | None:
        """Fraction of arrivals (stationary, not blocked) that the optimal policy routes unlike MCT."""
        from .model import greedy_policy

        lv = self._level
        if lv is None or lv.policy is None:
            return None
        sp = lv.space
        mct = sp.actions[greedy_policy(sp)]
        opt = self.routes
        lam = np.asarray(self.alpha)
        tot = 0.0
        for i in range(self.N):
            ok = opt[:, i] >= 0
            tot += lam[i] * float(lv.pi[ok & (opt[:, i] != mct[:, i])].sum())
        return tot / float(lam.sum())

    def mapping_policy(self, name: str = "optimal-table"):
        """Counts only: the optimal table as a ``@hs.mapping_policy`` for the simulator (unbounded queues).

        The table is a constant of the compiled function (one compilation per table). Beyond the buffer
        the lengths are read at ``B`` (the truncated model's boundary); where that gives no machine with
        room, the policy takes the machine of least expected completion time.
        """
        from .policy import table_policy

        lv = self._need_policy()
        if not self.counts_suffice:
            raise ModelError(f"mapping_policy: the optimal policy of {self.system} reads the class sequence at each "
                             f"machine, which a mapping policy does not see (it sees counts and work)")
        return table_policy(np.ascontiguousarray(self.routes.T), lv.space.strides, lv.space.buffer, name)

    # ------------------------------------------------------------------ protocol
    def summary(self) -> dict[str, Any]:
        """The answer without the policy (small; JSON-ready)."""
        keys = ("system", "load", "value", "value_untrusted", "W", "throughput", "buffer", "states", "pairs",
                "boundary_mass", "blocking", "change", "error", "lower", "upper", "iterations", "mct_value",
                "differs_from_mct", "tol", "penalty", "alphabets")
        d = {k: getattr(self, k) for k in keys}
        d["state"] = self.state_kind
        return jsonable(d)

    def as_dict(self) -> dict[str, Any]:
        d = {"system": self.system, "title": self.title, "alpha": self.alpha, "mu": self.mu, "load": self.load,
             "class_names": self.class_names, "machine_names": self.machine_names, "objective":
             "long-run mean number in system (Q)", "state": self.state_kind, "state_description": self.state_text,
             "alphabets": self.alphabets, "value": self.value, "W": self.W, "throughput": self.throughput,
             "buffer": self.buffer, "states": self.states, "pairs": self.pairs, "boundary_mass": self.boundary_mass,
             "blocking": self.blocking, "change": self.change, "error": self.error, "tol": self.tol, "penalty": self.penalty,
             "gain_bounds": [self.lower, self.upper], "iterations": self.iterations,
             "mct_value": self.mct_value, "differs_from_mct": self.differs_from_mct,
             "truncation": self.truncation, "max_states": self.max_states,
             "status": int(self.status), "success": self.success, "message": self.message,
             "seconds": float(self.seconds)}
        if self.status != OK:
            d["value_untrusted"] = self.value_untrusted
        if self._level is not None and self._level.policy is not None:
            if self.counts_suffice and self.states <= JSON_TABLE_STATES:
                d["policy"] = {f"class {i + 1}": self.table(i + 1).tolist() for i in range(self.N)}
                d["policy_layout"] = ("per class, an array indexed by the number of tasks at machine 1, 2, ...: "
                                      "the machine chosen (from 1; 0 = blocked)")
            else:
                d["policy"] = None
                d["policy_layout"] = ("not in JSON (" + ("sequence states" if not self.counts_suffice else
                                                        f"{self.states:,} states") +
                                      "): OptimalRouting.policy_frame() or route(cls, queues)")
        return jsonable(d)

    def _frame_rows(self):
        base = {"model": "mapping", "scenario": self.system, "policy": "optimal"}
        trusted = self.status == OK

        def row(measure, v, **kw):
            return {**base, **kw, "measure": measure, "value": v}

        if trusted:
            yield row("Q", self.value)
        else:
            yield {**row("Q", math.nan), "value_untrusted": self.value_untrusted}
        yield row("W", self.W)
        for k in ("throughput", "boundary_mass", "blocking", "change", "error", "buffer", "states"):
            yield row(k, getattr(self, k))
        if self.mct_value is not None:
            yield {**base, "policy": "mct", "measure": "Q", "value": self.mct_value, "note": "exact, same chain"}
        for lv in self.truncation:
            for k in ("value", "boundary_mass", "blocking", "change", "error", "states", "seconds"):
                yield row("Q_truncated" if k == "value" else k, lv[k], level=lv["buffer"])

    def _headline(self) -> str:
        if self.status == UNSTABLE:
            return f"{self.system}: optimal routing: {self.message}"
        val = fmt(self.value) if self.status == OK else f"{fmt(self.value_untrusted)} (untrusted)"
        mct = ""
        if self.mct_value is not None and math.isfinite(self.value_untrusted):
            gap = self.mct_value - self.value_untrusted
            mct = f"; MCT {fmt(self.mct_value)} ({100 * gap / self.value_untrusted:+.2f}%)"
        return (f"{self.system}: optimal Q = {val} (exact; {self.state_kind}, buffer {self.buffer}, "
                f"{self.states:,} states){mct}")

    def __str__(self) -> str:
        from .text import render

        return render(self)

    def _repr_html_(self) -> str:
        e = html.escape
        color = "#070" if self.success else "#b00"
        return (f"<div><b>OptimalRouting</b>: {e(self._headline())}<br>"
                f"<span style='color:{color}'>{e(self._status_line())}</span><pre>{e(str(self))}</pre></div>")
