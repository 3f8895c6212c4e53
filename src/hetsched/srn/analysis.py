"""One-call analysis: explore, eliminate vanishing markings, solve, and measure."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import ModelError
from ..results import Result, fmt, jsonable
from .expr import Measure, parse_measure
from .net import Net, Reward
from .reach import CTMC, DEFAULT_MAX_STATES, StateSpace, explore, to_ctmc
from .steady import SteadyState, expect, steady_state, transient

__all__ = ["SRNResult", "solve", "as_measure"]


@dataclass(repr=False)
class SRNResult(Result):
    """Steady-state solution of a net (the result protocol of :mod:`hetsched.results`).

    ``tokens`` (expected tokens of each place), ``throughputs`` (firing rate of each
    transition, timed and immediate) and ``measures`` (the performance indices the net
    or the caller defines) are dicts by name; when the solver did not converge they
    hold NaN and the numbers it produced are under ``*_untrusted``. ``expect(reward)``
    evaluates any reward on the solution.
    """

    STATUS: ClassVar[dict[int, str]] = SteadyState.STATUS

    space: StateSpace
    ctmc: CTMC
    steady: SteadyState
    raw_tokens: dict[str, float] = field(default_factory=dict)
    raw_throughputs: dict[str, float] = field(default_factory=dict)
    raw_measures: dict[str, float] = field(default_factory=dict)

    # -- the protocol ------------------------------------------------------------
    @property
    def status(self) -> int:
        return int(self.steady.status)

    @property
    def message(self) -> str:
        return self.steady.message

    @property
    def seconds(self) -> float:
        return float(self.space.seconds + self.ctmc.seconds + self.steady.seconds)

    def _trusted(self, d: dict) -> dict:
        return dict(d) if self.success else {k: math.nan for k in d}

    @property
    def tokens(self) -> dict[str, float]:
        return self._trusted(self.raw_tokens)

    @property
    def throughputs(self) -> dict[str, float]:
        return self._trusted(self.raw_throughputs)

    @property
    def measures(self) -> dict[str, float]:
        return self._trusted(self.raw_measures)

    @property
    def net(self) -> Net:
        return self.space.net

    def as_dict(self) -> dict[str, Any]:
        st = self.steady
        d = {"status": self.status, "success": self.success, "message": self.message, "seconds": self.seconds,
             "net": self.net.name, **{k: v for k, v in self.net.meta.items() if k in ("file", "format", "page")},
             "states": self.space.n_tangible, "vanishing": self.space.n_vanishing,
             "solver": st.method, "residual": st.residual, "iterations": st.iterations,
             "closed_classes": st.closed_classes, "tokens": self.tokens, "throughput": self.throughputs,
             "measures": self.measures}
        if not self.success:
            d.update(tokens_untrusted=self.raw_tokens, throughput_untrusted=self.raw_throughputs,
                     measures_untrusted=self.raw_measures)
        return jsonable(d)

    def _frame_rows(self):
        ok = self.success
        name = self.net.name
        for kind, src in (("tokens", self.raw_tokens), ("throughput", self.raw_throughputs)):
            for el, v in src.items():
                yield {"model": name, "measure": kind, "value": v if ok else math.nan,
                       "value_untrusted": math.nan if ok else v, "element": el}
        for el, v in self.raw_measures.items():
            yield {"model": name, "measure": el, "value": v if ok else math.nan,
                   "value_untrusted": math.nan if ok else v, "element": ""}

    def _headline(self) -> str:
        sp = self.space
        return (f"net {self.net.name!r}: {sp.n_tangible} tangible markings ({sp.n_vanishing} vanishing), "
                f"{self.steady.method} residual {fmt(self.steady.residual, 2)}")

    # -- working with the solution -------------------------------------------------
    @property
    def pi(self) -> np.ndarray:
        return self.steady.pi

    def expect(self, r: Reward) -> float:
        """Steady-state expectation of the reward rate ``r`` (the solver's numbers, whatever the status)."""
        return expect(self.ctmc, self.steady.pi, r)

    def measure(self, m: str | Measure) -> float:
        """A GreatSPN performance index such as ``"E{#P} + 2 P{#Q > 0}"`` or ``"X{T1}"``."""
        from .measures import evaluate_measure

        return evaluate_measure(as_measure(self.net, "measure", m), self.ctmc, self.steady.pi)

    def transient(self, r: Reward, times) -> np.ndarray:
        """Expected reward rate at each of ``times`` from the initial marking."""
        P = transient(self.ctmc, times)
        from .steady import reward_vector

        return P @ reward_vector(self.ctmc, r)

    def stats(self) -> dict[str, Any]:
        d = self.space.stats()
        d.update(
            ctmc_nonzeros=int(self.ctmc.Q.nnz),
            elimination_seconds=self.ctmc.seconds,
            solver=self.steady.method,
            solver_seconds=self.steady.seconds,
            residual=self.steady.residual,
            iterations=self.steady.iterations,
            transient_states=self.steady.transient_states,
            closed_classes=self.steady.closed_classes,
        )
        return d


def as_measure(net: Net, name: str, m) -> Measure | Reward:
    """A measure given as GreatSPN text, a parsed :class:`Measure` or a :class:`Reward`."""
    if isinstance(m, (Measure, Reward)):
        return m
    if isinstance(m, str):
        consts = net.meta.get("constants", {})
        return parse_measure(m, what=f"measure {name!r}", consts=consts, places=net.place_names,
                             transitions=net.transition_names)
    raise ModelError(f"measure {name!r}: expected GreatSPN text such as 'E{{#P}}', a Measure or a reward, got {m!r}")


def solve(net: Net, *, method: str = "auto", tol: float = 1e-13, max_states: int = DEFAULT_MAX_STATES,
          max_tokens=None, measures: dict[str, Any] | None = None, **kw) -> SRNResult:
    """Steady-state analysis of ``net``: explore, eliminate, solve and measure.

    Measures: the expected tokens of every place, the throughput of every
    transition, the measures the net defines (``net.measures``, e.g. read from a
    file) and ``measures`` (name -> GreatSPN text, :class:`Measure` or reward).
    See :func:`explore` (``max_states``, ``max_tokens``), :func:`to_ctmc` and
    :func:`steady_state` (``method``, ``tol`` and the rest).
    """
    from .measures import evaluate_measure, firings, token_means

    wanted = {**net.measures, **(measures or {})}
    parsed = {k: as_measure(net, k, v) for k, v in wanted.items()}   # refuse bad measures before solving
    space = explore(net, max_states=max_states, max_tokens=max_tokens)
    ctmc = to_ctmc(space)
    st = steady_state(ctmc, method=method, tol=tol, **kw)
    res = SRNResult(space, ctmc, st)
    pi = st.pi
    if np.all(np.isfinite(pi)):
        res.raw_tokens = dict(zip(net.place_names, token_means(ctmc, pi).tolist()))
        fire = firings(ctmc, pi)
        X = np.bincount(fire[1], weights=fire[2], minlength=len(net.transitions))
        res.raw_throughputs = dict(zip(net.transition_names, X.tolist()))
        for k, m in parsed.items():
            res.raw_measures[k] = (expect(ctmc, pi, m) if isinstance(m, Reward)
                                   else evaluate_measure(m, ctmc, pi, fire))
    return res
