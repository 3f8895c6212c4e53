"""The result of the allocation LP (:class:`AllocationResult`), in the project's
result protocol (:mod:`hetsched.results`)."""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import SolverError
from ..results import Result

__all__ = ["AllocationResult", "DENSE_JSON_CELLS"]

#: ``as_dict()`` gives ``delta`` (and ``p_static``) as a list of rows up to this
#: many entries, beyond it as a sparse triple (see :meth:`AllocationResult.as_dict`)
DENSE_JSON_CELLS = 1_000_000


@dataclass(repr=False, eq=False)
class AllocationResult(Result):
    """Result of the allocation LP, in the style of ``scipy.optimize.OptimizeResult``.

    Attributes
    ----------
    status, success, message
        ``status`` (see :attr:`STATUS`) 0 = optimal and certified (residuals
        and duality gap re-checked); 1 = solved, but the certificate failed
        (the answer is the solver's, use with care); 2 = no positive capacity:
        some class cannot run on any available machine, so ``lambda* = 0``
        (``delta`` all zero, ``w`` the price vector that proves it); 3 = the
        LP solver failed (``lam`` is NaN). ``success`` is ``status == 0``;
        ``message`` names the field at fault.
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
    seconds : float
        Wall time of the solve (``wall_seconds`` is the same number, the older name).
    class_names, machine_names : tuple of str
        The classes' and machines' names (the system's, or the defaults ``c1 ..``, ``m1 ..``).
    """

    STATUS: ClassVar[dict[int, str]] = {
        0: "optimal and certified",
        1: "solved, but the certificate failed",
        2: "no positive capacity (lambda* = 0)",
        3: "the LP solver failed",
    }

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
    seconds: float = 0.0
    zero_tol: float = 1e-9
    class_names: tuple[str, ...] | None = None
    machine_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.class_names is None:
            self.class_names = tuple(f"c{i + 1}" for i in range(self.delta.shape[0]))
        if self.machine_names is None:
            self.machine_names = tuple(f"m{j + 1}" for j in range(self.delta.shape[1]))

    @property
    def wall_seconds(self) -> float:
        """The older name of :attr:`seconds`."""
        return self.seconds

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
        return int(self.delta.size - np.count_nonzero(self.support))

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
        with np.errstate(invalid="ignore", divide="ignore"):
            return cap / cap.sum(axis=1, keepdims=True)

    def ns_lpas(self, sizes: np.ndarray | None = None) -> float:
        """Mean machines contacted per arrival under LPAS, ``sum_i alpha_i/alpha~ |S_i|`` (2.5)."""
        sizes = self.support.sum(axis=1) if sizes is None else sizes
        return float((self.alpha / self.alpha.sum()) @ sizes)

    def ns_lpas2k(self, sizes: np.ndarray | None = None) -> float:
        """Mean machines contacted under LPAS-2/k: 2 for classes with ``|S_i| > 1``, else 1."""
        sizes = self.support.sum(axis=1) if sizes is None else sizes
        return float((self.alpha / self.alpha.sum()) @ np.minimum(sizes, 2))

    def discount(self, ns: float) -> float:
        """State-information discount ``(1 - N_s/M) * 100 %`` (2.4)."""
        return (1.0 - ns / self.M) * 100.0

    # ---- the protocol: JSON, frame, display -------------------------------------
    def as_dict(self, dense: bool | None = None) -> dict[str, Any]:
        """The JSON form of ``hetsched lp --json`` (the contract's keys and more), JSON-ready.

        ``delta`` and ``p_static`` are lists of rows (one per class) when they
        have at most :data:`DENSE_JSON_CELLS` entries (or ``dense=True``), and
        then ``S`` lists each class's machines. Larger ones (or
        ``dense=False``) are objects with ``"format"`` and ``"shape"``
        ([N, M]); classes, machines and groups are numbered from 1:

        * ``"grouped"`` (a group-symmetric solution): ``"groups"``, the rows of
          the per-group matrix, and ``"machine_group"``, each machine's group;
          entry ``[i][j]`` is ``groups[i][machine_group[j] - 1]``;
        * ``"sparse"``: the nonzero entries as ``"class"``, ``"machine"`` and
          ``"value"`` lists;

        and ``S`` is null (``S_sizes`` holds ``|S_i|``); ``p_static`` then has
        the grouped form (saying ``"as in delta"`` for ``machine_group``), or
        is null beside a sparse ``delta`` (it is ``delta_ij mu_ij / sum_j
        delta_ij mu_ij``; printing its million values would cost more than
        the solve).
        Built with array operations: a 20 x 1,000,000 answer costs less
        than its solve.
        """
        small = dense or (dense is None and self.delta.size <= DENSE_JSON_CELLS)
        groups = None if small or self.delta_groups is None or self.group_labels is None else self.group_labels
        first = None if groups is None else np.unique(groups, return_index=True)[1]
        if groups is None:
            support = self.support
            rows, cols = np.nonzero(support)
            sizes = support.sum(axis=1)
        else:  # every member of a group has its group's support
            rows = cols = None
            sizes = (self.delta[:, first] > self.zero_tol) @ np.bincount(groups)
        ns, ns2 = self.ns_lpas(sizes), self.ns_lpas2k(sizes)
        if small:
            starts = np.searchsorted(rows, np.arange(self.N + 1))
            S = [(cols[starts[i]:starts[i + 1]] + 1).tolist() for i in range(self.N)]
            p_static = _floats(self.p_static)
        else:  # p_static where it is not 0 only: its row sums are sum_j delta_ij mu_ij
            with np.errstate(invalid="ignore", divide="ignore"):
                inv = 1.0 / np.einsum("ij,ij->i", self.delta, self.mu)
            if groups is not None:
                p_static = {"format": "grouped", "shape": [self.N, self.M], "machine_group": "as in delta",
                            "groups": _floats(self.delta[:, first] * self.mu[:, first] * inv[:, None])}
            else:  # a million arbitrary floats cost more to print than the solve: left to the reader
                p_static = None
        return {
            "lambda": _num(self.lam),
            "delta": _matrix(self.delta, small, rows, cols, groups, first),
            "zeros": int(self.delta.size - sizes.sum()),
            "target_zeros": self.target_zeros,
            "stabilizable": self.stabilizable,
            "utilization": _num(self.utilization),
            "solution": self.solution,
            "grouped": self.grouped,
            "delta_groups": None if self.delta_groups is None else _floats(self.delta_groups),
            "S": S if small else None,
            "S_sizes": sizes.tolist(),
            "p_static": p_static,
            "Ns": {"lpas": ns, "lpas-2k": ns2, "mct": float(self.M)},
            "discount_percent": {"lpas": self.discount(ns), "lpas-2k": self.discount(ns2)},
            "w": None if self.w is None else _floats(self.w),
            "class_names": list(self.class_names),
            "machine_names": list(self.machine_names),
            "success": self.success,
            "status": int(self.status),
            "message": self.message,
            "residuals": {k: _num(v) for k, v in self.residuals.items()},
            "solver": self.solver,
            "iterations": int(self.iterations),
            "seconds": float(self.seconds),
            "wall_seconds": float(self.seconds),
        }

    def to_json(self, indent: int | None = 2, dense: bool | None = None) -> str:
        """``as_dict()`` as JSON text: indented, every list of numbers or names on one line
        (encoded by the C encoder, so a million-entry list costs a fraction of a second)."""
        import re

        d = self.as_dict(dense)
        leaves: list[str] = []

        def stash(x):
            if isinstance(x, dict):
                return {k: stash(v) for k, v in x.items()}
            if isinstance(x, list):
                if x and isinstance(x[0], list):
                    return [stash(v) for v in x]
                leaves.append(json.dumps(x, allow_nan=False))
                return f"@@leaf{len(leaves) - 1}@@"
            return x

        text = json.dumps(stash(d), indent=indent, allow_nan=False)
        return re.sub(r'"@@leaf(\d+)@@"', lambda m: leaves[int(m.group(1))], text)

    def to_frame(self):
        """Long format: ``lambda``, the class prices ``w`` (one row per class) and
        ``delta`` (one row per class and machine), classes and machines numbered
        from 1, with their names."""
        import pandas as pd

        N, M = self.delta.shape
        cn = pd.Categorical(list(self.class_names))
        mn = pd.Categorical(list(self.machine_names))
        ii, jj = np.repeat(np.arange(N), M), np.tile(np.arange(M), N)
        parts = [
            pd.DataFrame({"measure": ["lambda"], "value": [float(self.lam)]}),
            pd.DataFrame({"class": np.arange(1, N + 1), "class_name": cn, "measure": "w",
                          "value": np.full(N, np.nan) if self.w is None else self.w.astype(float)}),
            pd.DataFrame({"class": ii + 1, "class_name": cn[ii],
                          "machine": jj + 1, "machine_name": mn[jj], "measure": "delta",
                          "value": self.delta.ravel().astype(float)}),
        ]
        df = pd.concat(parts, ignore_index=True)
        for c in ("class", "machine"):
            df[c] = df[c].astype("Int64")
        return df[["class", "class_name", "machine", "machine_name", "measure", "value"]]

    def _frame_rows(self):  # pragma: no cover - to_frame() is built column-wise
        return self.to_frame().to_dict("records")

    def _headline(self) -> str:
        if self.status >= 2:
            return f"{self.N} classes x {self.M:,} machines: {self.message}"
        st = "stabilizable" if self.stabilizable else "NOT stabilizable"
        kind = ("group-symmetric " if self.grouped else "") + self.solution
        return (f"lambda* = {self.lam:.6g} ({st}; busiest machine utilisation {self.utilization:.4g}), "
                f"{self.N} classes x {self.M:,} machines, {kind} solution")

    def _repr_html_(self) -> str:
        e = html.escape
        color = "#070" if self.success else "#b00"
        grouped = self.delta_groups is not None and self.group_labels is not None
        mat = self.delta_groups if grouped else self.delta
        if grouped:
            counts = np.bincount(self.group_labels, minlength=mat.shape[1])
            first = [int(np.flatnonzero(self.group_labels == g)[0]) for g in range(min(mat.shape[1], 12))]
            heads = [self.machine_names[j] + (f" and {counts[g] - 1} like it" if counts[g] > 1 else "")
                     for g, j in enumerate(first)]
        else:
            heads = list(self.machine_names[:12])
        C, R = min(mat.shape[1], 12), min(mat.shape[0], 20)
        th = "".join(f"<th>{e(h)}</th>" for h in heads[:C]) + ("<th>...</th>" if mat.shape[1] > C else "")
        body = "".join(
            f"<tr><td>{i + 1}</td><td>{e(self.class_names[i])}</td>"
            + "".join(f"<td>{_fmt(x)}</td>" for x in mat[i, :C]) + ("<td>...</td>" if mat.shape[1] > C else "")
            + f"<td>{'-' if self.w is None else _fmt(self.w[i])}</td></tr>" for i in range(R))
        more = f"<div><i>{mat.shape[0] - R} more classes: .to_frame()</i></div>" if mat.shape[0] > R else ""
        what = "delta* per group of interchangeable machines" if grouped else "delta*"
        return (f"<div><b>AllocationResult</b>: {e(self._headline())}<br>"
                f"<span style='color:{color}'>{e(self._status_line())}</span><br>{e(what)}, class prices w"
                f"<table><tr><th>class</th><th>name</th>{th}<th>w</th></tr>{body}</table>{more}</div>")


def _num(x: Any) -> Any:
    x = float(x)
    return x if math.isfinite(x) else None


def _fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.4g}"


def _floats(a: np.ndarray) -> list:
    """A float array as (nested) lists, NaN/inf as None."""
    out = a.tolist()
    if np.isfinite(a).all():
        return out
    if a.ndim == 1:
        return [v if math.isfinite(v) else None for v in out]
    return [_floats(r) for r in a]


def _matrix(m: np.ndarray, small: bool, rows=None, cols=None, groups=None, first=None):
    """A matrix for JSON: rows, its group form or the sparse triple (see ``as_dict``)."""
    if small:
        return _floats(m)
    if groups is not None:
        return {"format": "grouped", "shape": list(m.shape), "groups": _floats(m[:, first]),
                "machine_group": (groups + 1).tolist()}
    if rows is None:
        rows, cols = np.nonzero(m)
    return {"format": "sparse", "shape": list(m.shape), "class": (rows + 1).tolist(),
            "machine": (cols + 1).tolist(), "value": _floats(m[rows, cols])}
