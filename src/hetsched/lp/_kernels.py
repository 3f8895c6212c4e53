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


@njit(cache=True)
def newton_direction(H, g, ridge, dy):  # pragma: no cover - compiled
    """Direction of the equality-constrained Newton step on the simplex.

    Solves ``[H + ridge I, 1; 1', 0] [dy; nu] = [-g; 0]`` through a Cholesky
    factorisation of ``H + ridge I``: ``dy = x_g - (1'x_g / 1'x_1) x_1`` with
    ``(H + ridge I) x_g = -g`` and ``(H + ridge I) x_1 = 1``. Single-threaded
    (a multi-threaded LAPACK solve spends most of its time waiting for cores on
    a loaded machine), ``N^3/6`` multiply-adds in contiguous row dot products.
    Writes ``dy`` and returns True; returns False (``dy`` unspecified) when a
    pivot falls below ``1e-9`` of the largest diagonal entry, i.e. when ``H``
    is nearly singular (the caller then takes the least-squares solution).
    Compiled, no checks.
    """
    N = H.shape[0]
    L = np.zeros((N, N))
    dmax = 0.0
    for i in range(N):
        dmax = max(dmax, H[i, i] + ridge)
    for j in range(N):
        s = H[j, j] + ridge
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 1e-9 * dmax:
            return False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, N):
            t = H[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / d
    xg = np.empty(N)
    x1 = np.empty(N)
    for i in range(N):  # forward: L z = b
        tg = -g[i]
        t1 = 1.0
        for k in range(i):
            tg -= L[i, k] * xg[k]
            t1 -= L[i, k] * x1[k]
        xg[i] = tg / L[i, i]
        x1[i] = t1 / L[i, i]
    for i in range(N - 1, -1, -1):  # backward: L' x = z
        tg = xg[i]
        t1 = x1[i]
        for k in range(i + 1, N):
            tg -= L[k, i] * xg[k]
            t1 -= L[k, i] * x1[k]
        xg[i] = tg / L[i, i]
        x1[i] = t1 / L[i, i]
    sg = 0.0
    s1 = 0.0
    for i in range(N):
        sg += xg[i]
        s1 += x1[i]
    nu = sg / s1
    for i in range(N):
        dy[i] = xg[i] - nu * x1[i]
    return True


@njit(cache=True)
def lu_solve(A, b, x):  # pragma: no cover - compiled
    """Solve ``A x = b`` by Gaussian elimination with partial pivoting, single-threaded
    (the fallback of :func:`newton_direction` for a nearly singular Hessian: the
    whole KKT system). Works on copies; writes ``x``; returns False if a pivot is
    exactly 0 (a singular system). Compiled, no checks."""
    n = A.shape[0]
    U = A.copy()
    y = b.copy()
    for k in range(n):
        p = k
        best = abs(U[k, k])
        for i in range(k + 1, n):
            if abs(U[i, k]) > best:
                best = abs(U[i, k])
                p = i
        if best == 0.0:
            return False
        if p != k:
            for j in range(n):
                t = U[k, j]
                U[k, j] = U[p, j]
                U[p, j] = t
            t = y[k]
            y[k] = y[p]
            y[p] = t
        piv = U[k, k]
        for i in range(k + 1, n):
            f = U[i, k] / piv
            if f != 0.0:
                for j in range(k + 1, n):
                    U[i, j] -= f * U[k, j]
                y[i] -= f * y[k]
    for i in range(n - 1, -1, -1):
        t = y[i]
        for j in range(i + 1, n):
            t -= U[i, j] * x[j]
        x[i] = t / U[i, i]
    return True
