"""Compiled kernels for state-space generation (numba, ``cache=True``, no checks)."""

from __future__ import annotations

import numpy as np
from numba import njit

_EMPTY = -1


@njit(cache=True, inline="always")
def _row_hash(row):
    # FNV-1a over the token counts, then a splitmix64 finaliser so the low bits
    # (used as the table slot) depend on every place.
    h = np.uint64(1469598103934665603)
    for j in range(row.shape[0]):
        h = (h ^ np.uint64(row[j])) * np.uint64(1099511628211)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x7FB5D329728EA185)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x81DADEF4BC2DD44D)
    h ^= h >> np.uint64(33)
    return h


@njit(cache=True)
def rehash(store, n, table):
    """Compiled, no checks: fill the empty ``table`` with rows ``store[:n]``."""
    mask = np.uint64(table.shape[0] - 1)
    for k in range(n):
        pos = _row_hash(store[k]) & mask
        while table[pos] != _EMPTY:
            pos = (pos + np.uint64(1)) & mask
        table[pos] = k


@njit(cache=True)
def insert_rows(table, store, n, cand, out_idx):
    """Compiled, no checks: look up / append each row of ``cand``; writes indices to
    ``out_idx`` and returns the new number of stored rows (capacity pre-grown)."""
    mask = np.uint64(table.shape[0] - 1)
    P = store.shape[1]
    for i in range(cand.shape[0]):
        pos = _row_hash(cand[i]) & mask
        while True:
            k = table[pos]
            if k == _EMPTY:
                for j in range(P):
                    store[n, j] = cand[i, j]
                table[pos] = n
                out_idx[i] = n
                n += 1
                break
            same = True
            for j in range(P):
                if store[k, j] != cand[i, j]:
                    same = False
                    break
            if same:
                out_idx[i] = k
                break
            pos = (pos + np.uint64(1)) & mask
    return n


@njit(cache=True)
def gauss_seidel(indptr, indices, data, diag, x, omega, sweeps):
    """Compiled, no checks: ``sweeps`` SOR sweeps for ``x A = 0`` with A = Q given
    column-wise (CSC of Q: column i holds inflow rates into state i), in place."""
    n = x.shape[0]
    for _ in range(sweeps):
        for i in range(n):
            s = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if j != i:
                    s += x[j] * data[k]
            x[i] = (1.0 - omega) * x[i] + omega * s / diag[i]


@njit(cache=True)
def coarse_generator(indptr, indices, data, agg, w, out):
    """Compiled, no checks: out[I, J] += w_i q_ij over the CSR of Q (aggregated generator)."""
    n = indptr.shape[0] - 1
    out[:, :] = 0.0
    for i in range(n):
        I = agg[i]
        wi = w[i]
        for kk in range(indptr[i], indptr[i + 1]):
            out[I, agg[indices[kk]]] += wi * data[kk]


@njit(cache=True)
def gth(Q):
    """Compiled, no checks: stationary vector of a small dense generator by the
    Grassmann-Taksar-Heyman elimination (no subtractions; ``Q`` is overwritten)."""
    n = Q.shape[0]
    for k in range(n - 1, 0, -1):
        s = 0.0
        for j in range(k):
            s += Q[k, j]
        if s <= 0.0:
            s = 1e-300
        for i in range(k):
            Q[i, k] /= s
        for i in range(k):
            qik = Q[i, k]
            if qik != 0.0:
                for j in range(k):
                    Q[i, j] += qik * Q[k, j]
    x = np.zeros(n)
    x[0] = 1.0
    for k in range(1, n):
        s = 0.0
        for i in range(k):
            s += x[i] * Q[i, k]
        x[k] = s
    tot = x.sum()
    for i in range(n):
        x[i] /= tot
    return x
