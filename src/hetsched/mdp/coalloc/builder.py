"""The truncated co-allocation CTMDP: state indexing, the compiled builder, and the line-by-line reference.

:func:`build_coalloc` enumerates the states in index order with one numba pass
(rates of ``Psi_d`` and ``eta`` as in :mod:`hetsched.mdp.coalloc`);
:func:`coalloc_event_model` writes the same model from §2 line by line with
:func:`~hetsched.mdp.model.build_ctmdp` and is the reference the tests check it against.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..model import CTMDP, build_ctmdp
from .params import CONFIGS, CoallocParams, coalloc_memory_bytes, n_pairs, n_states

__all__ = ["CoallocModel", "build_coalloc", "coalloc_event_model"]


# --------------------------------------------------------------------------- indexing


def _state_index(delta: int, q1, q2, g, cfg):
    """Index of ``(q1, q2, g, cfg)``: level ``0`` for ``q1 = 0``, ``2 (q1-1) + g`` for ``q1 >= 1``."""
    level = np.where(np.asarray(q1) == 0, 0, 2 * (np.asarray(q1) - 1) + np.asarray(g))
    return (level * (delta + 1) + q2) * 6 + cfg


def _make_cfg_lut() -> np.ndarray:
    lut = np.full((3, 2, 2), -1, dtype=np.int64)
    for i, (a, b, c) in enumerate(CONFIGS):
        lut[a, b, c] = i
    return lut


#: ``_CFG_LUT[x1, x2, x11]`` = index in :data:`CONFIGS` (-1 for an invalid triple)
_CFG_LUT = _make_cfg_lut()


def _cfg_of(x1, x2, x11):
    # x1 + 2 x2 + x11 <= 2 with the CONFIGS order; -1 for an invalid triple
    return _CFG_LUT[np.asarray(x1), np.asarray(x2), np.asarray(x11)]


# --------------------------------------------------------------------------- the compiled builder

try:  # numba is a hard dependency; the fallback keeps a NUMBA_DISABLE_JIT-style run simple
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*args: Any, **kwargs: Any) -> Any:
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

#: most distinct targets of one state-action pair: 2 post-decision branches x (8 events + 1 self-loop)
_ROW_MAX = 18


@njit(cache=True, inline="always")
def _sidx(D, q1, q2, g, cfg):
    # index of (q1, q2, g, cfg): level 0 for q1 = 0, 2 (q1-1) + g for q1 >= 1 (as _state_index)
    level = 0 if q1 == 0 else 2 * (q1 - 1) + g
    return (level * (D + 1) + q2) * 6 + cfg


@njit(cache=True, inline="always")
def _add(bc, bv, n, j, w):
    # accumulate rate w to target j in the row buffer (at most _ROW_MAX distinct targets)
    for t in range(n):
        if bc[t] == j:
            bv[t] += w
            return n
    bc[n] = j
    bv[n] = w
    return n + 1


@njit(cache=True)
def _coalloc_kernel(D, lam1, lam2, mu1, mu2, mu3, p, c1, c2, nu, post, absorb,
                    cfgs, lut, states, state_ptr, sa_action, cost, kill, indptr, indices, data):
    """Compiled, no checks: enumerate every state and pair of the model into the given arrays.

    Writes ``states`` (S, 6), ``state_ptr`` (S+1), per-pair ``sa_action``, ``cost``, ``kill``,
    and the CSR rows ``indptr``/``indices``/``data`` (targets sorted, duplicates merged, the
    pair's own state dropped; ``indices``/``data`` sized for ``_ROW_MAX`` per pair).
    Returns the number of non-zeros.
    """
    bc = np.empty(_ROW_MAX, np.int64)
    bv = np.empty(_ROW_MAX, np.float64)
    s = 0
    k = 0
    nnz = 0
    indptr[0] = 0
    state_ptr[0] = 0
    for level in range(2 * D + 1):
        q1 = 0 if level == 0 else 1 + (level - 1) // 2
        g = 0 if level == 0 else 1 + (level - 1) % 2
        for q2 in range(D + 1):
            for cfg in range(6):
                x1, x2, x11 = cfgs[cfg, 0], cfgs[cfg, 1], cfgs[cfg, 2]
                states[s, 0] = q1
                states[s, 1] = q2
                states[s, 2] = g
                states[s, 3] = x1
                states[s, 4] = x2
                states[s, 5] = x11
                theta = 2 - x1 - 2 * x2 - x11
                n_act = 2 if (g == 2 and x11 == 0 and theta >= 1) else 1
                c = c1 * (q1 + x1 + x2 + x11) + c2 * q2
                for d in range(n_act):
                    # post-decision branches Psi_d(S): (g', prob) with the moved job's configuration
                    moves = d == 1 or (g > 0 and theta >= g)
                    nx1, nx2, nx11, nq1 = x1, x2, x11, q1
                    if moves:
                        nq1 = q1 - 1
                        if d == 1:
                            nx11 = x11 + 1
                        elif g == 1:
                            nx1 = x1 + 1
                        else:
                            nx2 = x2 + 1
                    n = 0
                    kl = 0.0
                    for branch in range(2):
                        if not moves:
                            if branch == 1:
                                break
                            gX, prob = g, 1.0
                        elif nq1 == 0:
                            if branch == 1:
                                break
                            gX, prob = 0, 1.0
                        else:
                            gX, prob = (1, p) if branch == 0 else (2, 1.0 - p)
                        if prob <= 0.0:
                            continue
                        cX = lut[nx1, nx2, nx11]
                        total = 0.0
                        # arrival to queue 1
                        if nq1 == 0:
                            w = prob * lam1 * p
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, 1, q2, 1, cX), w)
                            w = prob * lam1 * (1.0 - p)
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, 1, q2, 2, cX), w)
                            total += lam1
                        elif nq1 < D:
                            w = prob * lam1
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, nq1 + 1, q2, gX, cX), w)
                            total += lam1
                        elif absorb:
                            kl += prob * lam1
                            total += lam1
                        # arrival to queue 2
                        if q2 < D:
                            w = prob * lam2
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, nq1, q2 + 1, gX, cX), w)
                            total += lam2
                        elif absorb:
                            kl += prob * lam2
                            total += lam2
                        # completions
                        if nx1 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, lut[nx1 - 1, nx2, nx11]), prob * (mu1 * nx1))
                            total += mu1 * nx1
                        if nx2 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, lut[nx1, nx2 - 1, nx11]), prob * (mu1 * nx2))
                            total += mu1 * nx2
                        if nx11 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, lut[nx1, nx2, nx11 - 1]), prob * (mu3 * nx11))
                            total += mu3 * nx11
                        elif q2 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2 - 1, gX, cX), prob * mu2)
                            total += mu2
                        if post:  # the fictitious transition of rate nu - r(X) returns to X
                            w = prob * (nu - total)
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, cX), w)
                    # one CSR row: drop the state itself (a self-rate changes nothing), sort targets
                    for a in range(1, n):
                        jc, jv = bc[a], bv[a]
                        b = a - 1
                        while b >= 0 and bc[b] > jc:
                            bc[b + 1] = bc[b]
                            bv[b + 1] = bv[b]
                            b -= 1
                        bc[b + 1] = jc
                        bv[b + 1] = jv
                    for a in range(n):
                        if bc[a] != s and bv[a] > 0.0:
                            indices[nnz] = bc[a]
                            data[nnz] = bv[a]
                            nnz += 1
                    sa_action[k] = d
                    cost[k] = c
                    kill[k] = kl
                    k += 1
                    indptr[k] = nnz
                s += 1
                state_ptr[s] = k
    return nnz


# --------------------------------------------------------------------------- the model


@dataclass(eq=False)
class CoallocModel:
    """The truncated two-cluster CTMDP and its state encoding."""

    params: CoallocParams
    ctmdp: CTMDP
    states: np.ndarray  # (S, 6): q1, q2, g, x1, x2, x11
    build_seconds: float = 0.0

    @property
    def delta(self) -> int:
        return self.params.delta

    def index(self, q1: Any, q2: Any, g: Any, x1: Any, x2: Any, x11: Any) -> np.ndarray:
        """State index of ``(q1, q2, g, x1, x2, x11)`` (vectorized)."""
        cfg = _cfg_of(x1, x2, x11)
        return _state_index(self.delta, q1, q2, g, cfg)

    def table_states(self, x1: int) -> np.ndarray:
        """Indices ``(Delta, Delta+1)`` of ``(q1, q2, 2, x1, 0, 0)``, ``q1 = 1..Delta``, ``q2 = 0..Delta``."""
        D = self.delta
        q1, q2 = np.meshgrid(np.arange(1, D + 1), np.arange(D + 1), indexing="ij")
        return self.index(q1, q2, 2, x1, 0, 0)


_BUILDER_LOADED = False


def _warm_builder() -> None:
    """Load the compiled builder (numba cache) once per process, so build times exclude it."""
    global _BUILDER_LOADED
    if not _BUILDER_LOADED:
        S, K = n_states(1), n_pairs(1)
        _coalloc_kernel(1, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 10.0, False, False, CONFIGS, _CFG_LUT,
                        np.empty((S, 6), np.int64), np.empty(S + 1, np.int64), np.empty(K, np.int64),
                        np.empty(K), np.empty(K), np.empty(K + 1, np.int32), np.empty(_ROW_MAX * K, np.int32),
                        np.empty(_ROW_MAX * K))
        _BUILDER_LOADED = True


def build_coalloc(params: CoallocParams, *, check_memory: bool = True) -> CoallocModel:
    """Build the truncated CTMDP of §2-§3 with a compiled builder (Delta = 200 in about 0.05 s).

    One numba pass enumerates the states in index order and writes the CSR rows of
    every state-action pair directly (rates of ``Psi_d`` and ``eta`` as in the module
    docstring; duplicate targets merged, the pair's own state dropped). The
    line-by-line reference :func:`coalloc_event_model` is checked against it in the
    tests. With ``check_memory`` the model is refused (``ModelError``) before anything
    is allocated when :func:`coalloc_memory_bytes` exceeds the available memory.
    """
    D = params.delta
    if check_memory:
        from ..._memory import ensure_fits

        ensure_fits(f"mdp coalloc: delta = {D}", coalloc_memory_bytes(D))
    _warm_builder()
    t0 = time.perf_counter()
    S = n_states(D)
    K = n_pairs(D)
    states = np.empty((S, 6), dtype=np.int64)
    state_ptr = np.empty(S + 1, dtype=np.int64)
    sa_action = np.empty(K, dtype=np.int64)
    cost = np.empty(K)
    kill = np.empty(K)
    idx_t = np.int32 if S < 2**31 - 1 and _ROW_MAX * K < 2**31 - 1 else np.int64
    indptr = np.empty(K + 1, dtype=idx_t)
    indices = np.empty(_ROW_MAX * K, dtype=idx_t)  # untouched pages of the slack cost nothing
    data = np.empty(_ROW_MAX * K)
    nnz = _coalloc_kernel(D, params.lam1, params.lam2, params.mu1, params.mu2, params.mu3, params.p,
                          params.c1, params.c2, params.nu_used, params.self_loop == "post",
                          params.boundary == "absorb", CONFIGS, _CFG_LUT, states, state_ptr, sa_action,
                          cost, kill, indptr, indices, data)
    # views of the buffers, no copy: their untouched tail pages are never resident
    R = sp.csr_matrix((data[:nnz], indices[:nnz], indptr), shape=(K, S), copy=False)
    R.has_sorted_indices = True
    model = CTMDP(S, 2, state_ptr, sa_action, R, cost, kill)
    return CoallocModel(params, model, states, time.perf_counter() - t0)


def coalloc_event_model(params: CoallocParams, initial: tuple | None = None) -> CTMDP:
    """The same model enumerated from a per-state Python description (reference; small Delta).

    Written line by line from §2 with :func:`~hetsched.mdp.ctmdp.build_ctmdp`;
    ``labels`` are the state tuples. Tests check it equals :func:`build_coalloc`.
    """
    D, p, nu = params.delta, params.p, params.nu_used

    def actions(s: tuple) -> list[int]:
        q1, q2, g, x1, x2, x11 = s
        theta = 2 - x1 - 2 * x2 - x11
        return [0, 1] if (g == 2 and x11 == 0 and theta >= 1) else [0]

    def psi(s: tuple, d: int) -> list[tuple[tuple, float]]:
        q1, q2, g, x1, x2, x11 = s
        theta = 2 - x1 - 2 * x2 - x11
        if d == 0:
            if g == 0 or theta < g:  # nothing waits, or the head job does not fit
                return [(s, 1.0)]
            x1, x2 = (x1 + 1, x2) if g == 1 else (x1, x2 + 1)
        else:
            x11 += 1
        if q1 == 1:
            return [((0, q2, 0, x1, x2, x11), 1.0)]
        return [((q1 - 1, q2, 1, x1, x2, x11), p), ((q1 - 1, q2, 2, x1, x2, x11), 1 - p)]

    def eta(X: tuple) -> list[tuple[float, tuple | None]]:
        q1, q2, g, x1, x2, x11 = X
        out: list[tuple[float, tuple | None]] = []
        if q1 >= D:
            out += [(params.lam1, None)] if params.boundary == "absorb" else []
        elif q1 > 0:
            out.append((params.lam1, (q1 + 1, q2, g, x1, x2, x11)))
        else:
            out.append((params.lam1 * p, (1, q2, 1, x1, x2, x11)))
            out.append((params.lam1 * (1 - p), (1, q2, 2, x1, x2, x11)))
        if q2 >= D:
            out += [(params.lam2, None)] if params.boundary == "absorb" else []
        else:
            out.append((params.lam2, (q1, q2 + 1, g, x1, x2, x11)))
        out.append((params.mu1 * x1, (q1, q2, g, x1 - 1, x2, x11)))
        out.append((params.mu1 * x2, (q1, q2, g, x1, x2 - 1, x11)))
        out.append((params.mu3 * x11, (q1, q2, g, x1, x2, x11 - 1)))
        if x11 == 0 and q2 > 0:
            out.append((params.mu2, (q1, q2 - 1, g, x1, x2, x11)))
        return out

    def events(s: tuple, d: int):
        for X, prob in psi(s, d):
            if prob == 0:
                continue
            ev = eta(X)
            for rate, Y in ev:
                yield prob * rate, Y
            if params.self_loop == "post":
                yield prob * (nu - sum(r for r, _ in ev)), X

    def cost(s: tuple, d: int) -> float:
        q1, q2, g, x1, x2, x11 = s
        return params.c1 * (q1 + x1 + x2 + x11) + params.c2 * q2

    return build_ctmdp([initial or (0, 0, 0, 0, 0, 0)], actions, events, cost)
