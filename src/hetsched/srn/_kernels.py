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


@njit(cache=True)
def assemble_generator(n, rows, cols, vals, indptr, indices, data):
    """Compiled, no checks: CSR generator ``Q`` (n x n) from COO off-diagonal rates.

    Duplicates are summed, rates from a state to itself dropped, the diagonal set to
    minus the row sum; columns sorted within each row. ``indptr`` has ``n + 1``
    entries, ``indices``/``data`` room for ``len(rows) + n``. Returns the number of
    non-zeros written.
    """
    m = rows.shape[0]
    cnt = np.zeros(n + 1, np.int64)
    for k in range(m):
        cnt[rows[k] + 1] += 1
    for i in range(n):
        cnt[i + 1] += cnt[i]
    pos = cnt[:n].copy()
    perm = np.empty(m, np.int64)
    for k in range(m):  # counting sort of the triplets by row
        r = rows[k]
        perm[pos[r]] = k
        pos[r] += 1
    slot = np.full(n, -1, np.int64)  # slot[j]: position of column j in the current row, if any
    nnz = 0
    indptr[0] = 0
    for i in range(n):
        start = nnz
        indices[nnz] = i  # the diagonal first, filled in below
        data[nnz] = 0.0
        slot[i] = nnz
        nnz += 1
        tot = 0.0
        for t in range(cnt[i], cnt[i + 1]):
            k = perm[t]
            j = cols[k]
            if j == i:
                continue
            v = vals[k]
            tot += v
            if slot[j] >= start:
                data[slot[j]] += v
            else:
                slot[j] = nnz
                indices[nnz] = j
                data[nnz] = v
                nnz += 1
        data[start] = -tot
        # sort the row by column (rows are short: insertion sort)
        for a in range(start + 1, nnz):
            jc = indices[a]
            jv = data[a]
            b = a - 1
            while b >= start and indices[b] > jc:
                indices[b + 1] = indices[b]
                data[b + 1] = data[b]
                b -= 1
            indices[b + 1] = jc
            data[b + 1] = jv
        # forget this row's columns, then drop zero entries (an absorbing state's diagonal)
        for a in range(start, nnz):
            slot[indices[a]] = -1
        w = start
        for a in range(start, nnz):
            if data[a] != 0.0:
                indices[w] = indices[a]
                data[w] = data[a]
                w += 1
        nnz = w
        indptr[i + 1] = nnz
    return nnz


@njit(cache=True)
def aggregate(indptr, indices, data, agg, x, mass, out):
    """Compiled, no checks: aggregate masses ``mass[I] = sum_{agg[i]=I} x_i`` and the aggregated
    generator ``out[I, J] = sum w_i q_ij`` with ``w_i = x_i / mass[agg[i]]`` (CSR of Q)."""
    n = indptr.shape[0] - 1
    mass[:] = 0.0
    for i in range(n):
        mass[agg[i]] += x[i]
    for I in range(mass.shape[0]):
        if mass[I] <= 0.0:
            mass[I] = 1e-300
    out[:, :] = 0.0
    for i in range(n):
        I = agg[i]
        wi = x[i] / mass[I]
        for kk in range(indptr[i], indptr[i + 1]):
            out[I, agg[indices[kk]]] += wi * data[kk]


@njit(cache=True)
def disaggregate(x, agg, mass, xi):
    """Compiled, no checks: rescale each aggregate to its new mass, ``x_i *= xi[I] / mass[I]``, in place."""
    for i in range(x.shape[0]):
        I = agg[i]
        x[i] *= xi[I] / mass[I]


@njit(cache=True)
def residual(indptr, indices, data, x):
    """Compiled, no checks: ``||x Q||_1`` from the CSC arrays of Q (column i: inflow into i)."""
    tot = 0.0
    for i in range(indptr.shape[0] - 1):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += x[indices[k]] * data[k]
        tot += abs(s)
    return tot
