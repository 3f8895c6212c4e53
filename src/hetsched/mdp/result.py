"""``MDPResult``: the outcome of every MDP/CTMDP solver, in the project's result protocol."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Literal, Mapping

import numpy as np

from ..results import Result, fmt, jsonable

__all__ = ["MDPResult"]


@dataclass(repr=False)
class MDPResult(Result):
    """Outcome of a solver, in the manner of ``scipy.optimize.OptimizeResult``.

    ``values`` are the discounted costs ``J`` (discounted criterion) or the
    relative values (bias) ``h`` (average criterion). ``gains`` is the optimal
    long-run average cost of every state (average criterion): constant on a
    unichain or communicating model, different between states of a multichain
    one; ``gain`` is that constant, or ``None`` when the gains differ (read
    ``gains`` then). ``lower``/``upper`` bound the optimal ``J*`` (or ``g*``) when
    the solver provides them; ``error_bound`` bounds ``J_policy - J*`` (or
    ``g_policy - g*``).
    """

    STATUS: ClassVar[Mapping[int, str]] = {
        0: "converged and certified",
        1: "iteration limit reached before the stopping rule held",
        2: "numerical failure",
    }

    status: int
    message: str
    policy: np.ndarray
    values: np.ndarray
    method: str
    criterion: Literal["discounted", "average"]
    iterations: int
    seconds: float
    error_bound: float = math.inf
    lower: np.ndarray | float | None = None
    upper: np.ndarray | float | None = None
    gain: float | None = None
    beta: float | None = None
    nu: float | None = None
    gains: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.status = int(self.status)
        self.seconds = float(self.seconds)
        self.iterations = int(self.iterations)
        if self.criterion == "average" and self.gains is None and self.gain is not None:
            self.gains = np.full(np.asarray(self.policy).shape[0], float(self.gain))

    @property
    def n_states(self) -> int:
        return int(np.asarray(self.policy).shape[0])

    @property
    def multichain(self) -> bool:
        """True when the optimal gains differ between states (average criterion)."""
        return self.criterion == "average" and self.gain is None and self.gains is not None

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "status": self.status, "success": self.success, "message": self.message, "seconds": self.seconds,
            "method": self.method, "criterion": self.criterion, "states": self.n_states,
            "iterations": self.iterations, "error_bound": self.error_bound,
        }
        if self.criterion == "average":
            d["gain"] = self.gain
            d["multichain"] = self.multichain
            d["gains"] = self.gains
        else:
            d["beta"] = self.beta
        d["nu"] = self.nu
        d["policy"] = self.policy
        d["values"] = self.values
        for k in ("lower", "upper"):
            v = getattr(self, k)
            d[k] = v
        return jsonable(d)

    def _frame_rows(self) -> Iterable[dict[str, Any]]:
        crit = self.criterion
        pol = np.asarray(self.policy)
        vals = np.asarray(self.values, dtype=float)
        for s in range(self.n_states):
            yield {"criterion": crit, "state": s, "measure": "action", "value": float(pol[s])}
            yield {"criterion": crit, "state": s, "measure": "value" if crit == "discounted" else "bias",
                   "value": float(vals[s])}
            if crit == "average" and self.gains is not None:
                yield {"criterion": crit, "state": s, "measure": "gain", "value": float(self.gains[s])}

    def _headline(self) -> str:
        if self.criterion == "average":
            if self.gain is not None:
                what = f"gain {fmt(self.gain, 10)}"
            elif self.gains is not None and len(self.gains):
                what = f"multichain: gains {fmt(np.min(self.gains), 8)} .. {fmt(np.max(self.gains), 8)}"
            else:
                what = "no gain"
        else:
            what = f"beta {fmt(self.beta)}"
        return (f"{self.method}, {self.criterion}: {self.n_states} states, {what}, {self.iterations} iterations, "
                f"error bound {fmt(self.error_bound, 3)}")
