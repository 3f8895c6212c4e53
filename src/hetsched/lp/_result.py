"""The result of the allocation LP (:class:`AllocationResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SolverError

__all__ = ["AllocationResult"]


@dataclass
class AllocationResult:
    """Result of the allocation LP, in the style of ``scipy.optimize.OptimizeResult``.

    Attributes
    ----------
    success, status, message
        ``status`` 0 = optimal and certified (residuals and duality gap
        re-checked); 1 = solved, but the certificate failed (the answer is the
        solver's, use with care); 2 = no positive capacity: some class cannot
        run on any available machine, so ``lambda* = 0`` (``delta`` all zero,
        ``w`` the price vector that proves it); 3 = the LP solver failed
        (``lam`` is NaN). ``success`` is ``status == 0``; ``message`` names the
        field at fault.
    lam : float
        ``lambda*``, the maximum capacity.
    delta : ndarray (N, M)
        ``delta*`` per machine.
    w : ndarray (N,)
        Optimal dual prices of the class constraints, normalised to ``alpha.w = 1``.
    residuals : dict
        ``class_rows``, ``machine_rows`` (primal infeasibility), ``duality_gap``
        (relative), ``dual_bound`` and ``primal_bound`` on ``lambda*``.
    solver : str
        The route taken (HiGHS simplex / IPM, or the price route with its
        Newton steps, contested machines and master rounds).
    """

    success: bool
    status: int
    message: str
    lam: float
    delta: np.ndarray
    alpha: np.ndarray
    mu: np.ndarray
    a: np.ndarray
    solution: str
    grouped: bool
    w: np.ndarray | None = None
    delta_groups: np.ndarray | None = None
    group_labels: np.ndarray | None = None
    residuals: dict[str, float] = field(default_factory=dict)
    solver: str = ""
    iterations: int = 0
    wall_seconds: float = 0.0
    zero_tol: float = 1e-9

    def raise_for_status(self) -> "AllocationResult":
        """Raise :class:`~hetsched.errors.SolverError` with ``message`` if there is
        no usable answer (status 2 or 3); return ``self`` otherwise."""
        if self.status >= 2:
            raise SolverError(self.message)
        return self

    # ---- derived quantities (thesis §2.2.1, §2.3.1) ---------------------------
    @property
    def N(self) -> int:
        return self.delta.shape[0]

    @property
    def M(self) -> int:
        return self.delta.shape[1]

    @property
    def support(self) -> np.ndarray:
        """Boolean ``N x M``: ``delta*[i, j] != 0`` (after the zero tolerance)."""
        return self.delta > self.zero_tol

    @property
    def zeros(self) -> int:
        return int((~self.support).sum())

    @property
    def target_zeros(self) -> int:
        """``N*M + 1 - N - M`` (Proposition 2.2.1)."""
        return self.N * self.M + 1 - self.N - self.M

    @property
    def stabilizable(self) -> bool:
        """``lambda* > 1`` (Theorem 2.2.1); ``lambda* < 1`` cannot be stabilized (2.2.2)."""
        return bool(self.lam > 1.0 + 1e-12)

    @property
    def utilization(self) -> float:
        """Long-run utilisation of the busiest machine, ``1/lambda*``."""
        return 1.0 / self.lam if self.lam > 0 else float("inf")

    @property
    def S(self) -> list[np.ndarray]:
        """``S_i = {j : delta*[i, j] != 0}`` (0-based machine indices)."""
        return [np.flatnonzero(row) for row in self.support]

    @property
    def p_static(self) -> np.ndarray:
        """LP-Static probabilities ``p_ij = delta*_ij mu_ij / (lambda* alpha_i)`` (2.6).

        ``mu`` here is the effective rate the LP uses (nominal rate times the
        capacity the constraint gives it); rows are renormalised so they sum to
        exactly 1 (they do up to solver tolerance at an optimum with tight (2.1)).
        """
        cap = self.delta * self.mu
        return cap / cap.sum(axis=1, keepdims=True)

    def ns_lpas(self) -> float:
        """Mean machines contacted per arrival under LPAS, ``sum_i alpha_i/alpha~ |S_i|`` (2.5)."""
        sizes = self.support.sum(axis=1)
        return float((self.alpha / self.alpha.sum()) @ sizes)

    def ns_lpas2k(self) -> float:
        """Mean machines contacted under LPAS-2/k: 2 for classes with ``|S_i| > 1``, else 1."""
        sizes = self.support.sum(axis=1)
        return float((self.alpha / self.alpha.sum()) @ np.minimum(sizes, 2))

    def discount(self, ns: float) -> float:
        """State-information discount ``(1 - N_s/M) * 100 %`` (2.4)."""
        return (1.0 - ns / self.M) * 100.0

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of ``hetsched lp --json`` (keys fixed by DESIGN.md)."""
        return {
            "lambda": self.lam,
            "delta": self.delta.tolist(),
            "zeros": self.zeros,
            "target_zeros": self.target_zeros,
            "stabilizable": self.stabilizable,
            "utilization": self.utilization,
            "solution": self.solution,
            "grouped": self.grouped,
            "delta_groups": None if self.delta_groups is None else self.delta_groups.tolist(),
            "S": [[int(j) + 1 for j in s] for s in self.S],
            "p_static": self.p_static.tolist(),
            "Ns": {"lpas": self.ns_lpas(), "lpas-2k": self.ns_lpas2k(), "mct": float(self.M)},
            "discount_percent": {
                "lpas": self.discount(self.ns_lpas()),
                "lpas-2k": self.discount(self.ns_lpas2k()),
            },
            "success": self.success,
            "status": self.status,
            "message": self.message,
            "residuals": self.residuals,
            "solver": self.solver,
            "iterations": self.iterations,
            "wall_seconds": self.wall_seconds,
        }
