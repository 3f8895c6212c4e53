"""Compiled replication kernel of the decentralized-grid model (see :mod:`hetsched.sim.decentral`).

Compiled, no checks; takes the model ``m`` (:class:`Model`, arrays made once
by :func:`hetsched.sim.decentral.model.prepare`), the outputs ``out``
(:class:`Out`) and the xoshiro streams ``st`` of the core.

Built on the core: the event list (slots: completion at machine ``j`` = ``j``,
priority 0; the superposed arrival stream ``M``, 1; rate change ``M + 1``, 2;
CPU change ``M + 2``, 3; order ``(time, priority, sequence)``), the streams,
the instability segments and the LP tableau (:mod:`hetsched.sim.core.lptab`).

Performance notes (named where made):

* arrivals are one superposed Poisson stream of rate ``sum_ij alpha_ij``; the
  (class, machine) of an arrival is found by a linear scan of the rates (a
  rate change only redraws the next arrival time, which is exact for Poisson
  streams by memorylessness);
* a machine's LP is solved only when its *view* changed since its last solve
  (``dirty`` flag); :func:`~hetsched.sim.core.lptab.gub_simplex` first tests
  in O(NM) whether the machine's last optimal basis is still primal and dual
  feasible for the new view, else pivots from it on the structured basis at
  O(NM) per pivot; only if the basis leaves that shape does the dense tableau
  simplex run, *warm-started* from that machine's previous optimal basis
  (:func:`~hetsched.sim.core.lptab.solve_vertex`); at time 0 all views are
  equal and one solve serves every machine;
* an exponential execution time is drawn at arrival as work ``X ~ Exp(1)``,
  so a change of the execution rate while a task runs only rescales its
  remaining time.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..core.events import ev_cancel, ev_new, ev_schedule
from ..core.instability import seg_close, seg_new, seg_observe
from ...lp.tableau import gub_simplex, solve_vertex
from ..core.rng import expo, uniform

#: the model: arrays made once per (system, policy, options)
Model = namedtuple("Model", ["alpha0", "mu0", "a0", "a_choices", "alpha_levels", "mu_levels", "iopt", "fopt"])
#: the outputs of one replication
Out = namedtuple("Out", ["resp", "done", "seg", "ints", "log_t", "log_i", "log_o", "log_d", "log_x"])

# iopt fields
I_POLICY, I_KBAR, I_LOCAL, I_INSTANT, I_TIE, I_BOUND = range(6)
N_IOPT = 6
# fopt fields
F_RC_RATE, F_CPU_RATE, F_INACC, F_HORIZON, F_WARMUP = range(5)
N_FOPT = 5
# policy codes
MCT, KPB, LPAS_DEC = 0, 1, 2
# tie rules
TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM = 0, 1, 2
# streams
S_ARR, S_WHICH, S_WORK, S_RC, S_EST, S_TIE, S_CPU = 0, 1, 2, 3, 4, 5, 6
N_STREAMS = 7
# out.ints fields
O_STATUS, O_EVENTS, O_ARRIVALS, O_COMPLETIONS, O_MESSAGES, O_LPSOLVES, O_PIVOTS = 0, 1, 2, 3, 4, 5, 6
O_RC_EVENTS, O_CPU_EVENTS, O_PEAK, O_VIEW_UPDATES, O_LOGGED, O_SUPPORT_SIZE, O_REMOTE = 7, 8, 9, 10, 11, 12, 13
O_WARM, O_CHECKS, O_GUB = 14, 15, 16
N_OUT_INT = 17
# event priorities
PRIO_COMPLETION, PRIO_ARRIVAL, PRIO_RATE, PRIO_CPU = 0, 1, 2, 3


def new_out(N: int, log: int) -> Out:
    """Zeroed outputs of one replication (``log`` arrivals logged)."""
    from ..core.instability import NSEG

    return Out(np.zeros(N), np.zeros(N, np.int64), np.zeros(NSEG), np.zeros(N_OUT_INT, np.int64), np.zeros(log),
               np.zeros(log, np.int64), np.zeros(log, np.int64), np.zeros(log, np.int64), np.zeros(log))


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
def run(m, out, st):
    """One replication; see the module docstring of :mod:`hetsched.sim.decentral`. Returns the status
    (0 completed, 1 the bound on the number in system was exceeded)."""
    alpha0, mu0, a0, a_choices = m.alpha0, m.mu0, m.a0, m.a_choices
    alpha_levels, mu_levels = m.alpha_levels, m.mu_levels
    policy, kbar = m.iopt[I_POLICY], m.iopt[I_KBAR]
    include_local, instant = m.iopt[I_LOCAL] == 1, m.iopt[I_INSTANT] == 1
    tie = m.iopt[I_TIE]
    max_in_system = m.iopt[I_BOUND]
    rc_rate, cpu_rate, inacc = m.fopt[F_RC_RATE], m.fopt[F_CPU_RATE], m.fopt[F_INACC]
    horizon, warmup = m.fopt[F_HORIZON], m.fopt[F_WARMUP]
    out_resp, out_done, out_int = out.resp, out.done, out.ints
    log_t, log_i, log_o, log_d, log_x = out.log_t, out.log_i, out.log_o, out.log_d, out.log_x
    N, M = mu0.shape
    ones = np.ones(M)
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
        lam, piv, used = solve_vertex(asum, view_mu[0], ones, support[0], basis_store[0], False)
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
    # events: completion per machine (tdone mirrors their times), arrivals, rate and CPU changes
    ev = ev_new(M + 3)
    tdone = np.full(M, np.inf)
    # scratch
    cand = np.empty(M, np.int64)
    order = np.empty(M, np.int64)
    A = alpha.sum()
    t = 0.0
    if A > 0:
        ev_schedule(ev, M, expo(st, S_ARR) / A, PRIO_ARRIVAL)
    if rc_rate > 0:
        ev_schedule(ev, M + 1, expo(st, S_RC) / rc_rate, PRIO_RATE)
    if cpu_rate > 0:
        ev_schedule(ev, M + 2, expo(st, S_CPU) / cpu_rate, PRIO_CPU)
    n_sys = 0
    sg = seg_new(warmup, horizon)
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
        t = ev.ht[0] if ev.meta[0] > 0 else np.inf
        if t > horizon:
            break
        sl = ev.hs[0]
        kind = 0 if sl < M else sl - M + 1  # 0 completion, 1 arrival, 2 rate change, 3 cpu change
        seg_observe(sg, t, n_sys)
        events += 1
        if kind == 0:
            j = sl
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
                tdone[j] = t + t_work[k2] / mu[t_cls[k2], j]
                ev_schedule(ev, j, tdone[j], PRIO_COMPLETION)
            else:
                tdone[j] = np.inf
                ev_cancel(ev, j)
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
            ev_schedule(ev, M, t + expo(st, S_ARR) / A, PRIO_ARRIVAL)
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
                        lam, piv, used = solve_vertex(asum, view_mu[o], ones, support[o], basis_store[o], True)
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
                    if tie == TIE_RANDOM:
                        if uniform(st, S_TIE) * nties <= 1.0:
                            dest = j
                    elif tie == TIE_LOWEST:
                        if j < dest:
                            dest = j
                    elif j > dest:
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
                tdone[dest] = t + work / mu[i, dest]
                ev_schedule(ev, dest, tdone[dest], PRIO_COMPLETION)
            tail[dest] = k
            Q[i, dest] += 1
            n_sys += 1
            if n_sys > peak:
                peak = n_sys
        elif kind == 2:
            rc_events += 1
            ev_schedule(ev, M + 1, t + expo(st, S_RC) / rc_rate, PRIO_RATE)
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
                ev_schedule(ev, M, t + expo(st, S_ARR) / A, PRIO_ARRIVAL)  # memoryless: redraw at the new rate
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
                    rem = (tdone[j] - t) * old / mu[i, j]
                    tdone[j] = t + rem
                    ev_schedule(ev, j, tdone[j], PRIO_COMPLETION)
            if need_view:
                _publish(j, est_alpha, est_mu, view_alpha, view_mu, dirty, instant)
        else:
            cpu_events += 1
            ev_schedule(ev, M + 2, t + expo(st, S_CPU) / cpu_rate, PRIO_CPU)
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
                    rem = (tdone[j] - t) * old / (mu_nom[c, j] * newa)
                    tdone[j] = t + rem
                    ev_schedule(ev, j, tdone[j], PRIO_COMPLETION)
                a[j] = newa
                for i in range(N):
                    mu[i, j] = mu_nom[i, j] * newa
                    if mu[i, j] > 0:
                        est_mu[i, j] = _estimate(mu[i, j], inacc, st)
                if need_view:
                    _publish(j, est_alpha, est_mu, view_alpha, view_mu, dirty, instant)
    if status == 0:
        seg_close(sg, horizon, n_sys, out.seg)
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
    return status
