"""Composition table (Algorithm 1) and its search for a computer space (§4.2).

Algorithm 1 (seed 002, §4.1). For the ``p`` collected jobs, in queue order, and
for each row ``j = 1 .. m_MAX``:

* if ``s_i = j`` the job alone is appended to row ``j``;
* if ``s_i < j`` and row ``r = j - s_i`` holds a composition none of whose jobs is
  already in row ``j`` (and which does not contain ``J_i``), ``J_i`` plus that
  composition (the first such one) is appended to row ``j``.

So every composition in row ``j`` is a set of distinct jobs whose preferable sizes
sum to exactly ``j`` (an exact packing of ``j`` computers), and the compositions of
one row are pairwise disjoint (so a row holds at most ``p`` jobs in total).

Search (§4.2), :meth:`CompositionTable.allocate` for a space of ``r`` computers:
take the first non-empty row at or below ``r``; in it, the composition with the
fewest already-allocated jobs (first on ties). If none of its jobs is allocated it
is returned. Otherwise each allocated job ``J`` of size ``s_J`` is replaced by an
alternative from row ``s_J`` found by the same rule, recursively; the recursion
fails when a searched row (for an alternative) holds a single composition or the
depth bound ``max_depth`` is reached. On failure the next non-empty row below is
tried, down to row 1. The returned jobs are distinct, unallocated, and their sizes
sum to the row index.

Storage (for the compiled kernels): row ``j``'s compositions are consecutive runs
of ``jobs[j, :]``; composition ``k`` is ``jobs[j, start[j, k]:start[j, k + 1]]``;
``ncomp[j]`` counts them. ``flag[i]`` is 0 (free), 1 (allocated), 2 (chosen by the
search in progress).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import ModelError

__all__ = ["CompositionTable"]


@njit(cache=True)
def _build(sizes, m_max, jobs, start, ncomp, inrow):
    """Compiled, no checks: Algorithm 1; fills ``jobs``, ``start``, ``ncomp``."""
    p = sizes.shape[0]
    for i in range(p):
        s = sizes[i]
        for j in range(s, m_max + 1):
            if j == s:
                f = start[j, ncomp[j]]
                jobs[j, f] = i
                ncomp[j] += 1
                start[j, ncomp[j]] = f + 1
                inrow[j, i] = True
                continue
            r = j - s
            for k in range(ncomp[r]):
                a = start[r, k]
                b = start[r, k + 1]
                ok = True
                for q in range(a, b):
                    x = jobs[r, q]
                    if x == i or inrow[j, x]:
                        ok = False
                        break
                if ok:
                    f = start[j, ncomp[j]]
                    for q in range(a, b):
                        x = jobs[r, q]
                        jobs[j, f] = x
                        inrow[j, x] = True
                        f += 1
                    jobs[j, f] = i
                    inrow[j, i] = True
                    ncomp[j] += 1
                    start[j, ncomp[j]] = f + 1
                    break


@njit(cache=True)
def _select(row0, max_depth, jobs, start, ncomp, sizes, flag, out, stack_row, stack_depth):
    """Compiled, no checks: §4.2 choice in ``row0`` with the repair search; writes the
    chosen jobs to ``out`` (flag 2) and returns how many, or -1 (rolled back).

    The paper's recursion is run with an explicit stack (depth-first, children in
    order), because a failure anywhere fails the whole choice, and because numba
    cannot reload a cached recursive function."""
    nout = 0
    sp = 0
    stack_row[0] = row0
    stack_depth[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        row = stack_row[sp]
        depth = stack_depth[sp]
        nc = ncomp[row]
        if nc == 0:
            nout = -nout - 1
            break
        best = -1
        bestcnt = 1 << 30
        for k in range(nc):
            cnt = 0
            for q in range(start[row, k], start[row, k + 1]):
                if flag[jobs[row, q]] != 0:
                    cnt += 1
            if cnt < bestcnt:
                best = k
                bestcnt = cnt
                if cnt == 0:
                    break
        a = start[row, best]
        b = start[row, best + 1]
        if bestcnt > 0 and ((depth > 0 and nc == 1) or depth >= max_depth):
            nout = -nout - 1  # no alternative jobs in a searched row: the search fails
            break
        # allocated members need alternatives from their own rows: push them in
        # reverse so that they are searched in order (depth first), then take the rest
        for q in range(b - 1, a - 1, -1):
            x = jobs[row, q]
            if flag[x] != 0:
                stack_row[sp] = sizes[x]
                stack_depth[sp] = depth + 1
                sp += 1
        for q in range(a, b):
            x = jobs[row, q]
            if flag[x] == 0:
                flag[x] = 2
                out[nout] = x
                nout += 1
    if nout < 0:
        n = -nout - 1
        for q in range(n):
            flag[out[q]] = 0
        return -1
    return nout


@njit(cache=True)
def _allocate(r, max_depth, jobs, start, ncomp, sizes, flag, out):
    """Compiled, no checks: allocate jobs to a space of ``r``; returns how many (in ``out``)."""
    m_max = ncomp.shape[0] - 1
    stack_row = np.empty((max_depth + 2) * (m_max + 1), dtype=np.int64)
    stack_depth = np.empty_like(stack_row)
    top = r if r < m_max else m_max
    for row in range(top, 0, -1):
        if ncomp[row] == 0:
            continue
        k = _select(row, max_depth, jobs, start, ncomp, sizes, flag, out, stack_row, stack_depth)
        if k > 0:
            for q in range(k):
                flag[out[q]] = 1
            return k
    return 0


class CompositionTable:
    """Rows ``1..m_max`` of job compositions for jobs with preferable sizes ``sizes``.

    ``allocated`` records jobs already given to a cluster; :meth:`allocate` marks them.
    """

    def __init__(self, sizes: np.ndarray, m_max: int, *, max_depth: int = 8) -> None:
        sizes = np.ascontiguousarray(sizes, dtype=np.int64)
        if sizes.ndim != 1:
            raise ModelError("sizes: expected a 1-D array of preferable sizes")
        if m_max < 1:
            raise ModelError(f"m_max: must be >= 1, got {m_max}")
        if sizes.size and (sizes.min() < 1 or sizes.max() > m_max):
            raise ModelError(f"sizes: preferable sizes must lie in [1, {m_max}], got [{sizes.min()}, {sizes.max()}]")
        if max_depth < 1:
            raise ModelError(f"max_depth: must be >= 1, got {max_depth}")
        p = sizes.shape[0]
        self.sizes = sizes
        self.m_max = int(m_max)
        self.max_depth = int(max_depth)
        self.jobs = np.zeros((self.m_max + 1, max(p, 1)), dtype=np.int64)
        self.start = np.zeros((self.m_max + 1, p + 1), dtype=np.int64)
        self.ncomp = np.zeros(self.m_max + 1, dtype=np.int64)
        inrow = np.zeros((self.m_max + 1, max(p, 1)), dtype=np.bool_)
        _build(sizes, self.m_max, self.jobs, self.start, self.ncomp, inrow)
        self.flag = np.zeros(p, dtype=np.int64)
        self._out = np.empty(max(p, 1), dtype=np.int64)

    @property
    def allocated(self) -> np.ndarray:
        return self.flag == 1

    @property
    def rows(self) -> list[list[tuple[int, ...]]]:
        """The table as Python lists of job-index tuples (row 0 is empty)."""
        return [[tuple(int(x) for x in self.jobs[j, self.start[j, k]:self.start[j, k + 1]])
                 for k in range(self.ncomp[j])] for j in range(self.m_max + 1)]

    def allocate(self, r: int) -> list[int]:
        """Jobs that exactly fill the largest achievable part of a space of ``r``
        computers (marked allocated); ``[]`` if no unallocated job fits."""
        k = _allocate(int(r), self.max_depth, self.jobs, self.start, self.ncomp, self.sizes, self.flag, self._out)
        return self._out[:k].tolist()

    def mark(self, jobs) -> None:
        self.flag[np.asarray(jobs, dtype=np.int64)] = 1

    @property
    def n_unallocated(self) -> int:
        return int((self.flag == 0).sum())

    def check(self) -> None:
        """Certificate of Algorithm 1: each composition is an exact packing of its row
        (distinct jobs, sizes summing to the row index) and rows are disjoint sets."""
        for j, comps in enumerate(self.rows):
            seen: set[int] = set()
            for comp in comps:
                if len(set(comp)) != len(comp):
                    raise AssertionError(f"row {j}: repeated job in {comp}")
                if int(self.sizes[list(comp)].sum()) != j:
                    raise AssertionError(f"row {j}: composition {comp} sums to {self.sizes[list(comp)].sum()}")
                if seen & set(comp):
                    raise AssertionError(f"row {j}: compositions are not disjoint")
                seen.update(comp)
