"""One-call analysis: explore, eliminate vanishing markings, solve, expect rewards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .net import Net, Reward
from .reach import CTMC, DEFAULT_MAX_STATES, StateSpace, explore, to_ctmc
from .solve import SteadyState, expect, steady_state, transient

__all__ = ["SRNResult", "solve"]


@dataclass
class SRNResult:
    """Steady-state solution of a net; ``expect(reward)`` gives measures."""

    space: StateSpace
    ctmc: CTMC
    steady: SteadyState

    @property
    def pi(self) -> np.ndarray:
        return self.steady.pi

    @property
    def success(self) -> bool:
        return self.steady.success

    def expect(self, r: Reward) -> float:
        """Steady-state expectation of the reward rate ``r``."""
        return expect(self.ctmc, self.steady.pi, r)

    def transient(self, r: Reward, times) -> np.ndarray:
        """Expected reward rate at each of ``times`` from the initial marking."""
        P = transient(self.ctmc, times)
        from .solve import reward_vector

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
        )
        return d


def solve(net: Net, *, method: str = "auto", tol: float = 1e-13, max_states: int = DEFAULT_MAX_STATES,
          **kw) -> SRNResult:
    """Steady-state analysis of ``net`` (see :func:`explore`, :func:`to_ctmc`, :func:`steady_state`)."""
    space = explore(net, max_states=max_states)
    ctmc = to_ctmc(space)
    st = steady_state(ctmc, method=method, tol=tol, **kw)
    return SRNResult(space, ctmc, st)
