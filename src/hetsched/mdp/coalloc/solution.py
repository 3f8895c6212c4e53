"""Solving the co-allocation model: policies (Local, the §6 heuristics), §5 tables and margins, the result.

``solve_coalloc`` computes the discounted optimal policy (§3) with any solver of
:mod:`hetsched.mdp.discounted` and returns a :class:`CoallocSolution` (the
project's result protocol) with the decision tables of Figures 2-4 (the states
``(q1, q2, g=2, x1, x2=0, x11=0)``) and the margin of every cell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Literal, Mapping

import numpy as np

from ...errors import ModelError
from ...results import Result, num
from ..average import evaluate_policy
from ..discounted import modified_policy_iteration, policy_iteration, value_iteration
from ..model import CTMDP
from ..result import MDPResult
from .builder import CoallocModel, build_coalloc
from .params import CoallocParams

__all__ = ["HEURISTICS", "CoallocSolution", "solve_coalloc", "local_policy", "heuristic_policy", "decision_table",
           "policy_from_table", "average_cost"]

Method = Literal["gauss-seidel", "jacobi", "policy-iteration", "modified-policy-iteration"]

#: the co-allocation rules of §6 (both also require ``x1 = 1``, "best pack"): the paper's heuristic
#: ``p c1 q1 > c2 q2``, and the comparator ``c1 q1 > c2 q2`` that §6 says it outperforms
HEURISTICS = {
    "pc1q1": "p c1 q1 > c2 q2 and x1 = 1 (the paper's heuristic, 'pc1q1>c2q2-Best pack')",
    "c1q1": "c1 q1 > c2 q2 and x1 = 1 (the comparator of §6, without the multiplier p)",
}


def check_heuristic(rule: str) -> str:
    """The rule's name, or :class:`ModelError` naming the choices."""
    if rule not in HEURISTICS:
        raise ModelError(f"heuristic: expected one of {', '.join(HEURISTICS)}, got {rule!r}")
    return rule


def local_policy(model: CoallocModel) -> np.ndarray:
    """Never co-allocate (action 0 in every state)."""
    return np.zeros(model.ctmdp.n_states, dtype=np.int64)


def heuristic_policy(model: CoallocModel, rule: str = "pc1q1") -> np.ndarray:
    """§6 heuristics (where co-allocation is admissible, and only when ``x1 = 1``).

    ``rule="pc1q1"`` (default, the paper's): co-allocate iff ``p c1 q1 > c2 q2``;
    ``rule="c1q1"`` (the comparator §6 says it outperforms): iff ``c1 q1 > c2 q2``.
    """
    w = model.params.p if check_heuristic(rule) == "pc1q1" else 1.0
    prm = model.params
    q1, q2, g, x1, x2, x11 = model.states.T
    adm = (g == 2) & (x11 == 0) & (2 - x1 - 2 * x2 - x11 >= 1)
    return (adm & (x1 == 1) & (w * prm.c1 * q1 > prm.c2 * q2)).astype(np.int64)


def decision_table(model: CoallocModel, policy: np.ndarray) -> np.ndarray:
    """``(2, Delta+1, Delta+1)`` int8 table ``[x1, q1, q2]`` of the action in ``(q1, q2, 2, x1, 0, 0)``.

    These are the only states with a choice; row ``q1 = 0`` is unused (0). The
    simulator reads this table (clamping ``q1, q2`` at ``Delta``).
    """
    D = model.delta
    out = np.zeros((2, D + 1, D + 1), dtype=np.int8)
    for x1 in (0, 1):
        out[x1, 1:, :] = np.asarray(policy)[model.table_states(x1)]
    return out


def policy_from_table(model: CoallocModel, table: np.ndarray) -> np.ndarray:
    """Inverse of :func:`decision_table`: a full policy from a ``[x1, q1, q2]`` table."""
    pol = np.zeros(model.ctmdp.n_states, dtype=np.int64)
    for x1 in (0, 1):
        pol[model.table_states(x1)] = np.asarray(table)[x1, 1:, :]
    return pol


def average_cost(model: CoallocModel, policy: np.ndarray) -> dict[str, Any]:
    """Exact long-run average cost of ``policy`` on the truncated chain (``pi Q = 0``).

    Returns the gain and the truncation mass ``P(q1 = Delta or q2 = Delta)`` (how much
    the truncation can matter).
    """
    ev = evaluate_policy(model.ctmdp, policy)
    q1, q2 = model.states[:, 0], model.states[:, 1]
    edge = float(ev["pi"][(q1 == model.delta) | (q2 == model.delta)].sum())
    return {"gain": ev["gain"], "pi": ev["pi"], "boundary_mass": edge}


# --------------------------------------------------------------------------- solving


@dataclass(repr=False)
class CoallocSolution(Result):
    """Optimal policy of the model, its §5 tables and margins (the project's result protocol).

    ``status``/``message`` are the solver's (:class:`~hetsched.mdp.result.MDPResult`:
    0 converged and certified). ``tables["x1=0"]``, ``tables["x1=1"]``: the optimal
    action (1 = co-allocate) in ``(q1, q2, 2, x1, 0, 0)``, rows ``q1 = 1..Delta``,
    columns ``q2 = 0..Delta``; ``margins``: ``(Q0 - Q1) / Q0`` of each cell;
    ``certified``: ``|Q0 - Q1|`` exceeds the solver's error bound.
    """

    STATUS: ClassVar[Mapping[int, str]] = MDPResult.STATUS

    model: CoallocModel
    result: MDPResult
    tables: dict[str, np.ndarray]  # "x1=0", "x1=1": (Delta, Delta+1) int, rows q1=1..Delta
    margins: dict[str, np.ndarray]  # relative (Q0 - Q1) / Q0: > 0 co-allocation is cheaper
    certified: dict[str, np.ndarray]  # |Q0 - Q1| exceeds the error bound
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> int:
        return int(self.result.status)

    @property
    def message(self) -> str:
        return self.result.message

    @property
    def policy(self) -> np.ndarray:
        return self.result.policy

    def near_ties(self, threshold: float = 0.005) -> dict[str, list[tuple[int, int, float]]]:
        """Cells ``(q1, q2, margin)`` with ``|margin| < threshold`` (default 0.5 %)."""
        out = {}
        for key, m in self.margins.items():
            i, j = np.nonzero(np.abs(m) < threshold)
            out[key] = [(int(a) + 1, int(b), float(m[a, b])) for a, b in zip(i, j)]
        return out

    def table_text(self, keys: tuple[str, ...] = ("x1=0", "x1=1"), near: float = 0.005, margins: bool = True) -> str:
        """The §5 figures as text: one action grid per ``x1`` (rows ``q1``, columns ``q2``), then margins.

        In the grid ``1`` = co-allocate, ``.`` = do not; a cell whose two actions cost
        within ``near`` (relative) of each other is marked ``~`` after the digit, a cell
        the error bound cannot decide ``?``. The margin grid gives ``100 (Q0 - Q1) / Q0``
        (% of the cost of not co-allocating; positive: co-allocation is cheaper).
        """
        prm = self.model.params
        D = prm.delta
        lines = []
        for key in keys:
            tab, mar, cert = self.tables[key], self.margins[key], self.certified[key]
            lines.append(f"Optimal action in states (q1, q2, g=2, {key}, x2=0, x11=0)"
                         f"  [1 = co-allocate, . = not, ~ = margin < {100 * near:g} %, ? = not certified]")
            lines.append("q1\\q2 " + "".join(f"{q2:>3d}" for q2 in range(D + 1)))
            for i in range(D):
                cells = []
                for j in range(D + 1):
                    c = "1" if tab[i, j] else "."
                    flag = "?" if not cert[i, j] else ("~" if abs(mar[i, j]) < near else " ")
                    cells.append(f" {c}{flag}")
                lines.append(f"{i + 1:>5d} " + "".join(cells))
            lines.append("")
            if margins:
                lines.append(f"Margin (Q0 - Q1) / Q0 in %, {key}  (rows q1 = 1..{D}, columns q2 = 0..{D})")
                lines.append("q1\\q2 " + "".join(f"{q2:>6d}" for q2 in range(D + 1)))
                for i in range(D):
                    lines.append(f"{i + 1:>5d} " + "".join(f"{100 * mar[i, j]:6.2f}" for j in range(D + 1)))
                lines.append("")
        r = self.result
        n_ties = sum(len(v) for v in self.near_ties(near).values())
        lines.append(
            f"{self.model.ctmdp.n_states} states, {r.method}: {r.iterations} iterations, {self.seconds:.3f} s "
            f"(build {self.model.build_seconds:.3f} s); {r.message}"
        )
        lines.append(
            f"rho1={prm.rho1:.4g} rho2={prm.rho2:.4g} lambda1={prm.lam1:.4g} lambda2={prm.lam2:.4g} mu1={prm.mu1:g} "
            f"mu2={prm.mu2:g} mu3={prm.mu3:g} p={prm.p:g} c1={prm.c1:g} c2={prm.c2:g} beta={prm.beta:g} Delta={D} "
            f"self_loop={prm.self_loop} boundary={prm.boundary} nu={prm.nu_used:.4g}; "
            f"{n_ties} near-tie cells (< {100 * near:g} %)"
        )
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The JSON of ``hetsched mdp coalloc --json`` (the tables as plain lists; scalars JSON-ready)."""
        r = self.result
        params = {k: num(v) for k, v in self.model.params.as_dict().items()}
        return {
            "states": self.model.ctmdp.n_states,
            "iterations": r.iterations,
            "seconds": float(self.seconds),
            "method": r.method,
            "success": r.success,
            "status": r.status,
            "message": r.message,
            "error_bound": num(r.error_bound),
            "params": params,
            "tables": {k: v.tolist() for k, v in self.tables.items()},
            "margins": {k: np.round(v, 6).tolist() for k, v in self.margins.items()},
            "certified": {k: v.tolist() for k, v in self.certified.items()},
            "near_ties": {k: [list(t) for t in v] for k, v in self.near_ties().items()},
            "build_seconds": float(self.model.build_seconds),
            "overload": self.model.params.overload_reason(),
        }

    def _frame_rows(self) -> Iterable[dict[str, Any]]:
        """One row per table cell and quantity: ``action`` (1 = co-allocate), ``margin``, ``certified``."""
        D = self.model.delta
        for key in ("x1=0", "x1=1"):
            x1 = int(key[-1])
            tab, mar, cert = self.tables[key], self.margins[key], self.certified[key]
            for i in range(D):
                for j in range(D + 1):
                    base = {"model": "coalloc", "x1": x1, "q1": i + 1, "q2": j}
                    yield {**base, "measure": "action", "value": float(tab[i, j])}
                    yield {**base, "measure": "margin", "value": float(mar[i, j])}
                    yield {**base, "measure": "certified", "value": float(cert[i, j])}

    def _headline(self) -> str:
        prm = self.model.params
        n1 = {k: int(np.asarray(v).sum()) for k, v in self.tables.items()}
        return (f"co-allocation, Delta={prm.delta} ({self.model.ctmdp.n_states} states), rho1={prm.rho1:.4g} "
                f"rho2={prm.rho2:.4g}: co-allocate in {n1['x1=0']} (x1=0) and {n1['x1=1']} (x1=1) of "
                f"{prm.delta * (prm.delta + 1)} cells each; {self.result.method}")


def _ct_q(model: CTMDP, v: np.ndarray, beta: float) -> np.ndarray:
    """CTMDP Q-values ``(c + R v) / (beta + q)``: cost of acting once, then following ``v``."""
    return (model.cost + model.R @ v) / (beta + model.out)


def solve_coalloc(
    params: CoallocParams | CoallocModel,
    method: Method = "gauss-seidel",
    eps: float | None = None,
    max_iter: int | None = None,
) -> CoallocSolution:
    """Optimal co-allocation policy (discounted, §3) with its §5 tables and margins.

    ``method``: ``"gauss-seidel"`` (default; compiled), ``"jacobi"`` (the paper's
    successive approximation), ``"policy-iteration"`` or
    ``"modified-policy-iteration"``. Every method stops on the same certificate
    (see :mod:`hetsched.mdp.ctmdp`).
    """
    from ..kernels import _warm_kernels

    # load the compiled kernels first (numba cache, ~0.3 s once per process): not solver time
    _warm_kernels("mpi" if method == "modified-policy-iteration" else "vi")
    t0 = time.perf_counter()
    model = params if isinstance(params, CoallocModel) else build_coalloc(params)
    prm = model.params
    c = model.ctmdp
    nu = prm.nu_used
    kw: dict[str, Any] = {"eps": eps, "nu": nu}
    if max_iter is not None:
        kw["max_iter"] = max_iter
    if method == "gauss-seidel":
        res = value_iteration(c, prm.beta, method="gauss-seidel", **kw)
    elif method == "jacobi":
        res = value_iteration(c, prm.beta, method="jacobi", **kw)
    elif method == "policy-iteration":
        res = policy_iteration(c, prm.beta, **kw)
    elif method == "modified-policy-iteration":
        res = modified_policy_iteration(c, prm.beta, **kw)
    else:
        raise ModelError(
            f"method: expected gauss-seidel, jacobi, policy-iteration or modified-policy-iteration, got {method!r}"
        )
    q = _ct_q(c, res.values, prm.beta)
    pair = np.full((c.n_states, 2), -1, dtype=np.int64)
    pair[c.sa_state, c.sa_action] = np.arange(c.n_pairs)
    tables, margins, certified = {}, {}, {}
    for x1 in (0, 1):
        idx = model.table_states(x1)
        k0, k1 = pair[idx, 0], pair[idx, 1]
        q0, q1 = q[k0], q[k1]
        key = f"x1={x1}"
        tables[key] = res.policy[idx].astype(np.int64)
        margins[key] = (q0 - q1) / np.maximum(np.abs(q0), 1e-300)
        certified[key] = np.abs(q0 - q1) > res.error_bound
    return CoallocSolution(model, res, tables, margins, certified, time.perf_counter() - t0)
