"""Compiled (numba) sweeps of the discounted solvers: Gauss-Seidel passes, the residual range, Anderson mixing.

Every kernel takes the CSR arrays of a :class:`~hetsched.mdp.model.CTMDP` and
output buffers; no checks, no allocation in the loops. :func:`_warm_kernels`
loads one solver's kernels from numba's on-disk cache once per process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # numba is a hard dependency of hetsched; the fallback keeps NUMBA_DISABLE_JIT-style runs simple
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*args: Any, **kwargs: Any) -> Any:
        if args and callable(args[0]):
            return args[0]
        return lambda f: f


@njit(cache=True)
def _gs_sweeps(v, state_ptr, row_ptr, cols, vals, cost, out, beta, n_sweeps, pol):
    """Compiled, no checks: ``n_sweeps`` symmetric Gauss-Seidel Bellman sweeps on ``v``.

    Each state's own self-loop is solved exactly: v(s) = min_k (c_k + sum q v) / (beta + q_k).
    Writes ``v`` in place and the minimizing pair index of the last sweep into ``pol``.
    """
    S = v.size
    for it in range(2 * n_sweeps):
        forward = it % 2 == 0
        for idx in range(S):
            s = idx if forward else S - 1 - idx
            best = np.inf
            bk = -1
            for k in range(state_ptr[s], state_ptr[s + 1]):
                acc = cost[k]
                for t in range(row_ptr[k], row_ptr[k + 1]):
                    acc += vals[t] * v[cols[t]]
                acc /= beta + out[k]
                if acc < best:
                    best = acc
                    bk = k
            v[s] = best
            pol[s] = bk


@njit(cache=True)
def _gs_eval_sweeps(v, pk, row_ptr, cols, vals, cost, out, beta, n_sweeps):
    """Compiled, no checks: symmetric Gauss-Seidel sweeps evaluating the fixed pairs ``pk``."""
    S = v.size
    for it in range(2 * n_sweeps):
        forward = it % 2 == 0
        for idx in range(S):
            s = idx if forward else S - 1 - idx
            k = pk[s]
            acc = cost[k]
            for t in range(row_ptr[k], row_ptr[k + 1]):
                acc += vals[t] * v[cols[t]]
            v[s] = acc / (beta + out[k])


@njit(cache=True, fastmath={"contract"})
def _gs_pass(v, state_ptr, row_ptr, cols, svals, scost, forward):
    """Compiled, no checks: one Gauss-Seidel Bellman pass (forward or backward) on ``v`` in place.

    Pre-scaled rows (see :func:`_scaled_rows`): ``v(s) = min_k scost_k + sum svals v``,
    i.e. ``min_k (c_k + sum_j q_kj v_j) / (beta + q_k)`` with the self-loop solved exactly.
    """
    S = v.size
    for idx in range(S):
        s = idx if forward else S - 1 - idx
        best = np.inf
        for k in range(state_ptr[s], state_ptr[s + 1]):
            acc = scost[k]
            for t in range(row_ptr[k], row_ptr[k + 1]):
                acc += svals[t] * v[cols[t]]
            if acc < best:
                best = acc
        v[s] = best

@njit(cache=True)
def _residual_range(v, state_ptr, row_ptr, cols, vals, cost, out, beta, nu):
    """Compiled ``(min w, max w)`` of ``w = T v - v`` for the uniformized Jacobi operator ``T``.

    The same quantity as :func:`_certify`, without storing the pair Q-values: the
    solvers test the stopping rule with it and confirm with :func:`_certify`.
    """
    S = v.size
    lo = np.inf
    hi = -np.inf
    for s in range(S):
        best = np.inf
        for k in range(state_ptr[s], state_ptr[s + 1]):
            acc = cost[k] + (nu - out[k]) * v[s]
            for t in range(row_ptr[k], row_ptr[k + 1]):
                acc += vals[t] * v[cols[t]]
            if acc < best:
                best = acc
        w = best / (nu + beta) - v[s]
        if w < lo:
            lo = w
        if w > hi:
            hi = w
    return lo, hi


@njit(cache=True, fastmath={"reassoc", "contract"})
def _anderson_kernel(x, g, dF, dG, f_prev, g_prev, H, count, first, limit):
    """Compiled type-II Anderson step on ``x`` (in place) from ``g = G(x)``; see :class:`_Anderson`.

    ``dF``/``dG`` are ``(m, n)`` rings of differences of residuals / images, ``H`` their
    Gram matrix (one new row per step), ``count`` the differences stored before this
    step. A first step, or one whose residual ``max |g - x|`` exceeds ``limit``, drops
    the history and takes the plain step ``g``. Returns ``(max |g - x|, k)`` with ``k``
    the number of differences used (0: plain step, history restarted). Reassociated
    sums (vectorized dot products) change only the acceleration, never the certificate.
    """
    n = x.size
    m = dF.shape[0]
    r = 0.0
    for i in range(n):
        f = abs(g[i] - x[i])
        if f > r:
            r = f
    if first or r > limit:  # no history yet, or the residual grew: restart with a plain step
        for i in range(n):
            f_prev[i] = g[i] - x[i]
            g_prev[i] = g[i]
            x[i] = g[i]
        return r, 0
    slot = count % m
    k = min(count + 1, m)
    a = dF[slot]
    b = dG[slot]
    for i in range(n):
        f = g[i] - x[i]
        a[i] = f - f_prev[i]
        b[i] = g[i] - g_prev[i]
        f_prev[i] = f
        g_prev[i] = g[i]
    rhs = np.zeros(k)
    for j in range(k):
        d = dF[j]
        s1 = 0.0
        s2 = 0.0
        for i in range(n):
            s1 += a[i] * d[i]
            s2 += d[i] * f_prev[i]
        H[slot, j] = s1
        H[j, slot] = s1
        rhs[j] = s2
    Hk = H[:k, :k].copy()
    tr = 0.0
    for j in range(k):
        tr += Hk[j, j]
    for j in range(k):
        Hk[j, j] += 1e-12 * tr + 1e-300
    gamma = np.linalg.solve(Hk, rhs)
    for i in range(n):
        x[i] = g[i]
    for j in range(k):
        gj = gamma[j]
        d = dG[j]
        for i in range(n):
            x[i] -= gj * d[i]
    return r, k


_WARM: set[tuple[str, str]] = set()


def _warm_kernels(kind: str = "vi", index_dtype: Any = np.int32) -> None:
    """Compile (or load from numba's cache) the kernels of one solver once, so its timings exclude it.

    ``kind``: ``"vi"`` (Gauss-Seidel pass, residual range, Anderson) or ``"mpi"``;
    ``index_dtype``: the index width :func:`_csr_arrays` picked. Loading only what is
    used keeps the first call of a command short.
    """
    it = np.dtype(index_dtype)
    key = (kind, it.name)
    if key in _WARM:
        return
    one = np.ones(1)
    ptr, rp, cols = np.array([0, 1], dtype=it), np.array([0, 0], dtype=it), np.zeros(0, it)
    if kind == "mpi":
        _gs_sweeps(np.zeros(1), ptr, rp, cols, np.zeros(0), one, one, 1.0, 1, np.zeros(1, np.int64))
        _gs_eval_sweeps(np.zeros(1), np.zeros(1, np.int64), rp, cols, np.zeros(0), one, one, 1.0, 1)
    else:
        _gs_pass(np.zeros(1), ptr, rp, cols, np.zeros(0), one, True)
        _residual_range(np.zeros(1), ptr, rp, cols, np.zeros(0), one, one, 1.0, 2.0)
        _anderson_kernel(np.zeros(1), one, np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32),
                         np.zeros(1), np.zeros(1), np.zeros((1, 1)), 0, False, 1.0)
    _WARM.add(key)
