"""Parameters of the co-allocation model (seed 000, §2 and §5) and the size of its truncated state space.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np

from ...errors import ModelError

__all__ = ["CONFIGS", "CoallocParams", "n_states", "n_pairs", "coalloc_memory_bytes"]

#: the six server configurations ``(x1, x2, x11)`` with ``x1 + 2 x2 + x11 <= 2``
CONFIGS = np.array([(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1)], dtype=np.int64)

SelfLoop = Literal["pre", "post"]
Boundary = Literal["block", "absorb"]
Method = Literal["gauss-seidel", "jacobi", "policy-iteration", "modified-policy-iteration"]


def n_states(delta: int) -> int:
    """Number of states ``6 (Delta + 1) (2 Delta + 1)`` (§4).

    Derivation: ``(x1, x2, x11)`` takes the six configurations of :data:`CONFIGS`;
    ``q2`` takes ``Delta + 1`` values; ``(q1, g)`` is ``(0, 0)`` or ``q1 = 1..Delta``
    with ``g in {1, 2}``, i.e. ``2 Delta + 1`` values. These are the paper's set
    ``Lambda`` truncated at ``Delta``. All are reachable from the empty system except,
    under ``self_loop="pre"``, ``(0, 0, 0, 1, 0, 1)``, which is then only a
    post-decision state (the tests check both by a breadth-first search of the
    transition rules of :func:`coalloc_event_model`).
    """
    return 6 * (delta + 1) * (2 * delta + 1)


def n_pairs(delta: int) -> int:
    """Number of state-action pairs: every state, plus ``2 Delta (Delta + 1)`` with a choice.

    A choice exists in ``g = 2, x11 = 0, theta >= 1``: ``q1 = 1..Delta``, any ``q2``,
    ``(x1, x2) in {(0, 0), (1, 0)}``.
    """
    return n_states(delta) + 2 * delta * (delta + 1)


def coalloc_memory_bytes(delta: int) -> int:
    """Estimated peak memory (bytes) of building and solving the model at truncation ``delta``.

    Builder: states (48 B), state pointers, per-pair action/cost/kill (24 B) and the
    CSR buffers sized for 18 targets per pair (touched only where used: 6 rates per
    pair on average, 12 B each, counted twice for the trimmed copy). Default solver:
    the value vectors (5 x 8 B per state), the pre-scaled rates (8 B per rate), and
    Anderson's history (2 x 8 x 4 B per state). Used by :func:`build_coalloc` and the
    command line to refuse a ``delta`` that cannot fit before allocating anything.
    """
    if not isinstance(delta, (int, np.integer)) or delta < 1:
        raise ModelError(f"delta: the truncation level must be an integer >= 1, got {delta!r}")
    S, K = n_states(int(delta)), n_pairs(int(delta))
    nnz = 6 * K
    build = 48 * S + 8 * S + 24 * K + 12 * K + 2 * 12 * nnz
    solve = 5 * 8 * S + 8 * nnz + 4 * K + 2 * 8 * 4 * S + 3 * 8 * K
    return int(build + solve)


@dataclass(frozen=True)
class CoallocParams:
    """Parameters of the two-cluster model (§2, §5), validated on construction.

    Build from loads with :meth:`from_loads` (``rho1 = lambda1 m / (2 mu1)``,
    ``rho2 = lambda2 / mu2``, ``m = p + 2 (1 - p)``).
    """

    lam1: float
    lam2: float
    mu1: float = 1.0
    mu2: float = 1.0
    mu3: float = 0.7
    p: float = 0.6
    c1: float = 2.0
    c2: float = 1.0
    beta: float = 0.05
    delta: int = 30
    self_loop: SelfLoop = "pre"
    boundary: Boundary = "block"
    nu: float | None = None

    def __post_init__(self) -> None:
        for name in ("lam1", "lam2", "c1", "c2"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ModelError(f"{name}: must be a finite number >= 0, got {v!r}")
        for name in ("mu1", "mu2", "mu3", "beta"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ModelError(f"{name}: must be a finite number > 0, got {v!r}")
        if not (isinstance(self.p, (int, float)) and 0 <= self.p <= 1):
            raise ModelError(f"p: the probability of a one-node job must lie in [0, 1], got {self.p!r}")
        if not (isinstance(self.delta, (int, np.integer)) and self.delta >= 1):
            raise ModelError(f"delta: the truncation level must be an integer >= 1, got {self.delta!r}")
        if self.self_loop not in ("pre", "post"):
            raise ModelError(f"self_loop: expected 'pre' or 'post', got {self.self_loop!r}")
        if self.boundary not in ("block", "absorb"):
            raise ModelError(f"boundary: expected 'block' or 'absorb', got {self.boundary!r}")
        if self.nu is not None and not (self.nu >= self.max_rate and math.isfinite(self.nu)):
            raise ModelError(
                f"nu: the uniformization rate must be >= lambda1 + lambda2 + max(2 mu1, mu1 + mu3) + mu2 "
                f"= {self.max_rate:.6g}, got {self.nu!r}"
            )

    @classmethod
    def from_loads(
        cls,
        rho: float | None = None,
        rho1: float | None = None,
        rho2: float | None = None,
        *,
        mu1: float = 1.0,
        mu2: float = 1.0,
        p: float = 0.6,
        **kw: Any,
    ) -> "CoallocParams":
        """Parameters from loads (§5): ``rho`` sets both ``rho1`` and ``rho2``."""
        if rho is not None:
            if rho1 is not None or rho2 is not None:
                raise ModelError("rho: give either rho or rho1 and rho2, not both")
            rho1 = rho2 = rho
        if rho1 is None or rho2 is None:
            raise ModelError("rho1, rho2: both loads are needed (or rho for both)")
        for name, v in (("rho1", rho1), ("rho2", rho2)):
            if not (math.isfinite(v) and v >= 0):
                raise ModelError(f"{name}: must be a finite number >= 0, got {v!r}")
        if not 0 <= p <= 1:
            raise ModelError(f"p: the probability of a one-node job must lie in [0, 1], got {p!r}")
        m = p + 2 * (1 - p)
        return cls(lam1=2 * rho1 * mu1 / m, lam2=rho2 * mu2, mu1=mu1, mu2=mu2, p=p, **kw)

    @property
    def m(self) -> float:
        """Mean number of nodes of a cluster-1 job, ``p + 2 (1 - p)``."""
        return self.p + 2 * (1 - self.p)

    @property
    def rho1(self) -> float:
        return self.lam1 * self.m / (2 * self.mu1)

    @property
    def rho2(self) -> float:
        return self.lam2 / self.mu2

    @property
    def rho(self) -> float:
        return 0.5 * (self.rho1 + self.rho2)

    @property
    def max_rate(self) -> float:
        """Largest exit rate of any state: ``lambda1 + lambda2 + max(2 mu1, mu1 + mu3) + mu2``."""
        return self.lam1 + self.lam2 + max(2 * self.mu1, self.mu1 + self.mu3) + self.mu2

    @property
    def nu_used(self) -> float:
        """Uniformization rate: ``nu`` or the printed bound ``lambda1 + lambda2 + 2 mu1 + mu2 + mu3`` (§3)."""
        if self.nu is not None:
            return float(self.nu)
        return self.lam1 + self.lam2 + 2 * self.mu1 + self.mu2 + self.mu3

    def overload_reason(self) -> str | None:
        """Why the *untruncated* system is unstable under every policy, or ``None`` if no bound proves it.

        The truncated model always has an optimal policy; when this is not ``None``,
        that policy only describes a system that blocks arrivals at ``Delta``. The
        bounds (work conservation: ``rho2 < 1``, and the fluid bound on what cluster 1
        can carry when co-allocating as much as cluster 2 allows) are those of
        :func:`hetsched.mdp.stability.coalloc_stability`.
        """
        from ..stability import coalloc_stability

        st = coalloc_stability(self)
        return st["message"].removeprefix("unstable under every policy: ").split("; the policy")[0] \
            if st["stable"] is False else None

    def with_(self, **kw: Any) -> "CoallocParams":
        return replace(self, **kw)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(rho1=self.rho1, rho2=self.rho2, rho=self.rho, m=self.m, nu_used=self.nu_used)
        return d
