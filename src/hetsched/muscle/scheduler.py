"""MUSCLE multicluster scheduling (Algorithm 2) with TITAN's local GA, and baselines.

Online loop (our reading of Algorithm 2, see ``docs/_parts/assumptions-muscle.md``)
------------------------------------------------------------------------------------
Jobs are collected in the multicluster queue. With ``trigger="backlog"`` (default,
Algorithm 2 step 1: MUSCLE waits while the work already sent to the clusters keeps
them busy) a round happens as soon as some cluster's committed work ends within
``tau`` of now and a job is waiting; it takes every collected job. The *workload
level* of §5.1 (mean number of jobs in the queue) is then an outcome, the
time-average queue length ``sum(wait)/span`` (Little's law); :func:`load_for_level`
finds the arrival rate that gives a target level. With ``trigger="batch"`` a round
happens each time ``level`` jobs have been collected, at the arrival of the last of
them (the level is then an input). In a round:

1. every cluster's computers are free at ``avail[c] >= t`` (work committed in
   earlier rounds is never moved);
2. the policy splits the collected jobs among clusters and gives each cluster a
   seed schedule at the preferable sizes (a job order decoded by list scheduling,
   :mod:`hetsched.muscle.titan`);
3. TITAN's GA improves each cluster's seed schedule on CP (Eq. 1) -- the GA runs
   "instantly" at ``t`` -- and the result is committed.

Policies (same rounds, same GA, differ in step 2):

* ``muscle``: Algorithm 1 builds the composition table of the collected jobs; then,
  until every job is allocated: compute ``epsilon`` (Eq. 2) of every cluster that can
  hold the smallest unallocated job, ``eps_i = p_i etSum_i sizeSum_i / (slkSum_i m_i)``
  over the cluster's unfinished jobs plus those allocated in this round (0 for an
  empty cluster; ties: earlier space, then lower index); take that cluster's
  earliest available computer space -- the earliest time ``T`` at which at least as
  many computers as the smallest unallocated job needs are free, and the number
  ``r`` of computers free at ``T`` -- and fill it with the §4.2 table search; those
  jobs start at ``T`` (they are appended to the cluster's seed order).
* ``dll`` (Dynamic Least Load): each job, in arrival order, to the cluster with the
  least workload -- the mean over its computers of the committed busy time beyond
  ``t`` -- among clusters large enough; seed order FCFS.
* ``wrand`` (Weighted Random): each job to cluster ``j`` with probability
  proportional to its processing capability ``m_j u_j`` (among clusters large
  enough), from a seeded stream; seed order FCFS.

Metrics per cluster over the whole run (:mod:`hetsched.muscle.metrics`): makespan,
idle time, over-deadline, CP; MCP and LBF across clusters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from .composition import CompositionTable
from .metrics import CPWeights, cluster_metrics, mcp_lbf
from .result import RECORD_COLUMNS, MuscleResult
from .titan import GAOptions, _decode, _place, titan_improve
from .workload import MultiCluster, Workload, moldable_time

__all__ = ["POLICIES", "MuscleResult", "simulate", "check_schedule", "schedule_violations", "load_for_level",
           "RECORD_COLUMNS"]

POLICIES = ("wrand", "dll", "muscle")

def _fresh(seed) -> np.random.SeedSequence:
    """A SeedSequence equal to ``seed`` but with no children spawned yet, so that the
    same seed object always gives the same streams."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size)
    return np.random.SeedSequence(seed)


def _policy_name(policy: str) -> str:
    p = str(policy).strip().lower()
    if p not in POLICIES:
        raise ModelError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    return p


def _muscle_round(ids, pref, E, deadline, arrival, av, attrs, sizes_m, m_max, max_depth):
    """Algorithm 2 inner do-while for one round; returns per-cluster orders (local ids)
    and the seed start times (local)."""
    p = ids.shape[0]
    C = len(sizes_m)
    psz = pref[ids]
    table = CompositionTable(psz, m_max, max_depth=max_depth)
    cnt = np.bincount(psz, minlength=m_max + 1)
    P = [float(a[0]) for a in attrs]
    ET = [float(a[1]) for a in attrs]
    SZ = [float(a[2]) for a in attrs]
    SLK = [float(a[3]) for a in attrs]
    orders: list[list[int]] = [[] for _ in range(C)]
    seed_start = np.empty(p)
    remaining = p
    while remaining:
        sigma = int(np.flatnonzero(cnt)[0])
        best = None
        for j in range(C):
            if sizes_m[j] < sigma:
                continue
            if P[j] == 0:
                eps = 0.0
            elif SLK[j] <= 0:
                eps = np.inf
            else:
                eps = P[j] * ET[j] * SZ[j] / (SLK[j] * sizes_m[j])
            key = (eps, float(av[j][sigma - 1]), j)
            if best is None or key < best:
                best = key
        j, T = best[2], best[1]
        r = int(np.searchsorted(av[j], T, side="right"))
        sel = table.allocate(r)
        if not sel:  # cannot happen: row sigma holds an unallocated singleton
            raise AssertionError("composition search found no job for a space that fits one")
        for loc in sel:
            g = ids[loc]
            s = int(pref[g])
            e = float(E[g, j])
            seed_start[loc] = _place(av[j], s, e)
            orders[j].append(loc)
            P[j] += 1
            ET[j] += e
            SZ[j] += s
            SLK[j] += deadline[g] - e - arrival[g]
            cnt[s] -= 1
            remaining -= 1
    return orders, seed_start


def simulate(
    workload: Workload,
    system: MultiCluster,
    policy: str = "muscle",
    *,
    level: int | None = None,
    phi: float = 0.05,
    weights: CPWeights = CPWeights(),
    ga: GAOptions | None = GAOptions(),
    max_depth: int = 8,
    trigger: str = "backlog",
    tau: float | None = None,
    seed: int | np.random.SeedSequence = 0,
    progress=None,
) -> MuscleResult:
    """Schedule ``workload`` on ``system`` with ``policy`` (``wrand``, ``dll``, ``muscle``).

    Parameters
    ----------
    level : jobs per round with ``trigger="batch"`` (the §5.1 level read as an input);
        with ``"backlog"`` an optional cap on a round (``None`` = no cap).
    phi : scalability factor of Eq. 3.
    weights : CP weights of Eq. 1.
    ga : TITAN GA options, or ``None`` to keep the seed schedules.
    max_depth : bound on the §4.2 recursive search for alternative jobs.
    trigger : ``"backlog"`` (default): Algorithm 2 step 1 -- a round as soon as some
        cluster's committed work ends within ``tau``, i.e. at
        ``t = max(a_next, min_j max_c avail_j[c] - tau)``; it takes every job collected
        by then (``level`` is only a cap on a round, ``None`` = no cap) and the workload
        level is an outcome, ``params["mean_queue"]``. ``"batch"``: a round each time
        ``level`` jobs are collected (the level is then an input).
    tau : the "predefined value" of Algorithm 2 (``None``: the mean of ``workload.x``,
        the mean execution time at the average rate).
    seed : seeds WRAND's choices and the GA (the workload has its own seed).
    progress : callable ``progress(jobs_done, jobs_total)``, optional
        Called about four times a second and at the end (e.g. a rich progress bar).
    """
    pol = _policy_name(policy)
    if trigger not in ("batch", "backlog"):
        raise ModelError(f"trigger: expected 'batch' or 'backlog', got {trigger!r}")
    if level is None:
        if trigger == "batch":
            raise ModelError("level: trigger 'batch' needs the number of jobs per round, got None")
        level = max(len(workload), 1)
    if level < 1:
        raise ModelError(f"level: jobs per round must be >= 1, got {level}")
    if tau is None:
        tau = float(np.mean(workload.x)) if len(workload) else 0.0
    if not (tau >= 0 and np.isfinite(tau)):
        raise ModelError(f"tau: must be >= 0 and finite, got {tau}")
    if not (phi >= 0 and np.isfinite(phi)):
        raise ModelError(f"phi: must be >= 0 and finite, got {phi}")
    n = len(workload)
    sizes_m = np.asarray(system.sizes, dtype=np.int64)
    m_max = int(sizes_m.max())
    pref = np.asarray(workload.size, dtype=np.int64)
    if n and pref.max() > m_max:
        raise ModelError(f"size: a preferable size ({int(pref.max())}) exceeds the largest cluster ({m_max})")
    arrival, deadline = workload.arrival, workload.deadline
    E = workload.exec_times(system)
    C = system.n
    cap = sizes_m * np.asarray(system.rates)
    ss = _fresh(seed)
    ss_pol, ss_ga = ss.spawn(2)
    rng_pol = np.random.default_rng(ss_pol)
    rng_ga = np.random.default_rng(ss_ga)
    w = weights.as_array()

    avail = [np.zeros(int(m)) for m in sizes_m]
    cl = np.full(n, -1, dtype=np.int64)
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    used = np.zeros(n, dtype=np.int64)
    seed_start = np.full(n, np.nan)
    # unfinished jobs per cluster for Eq. 2: finish, e, size, slack
    att = [np.empty((0, 4)) for _ in range(C)]
    rounds = ga_runs = ga_nc = 0
    ga_gain = 0.0
    ga_time = 0.0
    t_wall = time.perf_counter()
    queue_sum = 0
    wait_sum = 0.0
    b0 = 0
    t_next = time.perf_counter() + 0.25
    while b0 < n:
        if progress is not None and time.perf_counter() >= t_next:
            progress(b0, n)
            t_next = time.perf_counter() + 0.25
        if trigger == "batch":
            ids = np.arange(b0, min(b0 + level, n))
            t = float(arrival[ids[-1]])
        else:
            t = max(float(arrival[b0]), min(float(a[-1]) for a in avail) - tau)
            b1 = int(np.searchsorted(arrival, t, side="right"))
            ids = np.arange(b0, min(max(b1, b0 + 1), b0 + level, n))
        b0 = int(ids[-1]) + 1
        rounds += 1
        queue_sum += ids.shape[0]
        wait_sum += float(np.sum(t - arrival[ids]))
        for j in range(C):
            np.maximum(avail[j], t, out=avail[j])
            if att[j].shape[0]:
                att[j] = att[j][att[j][:, 0] > t]
        if pol == "muscle":
            attrs = [(a.shape[0], a[:, 1].sum(), a[:, 2].sum(), a[:, 3].sum()) for a in att]
            av = [a.copy() for a in avail]
            orders, sst = _muscle_round(ids, pref, E, deadline, arrival, av, attrs, sizes_m, m_max, max_depth)
            seed_start[ids] = sst
        else:
            orders = [[] for _ in range(C)]
            if pol == "wrand":
                for loc, g in enumerate(ids):
                    wts = np.where(sizes_m >= pref[g], cap, 0.0)
                    c = np.cumsum(wts)
                    j = int(np.searchsorted(c, rng_pol.random() * c[-1], side="right"))
                    orders[min(j, C - 1)].append(loc)
            else:  # dll
                av = [a.copy() for a in avail]
                for loc, g in enumerate(ids):
                    best, bj = np.inf, -1
                    for j in range(C):
                        if sizes_m[j] < pref[g]:
                            continue
                        load = float(av[j].mean()) - t
                        if load < best:
                            best, bj = load, j
                    seed_start[g] = _place(av[bj], int(pref[g]), float(E[g, bj]))
                    orders[bj].append(loc)
        for j in range(C):
            if not orders[j]:
                continue
            gl = ids[np.asarray(orders[j], dtype=np.int64)]
            k = gl.shape[0]
            p_loc = pref[gl]
            base_e = np.ascontiguousarray(E[gl, j])
            dl = np.ascontiguousarray(deadline[gl])
            order = np.arange(k, dtype=np.int64)
            if ga is not None:
                t0 = time.perf_counter()
                res = titan_improve(avail[j], t, order, p_loc, base_e, dl, phi=phi, weights=weights,
                                    options=ga, seed=int(rng_ga.integers(2**32)))
                ga_time += time.perf_counter() - t0
                ga_runs += 1
                ga_nc += int(res.status != 0)
                ga_gain += res.seed_cp - res.cp
                st, fi, sz, avn = res.start, res.finish, res.sizes, res.avail
            else:
                st, fi = np.empty(k), np.empty(k)
                avn = np.empty(avail[j].shape[0])
                sz = p_loc.copy()
                _decode(avail[j], t, order, sz, p_loc, base_e, dl, float(phi), w, avn, st, fi)
                if pol == "wrand":
                    seed_start[gl] = st
            cl[gl], start[gl], finish[gl], used[gl] = j, st, fi, sz
            avail[j] = avn
            dur = fi - st
            new = np.column_stack([fi, dur, sz.astype(np.float64), dl - dur - arrival[gl]])
            att[j] = np.vstack([att[j], new])
    wall = time.perf_counter() - t_wall
    if progress is not None:
        progress(n, n)
    met = cluster_metrics(cl, start, finish, used, deadline, sizes_m, weights)
    mcp, lbf = mcp_lbf(met["CP"])
    from .swf import offered_load

    res = MuscleResult(pol, cl, start, finish, used, met, mcp, lbf, rounds, ga_runs, ga_nc, ga_gain,
                       seed_start, wall, ga_time,
                       params={"level": level, "phi": phi, "ga": ga is not None, "trigger": trigger, "tau": tau,
                               "mean_batch": queue_sum / max(rounds, 1),
                               "mean_queue": wait_sum / span if (span := float(arrival[-1] - arrival[0])) > 0 else 0.0,
                               "cp_pairing": weights.pairing},
                       offered_load=offered_load(workload, system))
    from .metrics import workload_metrics

    res.hpc = workload_metrics(arrival, start, finish, cl, used, sizes_m)
    return res.checked(schedule_violations(res, workload, system, phi))


def schedule_violations(res: MuscleResult, workload: Workload, system: MultiCluster, phi: float,
                        rtol: float = 1e-12, max_report: int = 3) -> list[str]:
    """Certificate of feasibility: the list of violations (empty if feasible), each
    one line naming the rule, the job or cluster, and the values. Rules: every job
    scheduled once on one cluster, never before its arrival, at a size within the
    cluster, for the Eq. 3 time, and never more busy computers than the cluster has
    (event sweep, finishes before starts at equal times).

    Times are compared with a *relative* tolerance ``rtol * max(1, |t|)``: logs
    reach ``1.4e8`` s, where doubles are ``3e-8`` s apart, so an absolute
    tolerance of ``1e-9`` s would flag rounding as a violation.
    """
    out: list[str] = []
    n = len(workload)
    cl, st, fi, sz = res.cluster, res.start, res.finish, res.size
    unscheduled = np.flatnonzero((cl < 0) | ~np.isfinite(st) | ~np.isfinite(fi))
    if unscheduled.size:
        out.append(f"every job scheduled: {unscheduled.size} job(s) never scheduled, e.g. {unscheduled[:max_report].tolist()}")
        return out
    arr = workload.arrival
    tol_a = rtol * np.maximum(1.0, np.abs(st))
    early = np.flatnonzero(st < arr - tol_a)
    if early.size:
        i = int(early[np.argmax((arr - st)[early])])
        out.append(f"no job before its arrival: {early.size} job(s), e.g. job {i} starts at {st[i]!r} "
                   f"before its arrival {arr[i]!r}")
    sizes_m = np.asarray(system.sizes)
    badsz = np.flatnonzero((sz < 1) | (sz > sizes_m[cl]))
    if badsz.size:
        i = int(badsz[0])
        out.append(f"size within the cluster: {badsz.size} job(s), e.g. job {i} on {int(sz[i])} computers "
                   f"of cluster {int(cl[i])} ({int(sizes_m[cl[i]])} computers)")
    E = workload.exec_times(system)[np.arange(n), cl]
    expect = moldable_time(E, workload.size, sz, phi)
    dur = fi - st
    tol_d = rtol * np.maximum(1.0, np.maximum(np.abs(fi), np.abs(expect))) + 1e-9 * np.abs(expect)
    wrong = np.flatnonzero(np.abs(dur - expect) > tol_d)
    if wrong.size:
        i = int(wrong[0])
        out.append(f"Eq. 3 run time: {wrong.size} job(s), e.g. job {i} runs {dur[i]!r}, Eq. 3 gives {expect[i]!r}")
    for j in range(system.n):
        sel = cl == j
        if not sel.any():
            continue
        f_j, s_j = fi[sel], st[sel]
        # a finish within the tolerance of a start counts as before it
        times = np.concatenate([f_j - rtol * np.maximum(1.0, np.abs(f_j)), s_j])
        delta = np.concatenate([-sz[sel], sz[sel]])
        kind = np.concatenate([np.zeros(sel.sum()), np.ones(sel.sum())])  # finishes first
        order = np.lexsort((kind, times))
        run = np.cumsum(delta[order])
        k = int(np.argmax(run))
        peak = int(run[k])
        if peak > sizes_m[j]:
            out.append(f"cluster capacity: cluster {j} has {peak} computers busy at t={times[order][k]!r}, "
                       f"it has {int(sizes_m[j])}")
    return out


def check_schedule(res: MuscleResult, workload: Workload, system: MultiCluster, phi: float, rtol: float = 1e-12) -> None:
    """Raise ``AssertionError`` naming the first violation of
    :func:`schedule_violations` (for tests; runs report violations as a status)."""
    v = schedule_violations(res, workload, system, phi, rtol=rtol)
    if v:
        raise AssertionError(v[0] + (f" (and {len(v) - 1} more)" if len(v) > 1 else ""))


def load_for_level(level: float, params, system: MultiCluster, *, phi: float = 0.05, tau: float | None = None,
                   seed: int | np.random.SeedSequence = 0, lo: float = 0.5, hi: float = 2.0,
                   iters: int = 8) -> tuple[float, float]:
    """Offered load at which MUSCLE (seed schedules, backlog trigger) keeps a
    time-average of ``level`` jobs in the multicluster queue (§5.1 workload level).

    Geometric bisection on ``load`` over ``[lo, hi]`` with common random numbers (the
    same uniform draws at every load, so the measured queue is monotone in practice).
    Stopping rule: ``iters`` halvings of ``log(hi/lo)``. Returns ``(load, measured
    level)``; if the target lies outside the bracket the nearer end is returned.
    """
    from dataclasses import replace

    from .workload import generate_workload

    if not level > 0:
        raise ModelError(f"level: target queue length must be positive, got {level}")
    def queue(load: float) -> float:
        wl = generate_workload(replace(params, load=load), system, seed=seed)
        r = simulate(wl, system, "muscle", phi=phi, ga=None, trigger="backlog", tau=tau)
        return float(r.params["mean_queue"])

    q_lo, q_hi = queue(lo), queue(hi)
    if q_lo >= level:
        return lo, q_lo
    if q_hi <= level:
        return hi, q_hi
    best = (hi, q_hi)
    for _ in range(iters):
        mid = float(np.sqrt(lo * hi))
        q = queue(mid)
        if abs(q - level) < abs(best[1] - level):
            best = (mid, q)
        if q < level:
            lo = mid
        else:
            hi = mid
    return best
