"""Compiled replication kernel of the decentralized-grid model (see :mod:`hetsched.sim.decentral`).

Compiled, no checks, no allocation in the event loop. The kernel contract of
every simulated model: :mod:`.model` builds the parameters once
(:class:`Params`: rates and the options as named scalars), :mod:`.run` allocates
a replication's :class:`State` and :class:`Out` (named arrays) and calls
``init(p, s, st, out)`` then ``run(p, s, st, out)`` with the xoshiro streams
``st`` of the core. The rare events are functions (:func:`on_rate_change`,
:func:`on_cpu_change`); completions and arrivals, nearly every event, are written out in
:func:`run`'s loop on arrays unpacked once from the named tuples, with
scalar counters: a function per event taking the tuples (even inlined) pays an atomic
reference-count update per array and event, which cost two thirds of the events/s.

A kernel per policy: the candidate set of an arrival (MCT, KPB or LPAS_dec, the
last re-solving the origin's LP with :func:`lp_support` when its view changed)
is chosen by the global ``_POLICY``; :func:`kernels` compiles :func:`run` again
with it bound to the policy's code, so the other two fold away, through :func:`hetsched.sim.core.kernels.specialise` (cached on disk);
no policy switch runs per arrival.

Built on the core: the event list (slots: completion at machine ``j`` = ``j``,
priority 0; the superposed arrival stream ``M``, 1; rate change ``M + 1``, 2;
CPU change ``M + 2``, 3; order ``(time, priority, sequence)``), the streams,
the task pool (one FCFS queue per machine), the tie chooser, the instability
segments and the LP tableau (:mod:`hetsched.lp.tableau`).

Performance notes (named where made):

* arrivals are one superposed Poisson stream of rate ``sum_ij alpha_ij``; the
  (class, machine) of an arrival is found by a linear scan of the rates (a
  rate change only redraws the next arrival time, which is exact for Poisson
  streams by memorylessness);
* a machine's LP is solved only when its *view* changed since its last solve
  (``dirty`` flag); :func:`~hetsched.lp.tableau.gub_simplex` first tests
  in O(NM) whether the machine's last optimal basis is still primal and dual
  feasible for the new view, else pivots from it on the structured basis at
  O(NM) per pivot; only if the basis leaves that shape does the dense tableau
  simplex run, *warm-started* from that machine's previous optimal basis
  (:func:`~hetsched.lp.tableau.solve_vertex`); at time 0 all views are
  equal and one solve serves every machine;
* an exponential execution time is drawn at arrival as work ``X ~ Exp(1)``,
  so a change of the execution rate while a task runs only rescales its
  remaining time (and every policy sees the same works: common random numbers).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..core.events import ev_cancel, ev_new, ev_schedule
from ..core.instability import seg_close, seg_new, seg_observe
from ...lp.tableau import gub_simplex, solve_vertex
from ..core.pool import pool_new, pool_pop, pool_push
from ..core.rng import expo, uniform
from ..core.ties import tie_keep

__all__ = ["Params", "State", "Out", "init", "run", "kernels", "new_state", "new_out", "POLICY_NAMES"]

#: the model: initial rates, CPU-availability choices, rate-change levels, then the options as scalars
Params = namedtuple("Params", ["alpha0", "mu0", "a0", "a_choices", "alpha_levels", "mu_levels", "policy", "kbar",
                               "include_local", "instant", "tie", "bound", "fresh", "rc_rate", "cpu_rate",
                               "inaccuracy", "horizon", "warmup"])
#: one replication's state: actual and estimated rates, views, LP supports and bases, the tasks (a pool of
#: FCFS queues per machine with class, arrival time, work), queue contents, events, scratch
State = namedtuple("State", ["alpha", "mu_nom", "a", "mu", "est_alpha", "est_mu", "view_alpha", "view_mu",
                             "dirty", "support", "basis_store", "ones", "asum", "pool", "t_cls", "t_arr", "t_work",
                             "Q", "tdone", "cand", "order", "A", "ev", "sg"])
#: the measures of one replication: per-class response sums and counts, segment averages, counters
#: (one-element arrays), the arrival log
Out = namedtuple("Out", ["resp", "done", "seg", "status", "events", "arrivals", "completions", "messages",
                         "lp_solves", "pivots", "rc_events", "cpu_events", "peak", "view_updates", "logged",
                         "support_size", "remote", "lp_warm", "lp_checks", "lp_structured", "log_t", "log_i",
                         "log_o", "log_d", "log_x"])

# policy codes
MCT, KPB, LPAS_DEC = 0, 1, 2
# tie rules
TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM = 0, 1, 2
# streams
S_ARR, S_WHICH, S_WORK, S_RC, S_EST, S_TIE, S_CPU, S_MSG = 0, 1, 2, 3, 4, 5, 6, 7
N_STREAMS = 8
# event priorities
PRIO_COMPLETION, PRIO_ARRIVAL, PRIO_RATE, PRIO_CPU = 0, 1, 2, 3


def new_state(p: Params) -> State:
    """The arrays of one replication (filled by :func:`init`)."""
    N, M = p.mu0.shape
    VM = M if p.policy != MCT else 1  # MCT keeps no views
    cap = p.bound + 1
    return State(alpha=np.zeros((N, M)), mu_nom=np.zeros((N, M)), a=np.zeros(M), mu=np.zeros((N, M)),
                 est_alpha=np.zeros((N, M)), est_mu=np.zeros((N, M)), view_alpha=np.zeros((VM, N, M)),
                 view_mu=np.zeros((VM, N, M)), dirty=np.ones(M, np.bool_), support=np.zeros((VM, N, M), np.bool_),
                 basis_store=np.zeros((VM, N + M), np.int64), ones=np.ones(M), asum=np.zeros(N),
                 pool=pool_new(cap, M), t_cls=np.zeros(cap, np.int64), t_arr=np.zeros(cap), t_work=np.zeros(cap),
                 Q=np.zeros((N, M), np.int64), tdone=np.full(M, np.inf), cand=np.empty(M, np.int64),
                 order=np.empty(M, np.int64), A=np.zeros(1), ev=ev_new(M + 3), sg=seg_new(p.warmup, p.horizon))


def new_out(N: int, log: int) -> Out:
    """Zeroed outputs of one replication (``log`` arrivals logged)."""
    from ..core.instability import NSEG

    counters = {f: np.zeros(1, np.int64) for f in Out._fields[3:20]}
    return Out(resp=np.zeros(N), done=np.zeros(N, np.int64), seg=np.zeros(NSEG), **counters,
               log_t=np.zeros(log), log_i=np.zeros(log, np.int64), log_o=np.zeros(log, np.int64),
               log_d=np.zeros(log, np.int64), log_x=np.zeros(log))


# ----------------------------------------------------------------------------- estimates and messages
# _ect and _exchange run per candidate of every arrival: inlined (a call there cost 10-30 % of the events/s
# of KPB and LPAS_dec through the reference counts of its array arguments)
@njit(cache=True, inline="always")
def _ect(i, j, Q, est_mu):
    """Expected completion time machine ``j`` reports for a class-``i`` arrival (§2.2.2)."""
    N = Q.shape[0]
    s = 1.0 / est_mu[i, j]
    for c in range(N):
        if Q[c, j] > 0:
            s += Q[c, j] / est_mu[c, j]
    return s


@njit(cache=True, inline="always")
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
def _report(j, alpha, mu, est_alpha, est_mu, inacc, st):
    """Machine ``j`` reports its rates with fresh errors (``inaccuracy_draw="per-message"``):
    ``r (1 + E)``, ``E ~ U[-I, I]`` drawn anew for each rate in each report."""
    N = mu.shape[0]
    for i in range(N):
        e = (2.0 * uniform(st, S_MSG) - 1.0) * inacc
        v = alpha[i, j] * (1.0 + e)
        est_alpha[i, j] = v if v > 1e-300 else 1e-300
        if mu[i, j] > 0:
            e = (2.0 * uniform(st, S_MSG) - 1.0) * inacc
            v = mu[i, j] * (1.0 + e)
            est_mu[i, j] = v if v > 1e-300 else 1e-300


# ----------------------------------------------------------------------------- candidate sets, one per policy
#: the kernel's policy: -1 (every policy through one switch: the unspecialised module-level kernel), or the
#: policy code bound at compile time by :func:`kernels` (the other candidate sets then fold away)
_POLICY = -1


@njit(cache=True)
def lp_support(o, view_alpha, view_mu, asum, basis_store, support, ones, lpc):
    """LPAS_dec: machine ``o``'s LP on its view, re-solved (its view changed since its last solve):
    a structured check or pivots from its last basis (:func:`~hetsched.lp.tableau.gub_simplex`), else the
    warm-started dense simplex. ``lpc`` = ``(lp_checks, pivots, lp_structured, lp_solves, lp_warm)``."""
    N = asum.shape[0]
    M = view_alpha.shape[2]
    lp_checks, pivots, lp_structured, lp_solves, lp_warm = lpc
    for ii in range(N):
        asum[ii] = 0.0
        for jj in range(M):
            asum[ii] += view_alpha[o, ii, jj]
    lp_checks[0] += 1
    gp = gub_simplex(asum, view_mu[o], basis_store[o], support[o], 200)
    if gp > 0:
        pivots[0] += gp
        lp_structured[0] += 1
    if gp < 0:
        lam, piv, used = solve_vertex(asum, view_mu[o], ones, support[o], basis_store[o], True)
        lp_solves[0] += 1
        if used:
            lp_warm[0] += 1
        if piv > 0:
            pivots[0] += piv


# ----------------------------------------------------------------------------- initial state
@njit(cache=True)
def init(p, s, st, out):
    """Rates, estimates and views at time 0, the first LP (one solve: every view is the same), the
    first events."""
    N, M = p.mu0.shape
    inacc = p.inaccuracy
    s.alpha[:, :] = p.alpha0
    s.mu_nom[:, :] = p.mu0
    s.a[:] = p.a0
    for i in range(N):
        for j in range(M):
            s.mu[i, j] = s.mu_nom[i, j] * s.a[j]
    for j in range(M):
        for i in range(N):
            s.est_alpha[i, j] = _estimate(s.alpha[i, j], inacc, st)
            s.est_mu[i, j] = _estimate(s.mu[i, j], inacc, st) if s.mu[i, j] > 0 else 0.0
    if p.policy != MCT:  # views: every machine starts knowing every machine's published estimates
        for v in range(M):
            for i in range(N):
                for j in range(M):
                    s.view_alpha[v, i, j] = s.est_alpha[i, j]
                    s.view_mu[v, i, j] = s.est_mu[i, j]
    if p.policy == LPAS_DEC:
        asum = s.asum
        for ii in range(N):
            asum[ii] = 0.0
            for jj in range(M):
                asum[ii] += s.view_alpha[0, ii, jj]
        lam, piv, used = solve_vertex(asum, s.view_mu[0], s.ones, s.support[0], s.basis_store[0], False)
        out.lp_solves[0] += 1
        if piv > 0:
            out.pivots[0] += piv
        for v in range(M):
            s.support[v, :, :] = s.support[0]
            s.basis_store[v, :] = s.basis_store[0]
            s.dirty[v] = False
    A = s.alpha.sum()
    s.A[0] = A
    if A > 0:
        ev_schedule(s.ev, M, expo(st, S_ARR) / A, PRIO_ARRIVAL)
    if p.rc_rate > 0:
        ev_schedule(s.ev, M + 1, expo(st, S_RC) / p.rc_rate, PRIO_RATE)
    if p.cpu_rate > 0:
        ev_schedule(s.ev, M + 2, expo(st, S_CPU) / p.cpu_rate, PRIO_CPU)


# ----------------------------------------------------------------------------- one function per event
# Completions and arrivals (nearly every event) are written out in :func:`run`'s loop, on arrays
# unpacked once and counters kept as local scalars; the rare rate and CPU changes are functions.
@njit(cache=True)
def on_rate_change(p, s, st, out, t):
    """One of the 2NM rates moves to one of its three levels (§4.3.1)."""
    N, M = s.mu.shape
    out.rc_events[0] += 1
    ev_schedule(s.ev, M + 1, t + expo(st, S_RC) / p.rc_rate, PRIO_RATE)
    n_alpha_rates = N * M
    r = int(uniform(st, S_RC) * 2 * n_alpha_rates)
    if r >= 2 * n_alpha_rates:
        r = 2 * n_alpha_rates - 1
    lev = int(uniform(st, S_RC) * 3)
    if lev > 2:
        lev = 2
    if r < n_alpha_rates:
        i = r // M
        j = r - i * M
        s.alpha[i, j] = p.alpha0[i, j] * p.alpha_levels[lev]
        s.est_alpha[i, j] = _estimate(s.alpha[i, j], p.inaccuracy, st)
        A = s.alpha.sum()
        s.A[0] = A
        ev_schedule(s.ev, M, t + expo(st, S_ARR) / A, PRIO_ARRIVAL)  # memoryless: redraw at the new rate
    else:
        r -= n_alpha_rates
        i = r // M
        j = r - i * M
        old = s.mu[i, j]
        s.mu_nom[i, j] = p.mu0[i, j] * p.mu_levels[lev]
        s.mu[i, j] = s.mu_nom[i, j] * s.a[j]
        if s.mu[i, j] > 0:
            s.est_mu[i, j] = _estimate(s.mu[i, j], p.inaccuracy, st)
        k = s.pool.head[j]
        if k >= 0 and s.t_cls[k] == i and old > 0:
            rem = (s.tdone[j] - t) * old / s.mu[i, j]
            s.tdone[j] = t + rem
            ev_schedule(s.ev, j, s.tdone[j], PRIO_COMPLETION)
    if p.policy != MCT:
        _publish(j, s.est_alpha, s.est_mu, s.view_alpha, s.view_mu, s.dirty, p.instant == 1)


@njit(cache=True)
def on_cpu_change(p, s, st, out, t):
    """Every machine takes the steady-state availability of one of the chains of Table 3.13 (§4.3.3)."""
    N, M = s.mu.shape
    out.cpu_events[0] += 1
    ev_schedule(s.ev, M + 2, t + expo(st, S_CPU) / p.cpu_rate, PRIO_CPU)
    K = p.a_choices.shape[0]
    for j in range(M):
        g = int(uniform(st, S_CPU) * K)
        if g >= K:
            g = K - 1
        newa = p.a_choices[g]
        k = s.pool.head[j]
        if k >= 0:
            c = s.t_cls[k]
            old = s.mu[c, j]
            rem = (s.tdone[j] - t) * old / (s.mu_nom[c, j] * newa)
            s.tdone[j] = t + rem
            ev_schedule(s.ev, j, s.tdone[j], PRIO_COMPLETION)
        s.a[j] = newa
        for i in range(N):
            s.mu[i, j] = s.mu_nom[i, j] * newa
            if s.mu[i, j] > 0:
                s.est_mu[i, j] = _estimate(s.mu[i, j], p.inaccuracy, st)
        if p.policy != MCT:
            _publish(j, s.est_alpha, s.est_mu, s.view_alpha, s.view_mu, s.dirty, p.instant == 1)


# ----------------------------------------------------------------------------- the event loop
@njit(cache=True)
def run(p, s, st, out):
    """One replication from the state :func:`init` made; returns the status (0 completed, 1 the bound on
    the number in system was exceeded).

    The named tuples are unpacked here, once; completions and arrivals are handled in the loop on
    those local arrays, with the counters as local scalars written to ``out`` at the end (a first
    version with one inlined function per event taking the tuples ran at a third of the speed:
    every array of a tuple passed costs an atomic reference-count update per event)."""
    N, M = s.mu.shape
    ev = s.ev
    horizon, warmup, bound = p.horizon, p.warmup, p.bound
    policy, tie = p.policy, p.tie
    include_local = p.include_local == 1
    instant = p.instant == 1
    inaccuracy = p.inaccuracy
    fresh = p.fresh == 1 and inaccuracy > 0.0
    need_view = policy != MCT
    piggy = 0 if policy == MCT else (1 if policy == KPB else 2)
    sg = s.sg
    alpha, mu, est_alpha, est_mu, view_alpha, view_mu, dirty = (s.alpha, s.mu, s.est_alpha, s.est_mu, s.view_alpha,
                                                                 s.view_mu, s.dirty)
    pl, t_cls, t_arr, t_work, Q, tdone, cand, A = s.pool, s.t_cls, s.t_arr, s.t_work, s.Q, s.tdone, s.cand, s.A
    head = pl.head
    resp, done = out.resp, out.done
    log_t, log_i, log_o, log_d, log_x = out.log_t, out.log_i, out.log_o, out.log_d, out.log_x
    nlog = log_t.shape[0]
    kbar, order, asum, basis_store, support, ones = p.kbar, s.order, s.asum, s.basis_store, s.support, s.ones
    lpc = (out.lp_checks, out.pivots, out.lp_structured, out.lp_solves, out.lp_warm)
    events = arrivals = completions = messages = support_size = view_updates = remote = 0
    peak = out.peak[0]
    logged = out.logged[0]
    n_sys = 0
    status = 0
    ht, hs, meta = ev.ht, ev.hs, ev.meta
    while True:
        t = ht[0] if meta[0] > 0 else np.inf
        if t > horizon:
            break
        sl = hs[0]
        seg_observe(sg, t, n_sys)
        events += 1
        if sl < M:
            # ---------------- completion at machine j: it starts its next task
            j = sl
            k = pool_pop(pl, j)
            c = t_cls[k]
            if t_arr[k] >= warmup:
                resp[c] += t - t_arr[k]
                done[c] += 1
            Q[c, j] -= 1
            completions += 1
            k2 = head[j]
            if k2 >= 0:
                tdone[j] = t + t_work[k2] / mu[t_cls[k2], j]
                ev_schedule(ev, j, tdone[j], PRIO_COMPLETION)
            else:
                tdone[j] = np.inf
                ev_cancel(ev, j)
            n_sys -= 1
        elif sl == M:
            # ---------------- arrival: the origin machine chooses where the task runs (§1.5.1)
            Atot = A[0]
            arrivals += 1
            # which stream (i, origin)?
            u = uniform(st, S_WHICH) * Atot
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
            ev_schedule(ev, M, t + expo(st, S_ARR) / Atot, PRIO_ARRIVAL)
            if fresh:  # the deciding machine reads its own rates afresh (per-message reading)
                _report(o, alpha, mu, est_alpha, est_mu, inaccuracy, st)
                if need_view:
                    _publish(o, est_alpha, est_mu, view_alpha, view_mu, dirty, instant)
            # candidate set S (policy; _POLICY bound at compile time folds the other two away)
            ncand = 0
            if _POLICY == MCT or (_POLICY < 0 and policy == MCT):
                # MCT (§4.1): every machine able to run class i
                for j in range(M):
                    if mu[i, j] > 0:
                        cand[ncand] = j
                        ncand += 1
            elif _POLICY == KPB or (_POLICY < 0 and policy == KPB):
                # KPB (§4.1): the kbar machines with the largest rate in the origin's view (ties: lower index)
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
                # LPAS_dec (§4.2): the support of the origin's LP on its view (re-solved if the view changed);
                # every machine if it gives class i none
                if dirty[o]:
                    lp_support(o, view_alpha, view_mu, asum, basis_store, support, ones, lpc)
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
            support_size += ncand
            # contact, exchange, choose
            dest = -1
            best_ect = np.inf
            nties = 0
            for r in range(ncand):
                j = cand[r]
                if j != o:
                    messages += 2
                    if fresh:  # j's reply (and its ECT) carries fresh estimates of its rates
                        _report(j, alpha, mu, est_alpha, est_mu, inaccuracy, st)
                        if need_view and instant:
                            _publish(j, est_alpha, est_mu, view_alpha, view_mu, dirty, instant)
                    if need_view:
                        view_updates += _exchange(o, j, piggy, est_alpha, est_mu, view_alpha, view_mu, dirty)
                e = _ect(i, j, Q, est_mu)
                if e < best_ect:
                    best_ect = e
                    dest = j
                    nties = 1
                elif e == best_ect:
                    nties += 1
                    if tie_keep(tie, j, dest, 1.0, float(nties), st, S_TIE):
                        dest = j
            if dest < 0:
                dest = o
            if dest != o:
                remote += 1
            if logged < nlog:
                log_t[logged] = t
                log_i[logged] = i
                log_o[logged] = o
                log_d[logged] = dest
                log_x[logged] = work
                logged += 1
            if n_sys >= bound:
                status = 1
                break
            k = pool_push(pl, dest)
            if k < 0:  # pragma: no cover - the pool holds bound + 1 tasks
                status = 1
                break
            t_cls[k] = i
            t_arr[k] = t
            t_work[k] = work
            if head[dest] == k:  # the machine was idle: it starts the task
                tdone[dest] = t + work / mu[i, dest]
                ev_schedule(ev, dest, tdone[dest], PRIO_COMPLETION)
            Q[i, dest] += 1
            if n_sys + 1 > peak:
                peak = n_sys + 1
            n_sys += 1
        elif sl == M + 1:
            on_rate_change(p, s, st, out, t)
        else:
            on_cpu_change(p, s, st, out, t)
    out.events[0] += events
    out.arrivals[0] += arrivals
    out.completions[0] += completions
    out.messages[0] += messages
    out.support_size[0] += support_size
    out.view_updates[0] += view_updates
    out.remote[0] += remote
    out.peak[0] = peak
    out.logged[0] = logged
    if status == 0:
        seg_close(sg, horizon, n_sys, out.seg)
    out.status[0] = status
    return status


# ----------------------------------------------------------------------------- kernels per policy
#: policy code -> its name in the kernel cache
POLICY_NAMES = {MCT: "mct", KPB: "kpb", LPAS_DEC: "lpas"}


def kernels(policy: int):
    """``(init, run)`` with the policy's candidate set bound at compile time (cached on disk by
    :func:`hetsched.sim.core.kernels.specialise`)."""
    import sys

    from ..core.kernels import specialise

    name = POLICY_NAMES[policy]
    fn = specialise(sys.modules[__name__], ("run",), {"_POLICY": policy},
                    key=("decentral", name), label=f"decentral-{name}", packages=("hetsched.sim.core",))
    return init, fn["run"]
