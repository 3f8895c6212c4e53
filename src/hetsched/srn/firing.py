"""The firing rule of a net on a batch of markings (used by :mod:`hetsched.srn.reach`).

:class:`_Evaluator` calls marking-dependent functions on a whole batch of markings
(NumPy arrays), falling back to one call per marking for functions written for
scalars; :func:`_fire` gives, for one transition, the markings of the batch where it
is enabled (input arcs, inhibitor arcs, guard, capacities of the places it fills),
the successor markings and the rate or weight (times ``min(servers, enabling
degree)`` for a k-server or infinite-server timed transition).
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .net import MarkingView, Transition

__all__ = ["enabling_degree"]


class _Evaluator:
    """Calls marking-dependent functions on a batch, falling back to per-marking calls."""

    def __init__(self, index: dict[str, int]):
        self.index = index
        self.scalar_only: set[int] = set()
        self.fallbacks: list[str] = []

    def __call__(self, f, X: np.ndarray, what: str, tname: str) -> np.ndarray:
        B = X.shape[0]
        if id(f) not in self.scalar_only:
            try:
                v = np.asarray(f(MarkingView(X, self.index)))
                if v.shape == ():
                    return np.broadcast_to(v, (B,))
                if v.shape == (B,):
                    return v
            except ModelError:
                raise
            except Exception:  # noqa: BLE001 - retry per marking, where the real error is reported
                pass
            self.scalar_only.add(id(f))
            self.fallbacks.append(f"{what} of {tname}")
        out = []
        for i in range(B):
            try:
                out.append(f(MarkingView(X[i], self.index)))
            except Exception as exc:  # noqa: BLE001
                raise ModelError(f"{what} of transition {tname!r} raised {type(exc).__name__}: {exc} "
                                 f"in marking {MarkingView(X[i], self.index)!r}") from exc
        return np.asarray(out)


def _mult(ev: _Evaluator, m, X, what, tname) -> np.ndarray | int:
    if not callable(m):
        return m
    v = ev(m, X, what, tname)
    if v.dtype.kind == "f":
        if not np.all(v == np.round(v)):
            raise ModelError(f"{what} of transition {tname!r} returned a non-integer multiplicity")
    v = v.astype(np.int64)
    if v.size and v.min() < 0:
        i = int(np.argmin(v))
        raise ModelError(f"{what} of transition {tname!r} returned a negative multiplicity {v[i]} "
                         f"in marking {MarkingView(X[i], ev.index)!r}")
    return v


def _fire(ev: _Evaluator, t: Transition, X: np.ndarray, pidx: dict[str, int], caps=()):
    """Rows of ``X`` where ``t`` is enabled, the successor markings and the rate/weight.

    ``caps``: ``(column, capacity)`` of the places with a capacity; a firing that would put
    more tokens than that in a place is disabled.
    """
    B = X.shape[0]
    en = np.ones(B, dtype=bool)
    ins = []
    for p, m in t.inputs:
        mv = _mult(ev, m, X, f"multiplicity of input arc from {p}", t.name)
        en &= X[:, pidx[p]] >= mv
        ins.append((pidx[p], mv))
    for p, m in t.inhibitors:
        mv = _mult(ev, m, X, f"multiplicity of inhibitor arc from {p}", t.name)
        # an inhibitor arc of multiplicity k disables t when #p >= k (k = 0: no arc)
        en &= ~((X[:, pidx[p]] >= mv) & (np.asarray(mv) > 0))
    rows = np.flatnonzero(en)
    if rows.size and t.guard is not None:
        g = ev(t.guard, X[rows], "guard", t.name)
        if g.dtype != bool:
            g = g.astype(bool)
        rows = rows[g]
    if rows.size == 0:
        return rows, None, None
    Xe = X[rows]
    Y = Xe.astype(np.int64, copy=True)
    for j, mv in ins:
        Y[:, j] -= mv[rows] if isinstance(mv, np.ndarray) else mv
    for p, m in t.outputs:
        mv = _mult(ev, m, Xe, f"multiplicity of output arc to {p}", t.name)
        Y[:, pidx[p]] += mv
    if caps:
        ok = np.ones(rows.size, dtype=bool)
        for j, c in caps:
            ok &= Y[:, j] <= c
        if not ok.all():
            rows, Xe, Y = rows[ok], Xe[ok], Y[ok]
            if rows.size == 0:
                return rows, None, None
    what = "rate" if t.timed else "weight"
    if callable(t.value):
        val = np.asarray(ev(t.value, Xe, what, t.name), dtype=np.float64)
        bad = ~np.isfinite(val) | (val < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ModelError(f"{what} of transition {t.name!r} is {val[i]!r} (must be finite and >= 0) "
                             f"in marking {MarkingView(Xe[i], ev.index)!r}")
    else:
        val = np.full(rows.size, t.value)
    if t.servers != 1:
        val = val * enabling_degree(t, ins, Xe, rows, t.servers)
    keep = val > 0  # a zero rate/weight means: does not fire in that marking
    if not keep.all():
        rows, Y, val = rows[keep], Y[keep], val[keep]
    return rows, Y, val


def enabling_degree(t: Transition, ins, Xe: np.ndarray, rows: np.ndarray, servers: float) -> np.ndarray:
    """``min(servers, d)`` for the enabled markings ``Xe`` (rows ``rows`` of the batch), where the
    enabling degree ``d`` is the smallest ``#p // multiplicity`` over input arcs of multiplicity
    > 0 (``ins``: ``(column, multiplicity)``, a multiplicity an array over the batch when it
    depends on the marking), and 1 for a transition without one (GreatSPN's rule)."""
    d = None
    for j, mv in ins:
        w = mv[rows] if isinstance(mv, np.ndarray) else np.full(rows.size, mv)
        pos = w > 0
        if not pos.any():
            continue
        k = np.where(pos, Xe[:, j] // np.where(pos, w, 1), np.iinfo(np.int64).max)
        d = k if d is None else np.minimum(d, k)
    if d is None:
        return np.ones(rows.size)
    d = np.where(d == np.iinfo(np.int64).max, 1, d)
    d = np.maximum(d, 1)  # enabled: every arc is satisfied at least once
    return np.minimum(d, servers).astype(np.float64) if servers != np.inf else d.astype(np.float64)


