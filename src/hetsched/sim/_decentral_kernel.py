"""Compiled event loop of the decentralized-grid model (see :mod:`hetsched.sim.decentral`).

Compiled, no checks; takes preallocated arrays and xoshiro streams
(:mod:`._rng`), writes results into ``out_*`` arrays.

Performance notes (named where made):

* arrivals are one superposed Poisson stream of rate ``sum_ij alpha_ij``; the
  (class, machine) of an arrival is found by a linear scan of the rates (a
  rate change only redraws the next arrival time, which is exact for Poisson
  streams by memorylessness);
* machine completions sit in a fixed-slot tournament tree (one slot per
  machine, ties to the lower machine index — deterministic order), shared
  with the desktop-grid kernel;
* a machine's LP is solved only when its *view* changed since its last solve
  (``dirty`` flag); :func:`gub_simplex` first tests in O(NM) whether the
  machine's last optimal basis is still primal and dual feasible for the new
  view (then the zero pattern cannot change and no pivot is made), else
  pivots from it (primal or dual simplex) on the structured basis at O(NM)
  per pivot; only if the basis leaves that shape does the dense tableau
  simplex of the desktop kernel run,
  *warm-started* from that machine's previous optimal basis (refactored for
  the new view; primal simplex if still primal feasible, dual simplex if still
  dual feasible, else cold); at time 0 all views are equal and one solve
  serves every machine; an
  exponential execution time is drawn at arrival as work ``X ~ Exp(1)``, so a
  change of the execution rate while a task runs only rescales its remaining
  time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._desktop_kernel import lp_build, lp_dual, lp_primal, tree_init, tree_set
from ._rng import expo, uniform

# policy codes
MCT, KPB, LPAS_DEC = 0, 1, 2
# streams
S_ARR, S_WHICH, S_WORK, S_RC, S_EST, S_TIE, S_CPU = 0, 1, 2, 3, 4, 5, 6
N_STREAMS = 7
# out_int fields
O_STATUS, O_EVENTS, O_ARRIVALS, O_COMPLETIONS, O_MESSAGES, O_LPSOLVES, O_PIVOTS = 0, 1, 2, 3, 4, 5, 6
O_RC_EVENTS, O_CPU_EVENTS, O_PEAK, O_VIEW_UPDATES, O_LOGGED, O_SUPPORT_SIZE, O_REMOTE = 7, 8, 9, 10, 11, 12, 13
O_WARM, O_CHECKS, O_GUB = 14, 15, 16
N_OUT_INT = 17

LP_TOL = 1e-9


@njit(cache=True)
def _invert(B, Binv):
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
def _inverse(B, Binv):
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
    return _invert(B, Binv)


@njit(cache=True)
def _warm(T, obj, basis, muT, alpha_sum, cap):
    """Tableau of the new data for the old ``basis`` (T = B^-1 [A | I | b]); False if B is singular.

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
                B[i, r] = alpha_sum[i]
        else:
            B[k - n0 - 1, r] = 1.0
    Binv = np.empty((m, m))
    if not _inverse(B, Binv):
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
            v += Binv[r, i] * alpha_sum[i]
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
def gub_simplex(alpha_sum, mu, basis, support, max_iter):
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
    writes ``support`` and ``basis`` when optimal; -1 when the basis leaves
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
        if not _invert(A, Ainv):
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
        if not _invert(G, Ginv):
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
                    support[i, j] = False
            for j in range(M):
                if nb[j] == 1:
                    support[first[j], j] = mu[first[j], j] > 0.0
            for q in range(nsb):
                if x[1 + q] > LP_TOL:
                    support[bi[q], bj[q]] = True
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


@njit(cache=True)
def basis_check(alpha_sum, mu, basis, support):
    """True if the old optimal ``basis`` is still optimal for new data (see :func:`gub_simplex`)."""
    return gub_simplex(alpha_sum, mu, basis, support, 0) >= 0


@njit(cache=True)
def solve_view_lp(alpha_sum, mu, support, basis_io, warm):
    """Vertex of the allocation LP (4.1)-(4.3) for rates ``mu`` (N x M), ``alpha_sum`` (N,).

    ``support[i, j]`` is set to ``delta*_ij > 0``. With ``warm`` the simplex
    restarts from the basis in ``basis_io`` (refactored for the new data; primal
    simplex if it stays primal feasible, dual simplex if it stays dual feasible,
    else a cold start from the slack basis); the final basis is written back to
    ``basis_io``. Returns ``(lambda*, pivots, warm_used)``; pivots < 0 on failure.
    """
    N, M = mu.shape
    muT = np.empty((M, N))
    for j in range(M):
        for i in range(N):
            muT[j, i] = mu[i, j]
    cap = np.ones(M)
    m = N + M
    n0 = N * M
    nv = n0 + 1 + m
    T = np.zeros((m, nv + 1))
    obj = np.zeros(nv + 1)
    basis = np.zeros(m, np.int64)
    piv = -1
    used = False
    if warm:
        basis[:] = basis_io
        if _warm(T, obj, basis, muT, alpha_sum, cap):
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
                piv = lp_primal(T, obj, basis)
                used = True
            elif dfeas:
                piv = lp_dual(T, obj, basis)
                used = True
    if piv < 0:
        lp_build(T, obj, basis, muT, alpha_sum, cap)
        piv = lp_primal(T, obj, basis)
        used = False
    basis_io[:] = basis
    lam = 0.0
    for i in range(N):
        for j in range(M):
            support[i, j] = False
    for r in range(m):
        k = basis[r]
        if k < n0:
            if T[r, nv] > LP_TOL:
                i = k // M
                j = k - i * M
                if muT[j, i] > 0.0:
                    support[i, j] = True
        elif k == n0:
            lam = T[r, nv]
    return lam, piv, used


@njit(cache=True)
def _ect(i, j, Q, est_mu):
    """Expected completion time machine ``j`` reports for a class-``i`` arrival (§2.2.2)."""
    N = Q.shape[0]
    s = 1.0 / est_mu[i, j]
    for c in range(N):
        if Q[c, j] > 0:
            s += Q[c, j] / est_mu[c, j]
    return s


@njit(cache=True)
def _exchange(origin, j, piggy, est_alpha, est_mu, view_alpha, view_mu, dirty):
    """Request origin->j and reply j->origin with piggy-backed local rates (§4.1-4.2).

    ``piggy``: 0 nothing (MCT), 1 execution rates (KPB), 2 arrival and execution
    rates (LPAS_dec). Returns the number of view entries that changed.
    """
    if piggy == 0:
        return 0
    N = est_mu.shape[0]
    n = 0
    for i in range(N):
        # request carries origin's rates into j's view
        if view_mu[j, i, origin] != est_mu[i, origin]:
            view_mu[j, i, origin] = est_mu[i, origin]
            dirty[j] = True
            n += 1
        # reply carries j's rates into origin's view
        if view_mu[origin, i, j] != est_mu[i, j]:
            view_mu[origin, i, j] = est_mu[i, j]
            dirty[origin] = True
            n += 1
        if piggy == 2:
            if view_alpha[j, i, origin] != est_alpha[i, origin]:
                view_alpha[j, i, origin] = est_alpha[i, origin]
                dirty[j] = True
                n += 1
            if view_alpha[origin, i, j] != est_alpha[i, j]:
                view_alpha[origin, i, j] = est_alpha[i, j]
                dirty[origin] = True
                n += 1
    return n


@njit(cache=True)
def _publish(j, est_alpha, est_mu, view_alpha, view_mu, dirty, instant):
    """Machine ``j``'s estimates changed: its own view always; every view if ``instant``."""
    M = view_mu.shape[0]
    N = est_mu.shape[0]
    lo = 0 if instant else j
    hi = M if instant else j + 1
    for v in range(lo, hi):
        for i in range(N):
            if view_mu[v, i, j] != est_mu[i, j] or view_alpha[v, i, j] != est_alpha[i, j]:
                view_mu[v, i, j] = est_mu[i, j]
                view_alpha[v, i, j] = est_alpha[i, j]
                dirty[v] = True


@njit(cache=True)
def _estimate(x, inacc, st):
    """Estimate ``x (1 + E)``, ``E ~ U[-I, I]`` (§4.3.2); exact when ``I = 0``."""
    if inacc == 0.0:
        return x
    e = (2.0 * uniform(st, S_EST) - 1.0) * inacc
    v = x * (1.0 + e)
    return v if v > 1e-300 else 1e-300


@njit(cache=True)
def run_decentral(
    policy, kbar, include_local, instant, tie_random,
    alpha0, mu0, a0, a_choices,
    rc_rate, alpha_levels, mu_levels,
    cpu_rate, inacc,
    horizon, warmup, max_in_system, st,
    out_resp, out_done, out_seg, out_int, out_float,
    log_t, log_i, log_o, log_d, log_x,
):
    """One replication; see the module docstring of :mod:`hetsched.sim.decentral`."""
    N, M = mu0.shape
    NSEG = out_seg.shape[0]
    # actual and estimated rates
    alpha = alpha0.copy()
    mu_nom = mu0.copy()
    a = a0.copy()
    mu = np.empty((N, M))
    for i in range(N):
        for j in range(M):
            mu[i, j] = mu_nom[i, j] * a[j]
    est_alpha = np.empty((N, M))
    est_mu = np.empty((N, M))
    for j in range(M):
        for i in range(N):
            est_alpha[i, j] = _estimate(alpha[i, j], inacc, st)
            est_mu[i, j] = _estimate(mu[i, j], inacc, st) if mu[i, j] > 0 else 0.0
    # views: every machine starts knowing every machine's published estimates
    piggy = 0 if policy == MCT else (1 if policy == KPB else 2)
    need_view = policy != MCT
    VM = M if need_view else 1
    view_alpha = np.zeros((VM, N, M))
    view_mu = np.zeros((VM, N, M))
    if need_view:
        for v in range(M):
            for i in range(N):
                for j in range(M):
                    view_alpha[v, i, j] = est_alpha[i, j]
                    view_mu[v, i, j] = est_mu[i, j]
    dirty = np.ones(M, np.bool_)
    support = np.zeros((VM, N, M), np.bool_)
    basis_store = np.zeros((VM, N + M), np.int64)
    lp_solves = 0
    pivots = 0
    warm_solves = 0
    lp_checks = 0
    gub_solves = 0
    if policy == LPAS_DEC:
        # identical views at time 0: one solve serves every machine
        asum = np.zeros(N)
        for ii in range(N):
            for jj in range(M):
                asum[ii] += view_alpha[0, ii, jj]
        lam, piv, used = solve_view_lp(asum, view_mu[0], support[0], basis_store[0], False)
        lp_solves += 1
        if piv > 0:
            pivots += piv
        for v in range(M):
            support[v, :, :] = support[0]
            basis_store[v, :] = basis_store[0]
            dirty[v] = False
    # task pool (linked FCFS lists per machine)
    cap = max_in_system + 1
    t_cls = np.zeros(cap, np.int64)
    t_arr = np.zeros(cap)
    t_work = np.zeros(cap)
    t_next = np.full(cap, -1, np.int64)
    free = np.arange(cap - 1, -1, -1).astype(np.int64)
    nfree = cap
    head = np.full(M, -1, np.int64)
    tail = np.full(M, -1, np.int64)
    Q = np.zeros((N, M), np.int64)
    # completion tree
    P = 1
    while P < M:
        P *= 2
    tkey = np.full(P, np.inf)
    tree = np.zeros(2 * P, np.int64)
    tree_init(tkey, tree, P)
    # scratch
    cand = np.empty(M, np.int64)
    order = np.empty(M, np.int64)
    A = alpha.sum()
    t = 0.0
    t_arr_next = expo(st, S_ARR) / A if A > 0 else np.inf
    t_rc = expo(st, S_RC) / rc_rate if rc_rate > 0 else np.inf
    t_cpu = expo(st, S_CPU) / cpu_rate if cpu_rate > 0 else np.inf
    n_sys = 0
    seg_len = (horizon - warmup) / NSEG
    seg_area = np.zeros(NSEG)
    t_last = 0.0
    events = 0
    arrivals = 0
    completions = 0
    messages = 0
    rc_events = 0
    cpu_events = 0
    peak = 0
    view_updates = 0
    logged = 0
    sup_size = 0
    remote = 0
    status = 0
    n_alpha_rates = N * M
    while True:
        tc = tkey[tree[1]]
        tn = t_arr_next
        kind = 0  # 0 completion, 1 arrival, 2 rate change, 3 cpu change
        if tc <= tn:
            tn = tc
        else:
            kind = 1
        if t_rc < tn:
            tn = t_rc
            kind = 2
        if t_cpu < tn:
            tn = t_cpu
            kind = 3
        if tn > horizon:
            tn = horizon
        # time-average number in system per segment (after warmup)
        lo = t_last if t_last > warmup else warmup
        while lo < tn:
            s = int((lo - warmup) / seg_len)
            if s >= NSEG:
                break
            end = warmup + (s + 1) * seg_len
            hi = tn if tn < end else end
            seg_area[s] += n_sys * (hi - lo)
            lo = hi
        t_last = tn
        t = tn
        if t >= horizon:
            break
        events += 1
        if kind == 0:
            j = tree[1]
            k = head[j]
            c = t_cls[k]
            if t_arr[k] >= warmup:
                out_resp[c] += t - t_arr[k]
                out_done[c] += 1
            head[j] = t_next[k]
            if head[j] < 0:
                tail[j] = -1
            Q[c, j] -= 1
            free[nfree] = k
            nfree += 1
            n_sys -= 1
            completions += 1
            k2 = head[j]
            if k2 >= 0:
                tree_set(tkey, tree, P, j, t + t_work[k2] / mu[t_cls[k2], j])
            else:
                tree_set(tkey, tree, P, j, np.inf)
        elif kind == 1:
            arrivals += 1
            # which stream (i, origin)?
            u = uniform(st, S_WHICH) * A
            acc = 0.0
            i = N - 1
            o = M - 1
            found = False
            for ii in range(N):
                for jj in range(M):
                    acc += alpha[ii, jj]
                    if u <= acc and alpha[ii, jj] > 0:
                        i = ii
                        o = jj
                        found = True
                        break
                if found:
                    break
            work = expo(st, S_WORK)
            t_arr_next = t + expo(st, S_ARR) / A
            # ---- candidate set S (policy) ----
            ncand = 0
            if policy == MCT:
                for j in range(M):
                    if mu[i, j] > 0:
                        cand[ncand] = j
                        ncand += 1
            elif policy == KPB:
                # kbar machines with the largest rate in origin's view (ties: lower index)
                for j in range(M):
                    order[j] = j
                nk = kbar if kbar < M else M
                for r in range(nk):
                    best = r
                    for q in range(r + 1, M):
                        if view_mu[o, i, order[q]] > view_mu[o, i, order[best]]:
                            best = q
                    tmp = order[r]
                    order[r] = order[best]
                    order[best] = tmp
                for r in range(nk):
                    if view_mu[o, i, order[r]] > 0 and mu[i, order[r]] > 0:
                        cand[ncand] = order[r]
                        ncand += 1
            else:
                if dirty[o]:
                    asum = np.zeros(N)
                    for ii in range(N):
                        for jj in range(M):
                            asum[ii] += view_alpha[o, ii, jj]
                    lp_checks += 1
                    gp = gub_simplex(asum, view_mu[o], basis_store[o], support[o], 200)
                    if gp > 0:
                        pivots += gp
                        gub_solves += 1
                    if gp < 0:
                        lam, piv, used = solve_view_lp(asum, view_mu[o], support[o], basis_store[o], True)
                        lp_solves += 1
                        if used:
                            warm_solves += 1
                        if piv > 0:
                            pivots += piv
                    dirty[o] = False
                for j in range(M):
                    if support[o, i, j] and mu[i, j] > 0:
                        cand[ncand] = j
                        ncand += 1
                if ncand == 0:  # empty support in this view: fall back to every machine
                    for j in range(M):
                        if mu[i, j] > 0:
                            cand[ncand] = j
                            ncand += 1
            if include_local and mu[i, o] > 0:
                has = False
                for r in range(ncand):
                    if cand[r] == o:
                        has = True
                        break
                if not has:
                    cand[ncand] = o
                    ncand += 1
            sup_size += ncand
            # ---- contact, exchange, choose ----
            dest = -1
            best_ect = np.inf
            nties = 0
            for r in range(ncand):
                j = cand[r]
                if j != o:
                    messages += 2
                    if need_view:
                        view_updates += _exchange(o, j, piggy, est_alpha, est_mu, view_alpha, view_mu, dirty)
                e = _ect(i, j, Q, est_mu)
                if e < best_ect:
                    best_ect = e
                    dest = j
                    nties = 1
                elif e == best_ect:
                    nties += 1
                    if tie_random:
                        if uniform(st, S_TIE) * nties <= 1.0:
                            dest = j
                    elif j < dest:
                        dest = j
            if dest < 0:
                dest = o
            if dest != o:
                remote += 1
            if logged < log_t.shape[0]:
                log_t[logged] = t
                log_i[logged] = i
                log_o[logged] = o
                log_d[logged] = dest
                log_x[logged] = work
                logged += 1
            if nfree == 0 or n_sys >= max_in_system:
                status = 1
                break
            nfree -= 1
            k = free[nfree]
            t_cls[k] = i
            t_arr[k] = t
            t_work[k] = work
            t_next[k] = -1
            if tail[dest] >= 0:
                t_next[tail[dest]] = k
            else:
                head[dest] = k
                tree_set(tkey, tree, P, dest, t + work / mu[i, dest])
            tail[dest] = k
            Q[i, dest] += 1
            n_sys += 1
            if n_sys > peak:
                peak = n_sys
        elif kind == 2:
            rc_events += 1
            t_rc = t + expo(st, S_RC) / rc_rate
            r = int(uniform(st, S_RC) * 2 * n_alpha_rates)
            if r >= 2 * n_alpha_rates:
                r = 2 * n_alpha_rates - 1
            lev = int(uniform(st, S_RC) * 3)
            if lev > 2:
                lev = 2
            if r < n_alpha_rates:
                i = r // M
                j = r - i * M
                alpha[i, j] = alpha0[i, j] * alpha_levels[lev]
                est_alpha[i, j] = _estimate(alpha[i, j], inacc, st)
                A = alpha.sum()
                t_arr_next = t + expo(st, S_ARR) / A  # memoryless: redraw at the new total rate
            else:
                r -= n_alpha_rates
                i = r // M
                j = r - i * M
                old = mu[i, j]
                mu_nom[i, j] = mu0[i, j] * mu_levels[lev]
                mu[i, j] = mu_nom[i, j] * a[j]
                if mu[i, j] > 0:
                    est_mu[i, j] = _estimate(mu[i, j], inacc, st)
                k = head[j]
                if k >= 0 and t_cls[k] == i and old > 0:
                    rem = (tkey[j] - t) * old / mu[i, j]
                    tree_set(tkey, tree, P, j, t + rem)
            if need_view:
                _publish(j, est_alpha, est_mu, view_alpha, view_mu, dirty, instant)
        else:
            cpu_events += 1
            t_cpu = t + expo(st, S_CPU) / cpu_rate
            K = a_choices.shape[0]
            for j in range(M):
                g = int(uniform(st, S_CPU) * K)
                if g >= K:
                    g = K - 1
                newa = a_choices[g]
                k = head[j]
                if k >= 0:
                    c = t_cls[k]
                    old = mu[c, j]
                    rem = (tkey[j] - t) * old / (mu_nom[c, j] * newa)
                    tree_set(tkey, tree, P, j, t + rem)
                a[j] = newa
                for i in range(N):
                    mu[i, j] = mu_nom[i, j] * newa
                    if mu[i, j] > 0:
                        est_mu[i, j] = _estimate(mu[i, j], inacc, st)
                if need_view:
                    _publish(j, est_alpha, est_mu, view_alpha, view_mu, dirty, instant)
    for s in range(NSEG):
        out_seg[s] = seg_area[s] / seg_len
    out_int[O_STATUS] = status
    out_int[O_EVENTS] = events
    out_int[O_ARRIVALS] = arrivals
    out_int[O_COMPLETIONS] = completions
    out_int[O_MESSAGES] = messages
    out_int[O_LPSOLVES] = lp_solves
    out_int[O_PIVOTS] = pivots
    out_int[O_RC_EVENTS] = rc_events
    out_int[O_CPU_EVENTS] = cpu_events
    out_int[O_PEAK] = peak
    out_int[O_VIEW_UPDATES] = view_updates
    out_int[O_LOGGED] = logged
    out_int[O_SUPPORT_SIZE] = sup_size
    out_int[O_REMOTE] = remote
    out_int[O_WARM] = warm_solves
    out_int[O_CHECKS] = lp_checks
    out_int[O_GUB] = gub_solves
    out_float[0] = t
    return status
