"""Compiled kernels of the allocation LP's price route (see :mod:`hetsched.lp._prices`).

``top_two`` sweeps the class-major rate matrix ``nu[i, j]`` with the machine
loop innermost (branch-free selects, so LLVM vectorises it); ``smooth_terms``
works machine by machine on the few near-tied machines only (``muT[j, i]``,
machine-major). No checks, no allocation in the loops.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def top_two(y, nu, best, top, second):  # pragma: no cover - compiled
    """Per machine ``j``: the best score ``y_i nu_ij`` over the classes that can
    run (``nu_ij > 0``), its class (``-1`` if none) and the second-best score
    (``-1`` if none). Ties go to the lowest class index. Writes ``best``,
    ``top``, ``second``. Compiled, no checks."""
    N, M = nu.shape
    for j in range(M):
        best[j] = -1
        top[j] = -1.0
        second[j] = -1.0
    for i in range(N):
        yi = y[i]
        for j in range(M):
            m = nu[i, j]
            v = yi * m if m > 0.0 else -1.0
            t = top[j]
            gt = v > t
            second[j] = t if gt else max(second[j], v)
            top[j] = v if gt else t
            best[j] = i if gt else best[j]


@njit(cache=True)
def smooth_terms(y, muT, cap, tau, top, cut, g, H):  # pragma: no cover - compiled
    """Entropic-smoothing terms of the machines in ``muT`` (machine-major).

    Adds ``cap_j tau log sum_i exp((y_i mu_ij - top_j) / tau)`` over the
    machines to the returned value, their gradient to ``g`` and Hessian to
    ``H`` (not zeroed); classes more than ``cut * tau`` below ``top_j`` are
    skipped (their weight is below ``exp(-cut)``). Compiled, no checks.
    """
    M, N = muT.shape
    q = np.empty(N)
    act = np.empty(N, np.int64)
    val = 0.0
    for j in range(M):
        c = cap[j]
        mx = top[j]
        z = 0.0
        na = 0
        for i in range(N):
            m = muT[j, i]
            if m <= 0.0:
                continue
            d = (y[i] * m - mx) / tau
            if d > -cut:
                e = np.exp(d)
                q[na] = e
                act[na] = i
                na += 1
                z += e
        val += c * tau * np.log(z)
        w = c / tau
        for a in range(na):
            i = act[a]
            q[a] = q[a] / z * muT[j, i]  # p_ij mu_ij
            g[i] += c * q[a]
        for a in range(na):
            i = act[a]
            H[i, i] += w * q[a] * muT[j, i]
            for b in range(na):
                H[i, act[b]] -= w * q[a] * q[b]
    return val
