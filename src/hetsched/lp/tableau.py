"""The compiled LP tableau of the allocation LP, shared by the desktop-grid and
decentralized models (compiled, no checks; every function works in place).

The LP (thesis (2.1)-(2.3), (3.1)-(3.3), (4.1)-(4.3)) over ``C`` columns
(machines, or groups of interchangeable machines) and ``N`` classes::

    max  lam
    s.t. lam alpha_i - sum_c mu_ic delta_ic <= 0      (class rows i = 0..N-1)
         sum_i delta_ic                     <= cap_c   (column rows N + c)
         delta >= 0, lam >= 0

Dense tableau layout (``m = N + C`` rows, width ``nv + 1``):

* variable ``k = i * C + c`` is ``delta_ic`` (``n0 = N * C`` of them), ``n0`` is
  ``lam``, ``n0 + 1 + r`` the slack of row ``r``; the last column is the
  right-hand side;
* ``basis[r]`` is the basic variable of row ``r``; ``obj`` is the reduced-cost
  row of ``min -lam`` (the same width).

Rates are passed transposed, ``muT[c, i] = mu_ic`` (one row per column, as the
kernels keep them).

Routines:

* :func:`build` -- slack-basis tableau; :func:`pivot`;
* :func:`primal` -- primal simplex from a feasible basis; :func:`dual` -- dual
  simplex after a right-hand-side change (an availability event changes one
  ``cap_c``: :func:`set_cap`), both Dantzig's rule, Bland's after 50 pivots;
* :func:`refactor` -- the tableau of (new) data for a given basis,
  ``T = B^-1 [A | I | b]``, assembled column by column from ``B^-1`` (every
  ``delta`` column has two nonzeros); used to bound round-off after many
  pivots and to warm-start from an old basis when the data changed;
* :func:`solve` -- warm-started solve (refactor the old basis; primal simplex
  if still primal feasible, dual if still dual feasible, else cold start);
* :func:`support` -- ``delta*_ic > tol`` and ``lam*`` of the current basis;
* :func:`gub_simplex` -- a simplex on the *structured* basis of the
  ``cap = 1`` LP (``O(NM)`` per pivot), tried before the dense tableau by the
  decentralized model, whose machines re-solve after small view changes;
* :func:`solve_vertex` -- allocate, warm-start or cold-solve, write the support
  (convenience for callers that do not keep a tableau).

Tests compare every route with HiGHS (``tests/lp/test_tableau.py``).
"""

# long-file: one compiled kernel family (numba) sharing the tableau layout above; splitting
# it would spread one data structure's pivoting rules over several files.
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["build", "pivot", "primal", "dual", "set_cap", "support", "refactor", "solve", "solve_vertex",
           "gub_simplex", "invert", "inverse", "LP_TOL", "tableau_shape"]

LP_TOL = 1e-9
INF = np.inf


def tableau_shape(N: int, C: int) -> tuple[int, int]:
    """``(rows, width)`` of the tableau for ``N`` classes and ``C`` columns."""
    m = N + C
    return m, N * C + 1 + m + 1


@njit(cache=True)
def build(T, obj, basis, muT, alpha, cap):
    """Slack-basis tableau of the LP above (writes ``T``, ``obj``, ``basis``)."""
    C, N = muT.shape
    m = N + C
    n0 = N * C
    nv = n0 + 1 + m
    T[:, :] = 0.0
    obj[:] = 0.0
    for i in range(N):
        for c in range(C):
            T[i, i * C + c] = -muT[c, i]
            T[N + c, i * C + c] = 1.0
        T[i, n0] = alpha[i]
    for r in range(m):
        T[r, n0 + 1 + r] = 1.0
        basis[r] = n0 + 1 + r
    for c in range(C):
        T[N + c, nv] = cap[c]
    obj[n0] = -1.0  # minimise -lam


@njit(cache=True)
def pivot(T, obj, basis, r, k):
    """Pivot on row ``r``, column ``k``."""
    m = T.shape[0]
    w = T.shape[1]
    piv = T[r, k]
    for q in range(w):
        T[r, q] /= piv
    for row in range(m):
        if row != r:
            f = T[row, k]
            if f != 0.0:
                for q in range(w):
                    T[row, q] -= f * T[r, q]
            T[row, k] = 0.0
    f = obj[k]
    if f != 0.0:
        for q in range(w):
            obj[q] -= f * T[r, q]
        obj[k] = 0.0
    basis[r] = k


@njit(cache=True)
def primal(T, obj, basis):
    """Primal simplex from a feasible basis; pivots made, -1 unbounded, -2 iteration limit."""
    m = T.shape[0]
    nv = T.shape[1] - 1
    it = 0
    while True:
        k = -1
        best = -LP_TOL
        for q in range(nv):
            if obj[q] < best:
                k = q
                if it > 50:
                    break
                best = obj[q]
        if k < 0:
            return it
        r = -1
        br = INF
        for row in range(m):
            a = T[row, k]
            if a > LP_TOL:
                ratio = T[row, nv] / a
                if ratio < br - 1e-12 or (r >= 0 and ratio <= br + 1e-12 and basis[row] < basis[r]):
                    r = row
                    br = ratio
        if r < 0:
            return -1
        pivot(T, obj, basis, r, k)
        it += 1
        if it > 100000:
            return -2


@njit(cache=True)
def dual(T, obj, basis):
    """Dual simplex from a dual-feasible basis; pivots made, -1 infeasible, -2 iteration limit."""
    m = T.shape[0]
    nv = T.shape[1] - 1
    it = 0
    while True:
        r = -1
        most = -LP_TOL
        for row in range(m):
            v = T[row, nv]
            if v < most:
                if it > 50:
                    if r < 0 or basis[row] < basis[r]:
                        r = row
                else:
                    most = v
                    r = row
        if r < 0:
            return it
        k = -1
        br = INF
        for q in range(nv):
            a = T[r, q]
            if a < -LP_TOL:
                d = obj[q]
                if d < 0.0:
                    d = 0.0
                ratio = d / (-a)
                if ratio < br - 1e-12:
                    k = q
                    br = ratio
        if k < 0:
            return -1
        pivot(T, obj, basis, r, k)
        it += 1
        if it > 100000:
            return -2


@njit(cache=True)
def set_cap(T, obj, cap, N, c, newcap):
    """Change ``cap[c]`` to ``newcap`` in the right-hand side of the current tableau."""
    d = newcap - cap[c]
    cap[c] = newcap
    if d == 0.0:
        return
    m = T.shape[0]
    nv = T.shape[1] - 1
    n0 = nv - 1 - m
    sc = n0 + 1 + N + c
    for row in range(m):
        T[row, nv] += d * T[row, sc]
    obj[nv] += d * obj[sc]


@njit(cache=True)
def support(T, basis, muT, out):
    """Write ``delta*_ic > LP_TOL`` into ``out[c, i]``; return ``(changed, lam*)``.

    No allocation: the change is detected by counting (basic variables are
    distinct, so the new support has ``nnew`` entries of which ``same`` were
    already set; it equals the old one iff ``same == nnew == nold``).
    """
    C, N = muT.shape
    m = T.shape[0]
    nv = T.shape[1] - 1
    n0 = N * C
    lam = 0.0
    nnew = 0
    same = 0
    for r in range(m):
        k = basis[r]
        if k < n0:
            if T[r, nv] > LP_TOL:
                i = k // C
                c = k - i * C
                if muT[c, i] > 0.0:
                    nnew += 1
                    if out[c, i]:
                        same += 1
        elif k == n0:
            lam = T[r, nv]
    nold = 0
    for c in range(C):
        for i in range(N):
            if out[c, i]:
                nold += 1
    changed = not (same == nnew and nnew == nold)
    if changed:
        for c in range(C):
            for i in range(N):
                out[c, i] = False
        for r in range(m):
            k = basis[r]
            if k < n0 and T[r, nv] > LP_TOL:
                i = k // C
                c = k - i * C
                if muT[c, i] > 0.0:
                    out[c, i] = True
    return changed, lam


@njit(cache=True)
def invert(B, Binv):
    """Gauss-Jordan inverse with partial pivoting; False if (numerically) singular."""
    m = B.shape[0]
    W = B.copy()
    for r in range(m):
        for q in range(m):
            Binv[r, q] = 1.0 if r == q else 0.0
    scale = 0.0
    for r in range(m):
        for q in range(m):
            v = abs(W[r, q])
            if v > scale:
                scale = v
    for col in range(m):
        p = col
        best = abs(W[col, col])
        for r in range(col + 1, m):
            v = abs(W[r, col])
            if v > best:
                best = v
                p = r
        if best <= 1e-12 * scale:
            return False
        if p != col:
            for q in range(m):
                tmp = W[col, q]
                W[col, q] = W[p, q]
                W[p, q] = tmp
                tmp = Binv[col, q]
                Binv[col, q] = Binv[p, q]
                Binv[p, q] = tmp
        piv = W[col, col]
        for q in range(m):
            W[col, q] /= piv
            Binv[col, q] /= piv
        for r in range(m):
            if r != col:
                f = W[r, col]
                if f != 0.0:
                    for q in range(m):
                        W[r, q] -= f * W[col, q]
                        Binv[r, q] -= f * Binv[col, q]
    return True

@njit(cache=True)
def inverse(B, Binv):
    """``Binv = B^-1`` by LAPACK, verified on one vector; else Gauss-Jordan (False if singular)."""
    m = B.shape[0]
    ok = True
    try:
        Binv[:, :] = np.linalg.inv(B)
    except Exception:  # exactly singular
        ok = False
    if ok:
        # check B (Binv x) = x on x = (1, 2, ..., m): O(m^2), no BLAS threads
        y = np.zeros(m)
        for r in range(m):
            v = 0.0
            for q in range(m):
                v += Binv[r, q] * (q + 1.0)
            y[r] = v
        for r in range(m):
            v = 0.0
            for q in range(m):
                v += B[r, q] * y[q]
            e = v - (r + 1.0)
            if not abs(e) <= 1e-7 * m:
                ok = False
                break
        if ok:
            return True
    return invert(B, Binv)

@njit(cache=True)
def refactor(T, obj, basis, muT, alpha, cap):
    """Tableau of (new) data for ``basis`` (T = B^-1 [A | I | b]); False if B is singular.

    Columns of ``A`` have two nonzeros (delta_ij: ``-mu_ij`` in class row ``i``,
    1 in machine row ``N + j``), so ``T`` is assembled column by column from
    ``B^-1`` in ``O(m * width)`` instead of a dense product.
    """
    m = T.shape[0]
    nv = T.shape[1] - 1
    C, N = muT.shape
    n0 = N * C
    B = np.zeros((m, m))
    for r in range(m):
        k = basis[r]
        if k < n0:
            i = k // C
            c = k - i * C
            B[i, r] = -muT[c, i]
            B[N + c, r] = 1.0
        elif k == n0:
            for i in range(N):
                B[i, r] = alpha[i]
        else:
            B[k - n0 - 1, r] = 1.0
    Binv = np.empty((m, m))
    if not inverse(B, Binv):
        return False
    for i in range(N):
        for c in range(C):
            k = i * C + c
            f = -muT[c, i]
            for r in range(m):
                T[r, k] = f * Binv[r, i] + Binv[r, N + c]
    for r in range(m):
        v = 0.0
        for i in range(N):
            v += Binv[r, i] * alpha[i]
        T[r, n0] = v
        for q in range(m):
            T[r, n0 + 1 + q] = Binv[r, q]
        v = 0.0
        for c in range(C):
            v += Binv[r, N + c] * cap[c]
        T[r, nv] = v
    obj[:] = 0.0
    obj[n0] = -1.0
    for r in range(m):
        if basis[r] == n0:
            for q in range(nv + 1):
                obj[q] += T[r, q]
    for r in range(m):
        obj[basis[r]] = 0.0
    return True

@njit(cache=True)
def solve(T, obj, basis, muT, alpha, cap, warm):
    """Optimal tableau for ``muT``, ``alpha``, ``cap``; ``(pivots, warm_used)``, pivots < 0 on failure.

    With ``warm`` the simplex restarts from ``basis`` (refactored for the new
    data; primal simplex if it stays primal feasible, dual simplex if it stays
    dual feasible, else a cold start from the slack basis).
    """
    m = T.shape[0]
    nv = T.shape[1] - 1
    piv = -1
    used = False
    if warm and refactor(T, obj, basis, muT, alpha, cap):
        pfeas = True
        dfeas = True
        for r in range(m):
            if T[r, nv] < -LP_TOL:
                pfeas = False
                break
        for q in range(nv):
            if obj[q] < -LP_TOL:
                dfeas = False
                break
        if pfeas:
            piv = primal(T, obj, basis)
            used = True
        elif dfeas:
            piv = dual(T, obj, basis)
            used = True
    if piv < 0:
        build(T, obj, basis, muT, alpha, cap)
        piv = primal(T, obj, basis)
        used = False
    return piv, used


@njit(cache=True)
def solve_vertex(alpha, mu, cap, sup, basis_io, warm):
    """Vertex of the LP for ``mu`` (N x C, untransposed), ``alpha`` (N,), ``cap`` (C,).

    Writes ``sup[i, c] = delta*_ic > 0`` and the final basis into ``basis_io``
    (read as the warm start when ``warm``). Returns ``(lam*, pivots, warm_used)``;
    pivots < 0 on failure.
    """
    N, C = mu.shape
    muT = np.empty((C, N))
    for c in range(C):
        for i in range(N):
            muT[c, i] = mu[i, c]
    m = N + C
    nv = N * C + 1 + m
    T = np.zeros((m, nv + 1))
    obj = np.zeros(nv + 1)
    basis = basis_io.copy()
    piv, used = solve(T, obj, basis, muT, alpha, cap, warm)
    basis_io[:] = basis
    supT = np.zeros((C, N), np.bool_)
    _, lam = support(T, basis, muT, supT)
    for i in range(N):
        for c in range(C):
            sup[i, c] = supT[c, i]
    return lam, piv, used


@njit(cache=True)
def gub_simplex(alpha_sum, mu, basis, sup, max_iter):
    """Primal simplex on the *structured* basis of the allocation LP; O(NM) per iteration.

    Handles the usual basis shape (``lambda`` basic, no slack basic, every
    machine with a basic ``delta``): a machine with one basic ``delta`` is
    *dedicated* (its value is 1), the ``s <= N - 1`` others are *split*. Then
    ``B^-1`` reduces to an ``(N + s)``-sized system: the basic solution
    (class rows ``sum_j mu_ij delta_ij = lambda alpha_i``, split rows
    ``sum_i delta_ij = 1``), the duals (``alpha.y = 1``, ``y_i mu_ij = z_j`` on
    basic entries) and the entering column's direction all come from it, and
    pricing (``y_i mu_ij - z_j``) is O(NM). Every pivot keeps the shape
    (a dedicated ``delta`` can only leave for an entering entry of its own
    machine). Dantzig's rule, Bland's after 50 pivots.

    With ``max_iter = 0`` it only checks whether the old optimal basis is still
    primal and dual feasible for new data (then the zero pattern cannot
    change, up to degenerate zeros). Returns the number of pivots (>= 0) and
    writes ``sup`` and ``basis`` when optimal; -1 when the basis leaves
    the handled shape, is infeasible, or ``max_iter`` is exceeded (then a
    dense simplex is needed).
    """
    N, M = mu.shape
    m = N + M
    n0 = N * M
    nb = np.zeros(M, np.int64)
    first = np.full(M, -1, np.int64)
    split_id = np.full(M, -1, np.int64)
    bi = np.empty(m, np.int64)
    bj = np.empty(m, np.int64)
    brow = np.empty(m, np.int64)
    D = np.zeros(N)
    it = 0
    while True:
        # ---- parse the basis
        has_lam = False
        lam_row = -1
        for j in range(M):
            nb[j] = 0
            first[j] = -1
            split_id[j] = -1
        for r in range(m):
            k = basis[r]
            if k < n0:
                j = k - (k // M) * M
                nb[j] += 1
            elif k == n0:
                has_lam = True
                lam_row = r
            else:
                return -1  # a slack is basic
        if not has_lam:
            return -1
        nsplit = 0
        for j in range(M):
            if nb[j] == 0:
                return -1
            if nb[j] > 1:
                split_id[j] = nsplit
                nsplit += 1
        nsb = 0
        for i in range(N):
            D[i] = 0.0
        for r in range(m):
            k = basis[r]
            if k < n0:
                i = k // M
                j = k - i * M
                if nb[j] == 1:
                    D[i] += mu[i, j]
                    first[j] = i
                else:
                    bi[nsb] = i
                    bj[nsb] = j
                    brow[nsb] = r
                    nsb += 1
        n = 1 + nsb
        if n != N + nsplit:
            return -1
        # ---- primal values: u = (lambda, split deltas)
        A = np.zeros((n, n))
        rhs = np.zeros(n)
        for i in range(N):
            A[i, 0] = -alpha_sum[i]
            rhs[i] = -D[i]
        for q in range(nsb):
            A[bi[q], 1 + q] = mu[bi[q], bj[q]]
            A[N + split_id[bj[q]], 1 + q] = 1.0
        for t in range(nsplit):
            rhs[N + t] = 1.0
        Ainv = np.empty((n, n))
        if not invert(A, Ainv):
            return -1
        x = Ainv @ rhs
        if not x[0] > 0.0:
            return -1
        qneg = -1
        most = -LP_TOL
        for q in range(nsb):
            if x[1 + q] < most:
                most = x[1 + q]
                qneg = q
        # ---- duals: (y, z_split) from alpha.y = 1, y_i mu_ij - z_j = 0 (basic split entries)
        G = np.zeros((n, n))
        g = np.zeros(n)
        for i in range(N):
            G[0, i] = alpha_sum[i]
        g[0] = 1.0
        for q in range(nsb):
            G[1 + q, bi[q]] = mu[bi[q], bj[q]]
            G[1 + q, N + split_id[bj[q]]] = -1.0
        Ginv = np.empty((n, n))
        if not invert(G, Ginv):
            return -1
        yz = Ginv @ g
        scale = 0.0
        for i in range(N):
            if yz[i] < -LP_TOL:
                return -1  # a class slack would enter
            for j in range(M):
                v = yz[i] * mu[i, j]
                if v > scale:
                    scale = v
        tol = 1e-9 * (scale if scale > 1.0 else 1.0)
        # ---- pricing
        ei = -1
        ej = -1
        best = tol
        for j in range(M):
            if nb[j] == 1:
                zj = yz[first[j]] * mu[first[j], j]
            else:
                zj = yz[N + split_id[j]]
            for i in range(N):
                if mu[i, j] <= 0.0:
                    continue
                rc = yz[i] * mu[i, j] - zj
                if rc > best:
                    ei = i
                    ej = j
                    if it > 50:
                        break
                    best = rc
            if ei >= 0 and it > 50:
                break
        if qneg >= 0:
            # primal infeasible: a dual simplex step if the basis is dual feasible
            if ei >= 0 or it >= max_iter:
                return -1  # neither primal nor dual feasible, or out of pivots
            # row of the leaving split delta in B^-1 A, per nonbasic delta_kl: O(1) from Ainv
            qrow = 1 + qneg
            k_best = -1
            rbest = np.inf
            for j in range(M):
                if nb[j] == 1:
                    zj = yz[first[j]] * mu[first[j], j]
                else:
                    zj = yz[N + split_id[j]]
                for i in range(N):
                    if mu[i, j] <= 0.0:
                        continue
                    kk = i * M + j
                    if nb[j] == 1 and first[j] == i:
                        continue
                    isb = False
                    if nb[j] > 1:
                        for q in range(nsb):
                            if bi[q] == i and bj[q] == j:
                                isb = True
                                break
                    if isb:
                        continue
                    a = Ainv[qrow, i] * mu[i, j]
                    if nb[j] == 1:
                        a -= Ainv[qrow, first[j]] * mu[first[j], j]
                    else:
                        a += Ainv[qrow, N + split_id[j]]
                    if a < -1e-12:
                        dj = zj - yz[i] * mu[i, j]
                        if dj < 0.0:
                            dj = 0.0
                        ratio = dj / (-a)
                        if ratio < rbest - 1e-15 or (ratio <= rbest + 1e-15 and kk < k_best):
                            rbest = ratio
                            k_best = kk
            if k_best < 0:
                return -1
            basis[brow[qneg]] = k_best
            it += 1
            continue
        if ei < 0:  # optimal
            for i in range(N):
                for j in range(M):
                    sup[i, j] = False
            for j in range(M):
                if nb[j] == 1:
                    sup[first[j], j] = mu[first[j], j] > 0.0
            for q in range(nsb):
                if x[1 + q] > LP_TOL:
                    sup[bi[q], bj[q]] = True
            return it
        if it >= max_iter:
            return -1
        # ---- direction of the entering delta_{ei, ej}: B d = a_k
        rhs[:] = 0.0
        rhs[ei] = mu[ei, ej]  # A's class rows are the negated class equations
        ded = nb[ej] == 1
        if ded:
            rhs[first[ej]] -= mu[first[ej], ej]
        else:
            rhs[N + split_id[ej]] = 1.0
        d = Ainv @ rhs
        # ratio test over lambda, split deltas and (if ej is dedicated) its delta (value 1, d = 1)
        theta = np.inf
        leave = -1  # basis row
        lkey = 0
        for q in range(n):
            if d[q] > 1e-12:
                ratio = x[q] / d[q]
                row = lam_row if q == 0 else brow[q - 1]
                if ratio < theta - 1e-12 or (ratio <= theta + 1e-12 and basis[row] < lkey):
                    theta = ratio
                    leave = row
                    lkey = basis[row]
        if ded:
            k_ded = first[ej] * M + ej
            ratio = 1.0
            if ratio < theta - 1e-12 or (ratio <= theta + 1e-12 and k_ded < lkey):
                theta = ratio
                for r in range(m):
                    if basis[r] == k_ded:
                        leave = r
                lkey = k_ded
        if leave < 0 or basis[leave] == n0:
            return -1  # unbounded, or lambda would leave
        basis[leave] = ei * M + ej
        it += 1
