"""Desktop grids: fault-aware pull scheduling (thesis §1.4.1, chapter 3).

Model
-----
*Tasks.* ``N`` classes arrive in independent Poisson streams (rates ``alpha_i``).
A central scheduler keeps one FCFS queue per class; a task keeps its original
arrival time for its whole life.

*Machines.* ``M`` machines, each either *available* (up) or *unavailable* (down).
An available idle machine requests a task (pull); it runs one task at a time,
without preemption. A task of class ``i`` started on machine ``j`` needs a
nominal execution time ``X`` (mean ``1/mu'_ij``; exponential, deterministic or
hyperexponential with scv 2, drawn afresh at every start). It progresses at the
machine's current CPU availability level: with a static ``a_j`` it finishes after
``X / a_j`` (effective rate ``mu_ij = a_j mu'_ij``, §1.4.1); with a three-state
CPU chain (Table 3.13: 100/50/33 %, one step every ``step = 10`` time units on a
global grid ``k*step``) its remaining nominal work decreases at rate
``level(state)`` and the state may change several times during one task (exact:
the chain is simulated through geometric sojourns while the machine is busy,
caught up with ``P^k`` when it was idle).

*Failures.* Each machine alternates availability periods (exponential,
hyperexponential scv 5, or per-group Weibull) and fault periods (exponential,
hyperexponential scv 5, or constant 120). When a machine fails, its running task
is lost (no checkpointing) and resubmitted to the scheduler; the machine pulls
again when it comes back. The scheduler learns of failures instantly.

*Events* (one fixed slot each, ordered by ``(time, slot)``): task timer per
machine (completion, or a CPU-chain state change of a running task),
availability timer per machine (failure or repair), arrival per class.

*Policies* (:mod:`hetsched.sim.pull_policies`): ``fcfs``, ``gcmu``, ``lpas-dg``
(support of a *vertex* ``delta*`` of the allocation LP (3.1)-(3.3) restricted to
the available machines, re-optimised at every availability/unavailability event),
``lpas-dg-robust`` (support of the *central* solution, §3.4.6). The policy's LP
uses the *estimated* ``a_j``: the static value, the chain's steady-state mean, 1
without CPU information (§3.4.4, ``cpu_info=False``), or
``a'_j = clip(a_j (1+E), 0, 1)``, ``E ~ U[-I, I]`` drawn whenever ``j`` becomes
available (§3.4.6, ``inaccuracy=I``).

*LP re-solving.* ``lpas-dg`` uses, by default, one LP column per machine, so
its optimal *vertex* has at least ``NM + 1 - N - M`` zeros -- the solution the
thesis uses "throughout the chapter" (§3.3, end); with it, 22 of the 25
printed LPAS_DG ``W`` of Tables 3.3-3.6 and 3.11 are matched within 5 %, and
§3.4.4's Delta without CPU information within ~10 points (evidence in
``docs/desktop-grid.md``). Which machines of a group receive the nonzeros
depends on the vertex the simplex reaches (``lp_order``). With
``lp_grouping="groups"`` (default above 100 machines, i.e. Systems 3.F and 3.G, and
for the robust variant) machines that are interchangeable for the LP (same rate
column and same estimated ``a``) are aggregated into one column whose capacity
is the sum of the up members' ``a`` (the group-symmetric vertex: far fewer
zeros, a less restrictive policy). An availability event changes one column's
right-hand side; ``lpas-dg`` re-optimises the previous optimal tableau with a
dual simplex (no Python per event; ``lp_solves`` = availability events + 1);
``lpas-dg-robust`` caches central supports keyed by the capacity vector
(``lp_solves`` = number of distinct keys, solved by HiGHS IPM).

*Measured.* ``W``: mean completion time (departure - original arrival, including
resubmissions) of the tasks that arrive after ``warmup`` and finish by
``horizon``; ``W_i`` per class.

Modelling choices the thesis leaves open are parameters (defaults chosen against
Tables 3.3-3.6 and 3.11, see ``docs/_parts/assumptions-desktop.md``):
``machine_rule`` (which idle machine receives an arriving task),
``resubmit`` (where a resubmitted task re-enters its queue), ``lp_grouping``
and ``lp_order`` (which optimal vertex LPAS_DG uses).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ModelError
from ..system import System
from . import _desktop_kernel as K
from .pull_policies import LPAS_DG, LPAS_DG_ROBUST, POLICY_CODES, policy_code

__all__ = ["DesktopResult", "simulate_desktop", "desktop_replication", "run_desktop", "MACHINE_RULES",
           "RESUBMIT_RULES", "POLICIES"]

POLICIES = tuple(POLICY_CODES)
MACHINE_RULES = {"longest-idle": 0, "fastest": 1, "lowest-index": 2, "random": 3}
RESUBMIT_RULES = {"front": 0, "back": 1}
LP_GROUPINGS = ("auto", "groups", "machines")
AUTO_MACHINES_MAX = 100  # "auto": per-machine vertex LP up to this many machines (dense tableau cost)
_EXEC = {"exp": 0, "det": 1, "hyperexp": 2}
_UP = {"exp": 0, "hyperexp": 2, "weibull": 3}
_DOWN = {"exp": 0, "const": 1, "hyperexp": 2}
DEFAULT_QCAP = 1 << 20


@dataclass
class DesktopResult:
    """One replication (fields in the style of ``OptimizeResult``)."""

    success: bool
    status: int
    message: str
    policy: str
    W: float
    W_per_class: list
    completed: list
    unstable: bool
    events: int
    arrivals: int
    resubmissions: int
    avail_events: int
    lp_solves: int
    lp_pivots: int
    lp_seconds: float
    support_changes: int
    up_fraction: np.ndarray
    horizon: float
    wall_seconds: float
    seed: Any = None
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["up_fraction"] = np.asarray(self.up_fraction).tolist()
        return d


def _columns(mu: np.ndarray, a_est: np.ndarray, grouping: str, per_machine: bool, order: Any = "index") -> np.ndarray:
    M = mu.shape[1]
    if grouping == "machines" or per_machine:
        if isinstance(order, str) and order == "index":
            return np.arange(M, dtype=np.int64)
        if isinstance(order, str) and order == "reverse":
            return np.arange(M - 1, -1, -1, dtype=np.int64)
        # a seeded random order of the LP columns (selects another optimal vertex)
        perm = np.random.default_rng(int(order)).permutation(M)  # perm[c] = machine of column c
        col = np.empty(M, dtype=np.int64)
        col[perm] = np.arange(M)
        return col
    index: dict = {}
    col = np.empty(M, dtype=np.int64)
    for j in range(M):
        key = (tuple(mu[:, j].tolist()), round(float(a_est[j]), 12))
        col[j] = index.setdefault(key, len(index))
    return col


def _central_support(mu_col: np.ndarray, alpha: np.ndarray, cap: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Support ``[C, N]`` of the central (IPM, no crossover) solution for capacities ``cap``."""
    from ..errors import SolverError
    from ..lp import solve_allocation

    a = np.clip(cap / size, 0.0, 1.0)
    try:
        res = solve_allocation(mu_col, alpha, a=a, counts=size, solution="central").raise_for_status()
    except (ModelError, SolverError):
        # some class has no available machine, or IPM gave no answer on a trivial
        # LP (e.g. one column): no restriction beyond the available columns
        return np.ascontiguousarray(((mu_col > 0) & (cap > 0)[None, :]).T)
    sup = (res.delta > res.zero_tol) & (mu_col > 0)
    return np.ascontiguousarray(sup.T)


def simulate_desktop(
    system: System,
    policy: str,
    *,
    horizon: float = 20_000.0,
    seed: Any = None,
    warmup: float = 0.0,
    machine_rule: str = "longest-idle",
    resubmit: str = "front",
    lp_grouping: str = "auto",
    lp_order: Any = "index",
    cpu_info: bool = True,
    inaccuracy: float = 0.0,
    exec_dist: str | None = None,
    exec_scv: float = 2.0,
    track_lp: bool = False,
    qcap: int = DEFAULT_QCAP,
) -> DesktopResult:
    """Simulate one replication of the desktop-grid model (module docstring).

    Parameters
    ----------
    system : System
        Rates, groups, availability ``a`` (static or CPU chains), failures.
    policy : {"fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"}
    horizon, warmup : float
        Run length; tasks arriving before ``warmup`` are not counted.
    seed : int or SeedSequence
        All randomness (five independent streams: arrivals, execution,
        failures, CPU chains, ties/estimates).
    machine_rule : {"longest-idle", "fastest", "lowest-index", "random"}
        Which eligible idle machine receives an arriving task.
    resubmit : {"front", "back"}
        A task lost to a failure re-enters its class queue in arrival order
        (front) or at the tail (back); it keeps its original arrival time.
    lp_grouping : {"auto", "groups", "machines"}
        ``machines``: the LPAS_DG vertex LP has one column per machine, so its
        basic solution has at least ``NM + 1 - N - M`` zeros (thesis §3.3, end:
        the solution used "throughout the chapter"). ``groups``: interchangeable
        machines share one column (group-symmetric vertex, far fewer zeros).
        ``auto`` (default): ``machines`` for ``lpas-dg`` (and ``track_lp``) when
        ``M <= 100`` (Systems 3.A-3.E, 3.H), ``groups`` otherwise (3.F, 3.G:
        the dense per-machine tableau costs ~40x more run time on 3.G1) and for
        the other policies (FCFS and
        Gcmu do not read the LP; the robust variant's cache is keyed by column
        capacities).
    lp_order : "index", "reverse" or int
        Order of the per-machine LP columns (int: a seeded random order). The
        simplex's optimal vertex, hence which machines of a group receive the
        nonzeros, depends on it.
    cpu_info : bool
        ``False``: the policies' LP assumes ``a_j = 1`` (§3.4.4).
    inaccuracy : float
        ``I`` of §3.4.6 (0 = exact estimates).
    exec_dist : {"exp", "det", "hyperexp"}, optional
        Execution-time family (default: the system's).
    track_lp : bool
        Maintain the vertex LP even for FCFS/Gcmu (to measure LP cost on an
        identical event sequence).
    qcap : int
        Per-class queue capacity; exceeding it stops the run as unstable.
    """
    code = policy_code(policy)
    pname = str(policy).lower()
    if machine_rule not in MACHINE_RULES:
        raise ModelError(f"machine_rule: expected one of {sorted(MACHINE_RULES)}, got {machine_rule!r}")
    if resubmit not in RESUBMIT_RULES:
        raise ModelError(f"resubmit: expected one of {sorted(RESUBMIT_RULES)}, got {resubmit!r}")
    if lp_grouping not in LP_GROUPINGS:
        raise ModelError(f"lp_grouping: expected one of {LP_GROUPINGS}, got {lp_grouping!r}")
    if not ((isinstance(lp_order, str) and lp_order in ("index", "reverse"))
            or (isinstance(lp_order, (int, np.integer)) and not isinstance(lp_order, bool) and lp_order >= 0)):
        raise ModelError(f"lp_order: expected 'index', 'reverse' or a non-negative int seed, got {lp_order!r}")
    if not (horizon > 0 and np.isfinite(horizon)):
        raise ModelError(f"horizon: must be a positive finite number, got {horizon!r}")
    if not (0 <= warmup < horizon):
        raise ModelError(f"warmup: must lie in [0, horizon), got {warmup!r}")
    if not (0.0 <= inaccuracy <= 1.0):
        raise ModelError(f"inaccuracy: must lie in [0, 1], got {inaccuracy!r}")
    ed = exec_dist or system.exec_dist
    if ed not in _EXEC:
        raise ModelError(f"exec_dist: expected one of {sorted(_EXEC)}, got {ed!r}")
    qcap = int(1 << max(4, int(np.ceil(np.log2(max(16, qcap))))))

    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    g_arr, g_exec, g_fail, g_chain, g_tie = [np.random.Generator(np.random.PCG64(s)) for s in ss.spawn(5)]

    N, M = system.N, system.M
    mu = np.ascontiguousarray(system.mu, dtype=float)
    alpha = system.alpha_array.copy()
    a_sys = system.a
    chains = [g.cpu_chain for g in system.groups]
    gid = system.group_of
    chain_groups = [k for k, c in enumerate(chains) if c is not None]
    chain_id = np.full(M, -1, dtype=np.int64)
    nch = max(1, len(chain_groups))
    Pm = np.tile(np.eye(3), (nch, 1, 1))
    Ppow = np.zeros((nch, 48, 3, 3))
    logstay = np.zeros((nch, 3))
    levels = np.array([1.0, 0.5, 0.33])
    step = 10.0
    stat = np.zeros((nch, 3))
    for n_, k in enumerate(chain_groups):
        ch = chains[k]
        chain_id[gid == k] = n_
        Pm[n_] = ch.matrix()
        stat[n_] = ch.stationary()
        levels = np.asarray(ch.levels, dtype=float)
        step = float(ch.step)
        Q = Pm[n_].copy()
        for b in range(48):
            Ppow[n_, b] = Q
            Q = Q @ Q
        with np.errstate(divide="ignore"):
            logstay[n_] = np.where(np.diag(Pm[n_]) < 1.0, np.log(np.diag(Pm[n_])), 0.0)
    a_true = np.ascontiguousarray(a_sys, dtype=float)  # static a (chain machines ignore it)
    a_est0 = a_true.copy() if cpu_info else np.ones(M)

    if code == LPAS_DG_ROBUST:
        lp_mode = 2
    elif code == LPAS_DG or track_lp:
        lp_mode = 1
    else:
        lp_mode = 0
    grouping = lp_grouping
    if grouping == "auto":
        grouping = "machines" if (lp_mode == 1 and M <= AUTO_MACHINES_MAX) else "groups"
    per_machine = inaccuracy > 0.0
    col = _columns(mu, a_est0, grouping, per_machine, lp_order)
    C = int(col.max()) + 1
    first = np.array([np.flatnonzero(col == c)[0] for c in range(C)])
    size = np.bincount(col, minlength=C).astype(float)
    mu_colT = np.ascontiguousarray(mu[:, first].T)
    muT = np.ascontiguousarray(mu.T)

    # ---- machine state
    mi = np.zeros((M, K.N_MI), dtype=np.int64)
    mf = np.zeros((M, K.N_MF))
    mi[:, K.UP] = 1
    mi[:, K.BUSY] = -1
    mi[:, K.PREV] = -1
    mi[:, K.NEXT] = -1
    for j in range(M):
        if chain_id[j] >= 0:
            mi[j, K.CST] = int(g_chain.choice(3, p=stat[chain_id[j]]))
    a0 = a_est0.copy()
    if inaccuracy > 0:
        a0 = np.clip(a0 * (1.0 + inaccuracy * (2.0 * g_tie.random(M) - 1.0)), 0.0, 1.0)
    mf[:, K.AEST] = a0
    chead = np.full(C, -1, dtype=np.int64)
    ctail = np.full(C, -1, dtype=np.int64)
    cidle = np.zeros(C, dtype=np.int64)
    for j in range(M):
        K.idle_add(mi, chead, ctail, cidle, col[j], j)
    cap = np.zeros(C)
    np.add.at(cap, col, a0)

    # ---- event slots
    S = 2 * M + N
    P = 1
    while P < S:
        P *= 2
    tkey = np.full(P, np.inf)
    tree = np.zeros(2 * P, dtype=np.int64)
    f = system.failures
    fail_on = f is not None
    up_kind = _UP[f.up_dist] if fail_on else 0
    down_kind = _DOWN[f.down_dist] if fail_on else 0
    up_mean = f.mean_up if fail_on and f.up_dist != "weibull" else 1.0
    down_mean = f.mean_down if fail_on else 1.0
    scv = f.scv if fail_on else 5.0
    wshape = np.ones(M)
    wscale = np.ones(M)
    for k, g in enumerate(system.groups):
        if g.weibull_shape is not None:
            wshape[gid == k] = g.weibull_shape
            wscale[gid == k] = g.weibull_scale
    if fail_on:
        if up_kind == 3 and not np.all([g.weibull_shape is not None for g in system.groups]):
            raise ModelError("failures field 'up_dist': 'weibull' needs weibull_shape/scale on every group")
        for j in range(M):
            tkey[M + j] = K.draw_up(g_fail, up_kind, up_mean, scv, wshape[j], wscale[j])
    for i in range(N):
        tkey[2 * M + i] = g_arr.exponential(1.0 / alpha[i])
    K.tree_init(tkey, tree, P)

    qarr = np.zeros((N, qcap))
    qh = np.zeros(N, dtype=np.int64)
    ql = np.zeros(N, dtype=np.int64)
    head_arr = np.zeros(N)

    # ---- LP
    m = N + C
    nv = N * C + 1 + m
    shapeT = (m, nv + 1) if lp_mode == 1 else (1, 2)
    T = np.zeros(shapeT)
    obj = np.zeros(shapeT[1])
    basis = np.zeros(shapeT[0], dtype=np.int64)
    scT = np.zeros(shapeT)
    scO = np.zeros(shapeT[1])
    scB = np.zeros(shapeT[0], dtype=np.int64)
    support = np.ascontiguousarray((mu_colT > 0))
    elig_static = np.ascontiguousarray((mu_colT > 0))
    lp_seconds = 0.0
    ist = np.zeros(K.N_IST, dtype=np.int64)
    fst = np.zeros(K.N_FST)
    fst[K.QMID] = 0.5 * (warmup + horizon)
    fst[K.T_LAST] = 0.0
    ist[K.PEND_MACHINE] = -1
    if lp_mode == 1:
        K.lp_build(T, obj, basis, mu_colT, alpha, cap)
        if K.lp_primal(T, obj, basis) < 0:
            raise ModelError("allocation LP: the initial simplex failed")
        _, lam = K.lp_support(T, basis, mu_colT, support)
        fst[K.LAM] = lam
        ist[K.LP_SOLVES] = 1
    KT = 1 << 12 if lp_mode == 2 else 1
    keys_cap = np.zeros((KT, C))
    key_used = np.zeros(KT, dtype=np.bool_)
    sup_table = np.zeros((KT, C, N), dtype=np.bool_)
    central_solves = 0
    if lp_mode == 2:
        ist[K.PENDING] = 1
    cls_n = np.zeros(N, dtype=np.int64)
    cls_w = np.zeros(N)
    up_time = np.zeros(M)

    args_fixed = (col, muT, mu_colT, a_true, a_est0, chain_id, Pm, Ppow, logstay, levels, step,
                  alpha, fail_on, up_kind, up_mean, scv, wshape, wscale, down_kind, down_mean, scv,
                  _EXEC[ed], float(exec_scv), float(inaccuracy),
                  code, MACHINE_RULES[machine_rule], RESUBMIT_RULES[resubmit], lp_mode, float(horizon),
                  float(warmup))
    t0 = time.perf_counter()
    c0 = time.process_time()
    while True:
        rc = K.run(ist, fst, mi, mf, tkey, tree, P, qarr, qh, ql, head_arr, chead, ctail, cidle,
                   *args_fixed, support, elig_static, cap, T, obj, basis, scT, scO, scB,
                   keys_cap, key_used, sup_table, cls_n, cls_w, up_time,
                   g_arr, g_exec, g_fail, g_chain, g_tie)
        if rc != K.NEED_SUPPORT:
            break
        ts = time.perf_counter()
        if ist[K.TABLE_COUNT] * 2 >= KT:  # table half full: start afresh (keys are then rarely reused)
            key_used[:] = False
            ist[K.TABLE_COUNT] = 0
            slot, _ = K.table_lookup(cap, keys_cap, key_used)
        else:
            slot = int(ist[K.MISS_SLOT])
        keys_cap[slot] = cap
        sup_table[slot] = _central_support(mu_colT.T, alpha, cap, size)
        key_used[slot] = True
        ist[K.TABLE_COUNT] += 1
        central_solves += 1
        lp_seconds += time.perf_counter() - ts
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if lp_mode == 2:
        ist[K.LP_SOLVES] = central_solves

    # ---- results
    overflow = rc == K.OVERFLOWED
    t_end = float(horizon) if not overflow else float(fst[K.T_NOW])
    for j in range(M):  # close the availability integrals
        if mi[j, K.UP] == 1:
            up_time[j] += t_end - mf[j, K.UPSINCE]
    up_fraction = up_time / t_end
    n_done = cls_n.sum()
    W = float(cls_w.sum() / n_done) if n_done else float("nan")
    Wi = [float(w / n) if n else float("nan") for w, n in zip(cls_w, cls_n)]
    q_end = int(ql.sum())
    tmid = fst[K.QMID]
    q1 = fst[K.QINT1] / max(tmid, 1e-12)
    q2 = fst[K.QINT2] / max(t_end - tmid, 1e-12)
    growing = q_end > 100 + 0.005 * ist[K.ARRIVALS] and q2 > 1.3 * q1 + 1.0
    unstable = bool(overflow or growing)
    msg = "completed"
    if overflow:
        msg = f"a class queue exceeded its capacity ({qcap}) at t={t_end:.6g}: unstable"
    elif growing:
        msg = f"queues grew through the run ({q1:.3g} -> {q2:.3g} waiting on average, {q_end} at the end): unstable"
    if ist[K.LP_FAIL]:
        msg += f"; {int(ist[K.LP_FAIL])} dual-simplex failures (re-solved from scratch)"
    return DesktopResult(
        success=not unstable, status=1 if unstable else 0, message=msg, policy=pname, W=W,
        W_per_class=Wi, completed=cls_n.tolist(), unstable=unstable, events=int(ist[K.EVENTS]),
        arrivals=int(ist[K.ARRIVALS]), resubmissions=int(ist[K.RESUB]), avail_events=int(ist[K.AVAIL_EVENTS]),
        lp_solves=int(ist[K.LP_SOLVES]), lp_pivots=int(ist[K.PIVOTS]), lp_seconds=lp_seconds,
        support_changes=int(ist[K.SUP_CHANGES]), up_fraction=up_fraction, horizon=t_end, wall_seconds=wall,
        seed=getattr(ss, "entropy", None),
        extra={"lambda": float(fst[K.LAM]), "columns": C, "queued_end": q_end, "starts": int(ist[K.STARTS]),
               "lookups": int(ist[K.LOOKUPS]), "lp_grouping": grouping,
               "support_nonzeros": int(support[col][mi[:, K.UP] == 1].sum()) if lp_mode else None,
               "up_end": int(mi[:, K.UP].sum()), "cpu_seconds": cpu},
    )


# ----------------------------------------------------------------------------- replications
def desktop_replication(seed_seq: np.random.SeedSequence, params: dict) -> dict:
    """One replication for :func:`hetsched.runner.replicate` (picklable, top level)."""
    p = dict(params)
    system = p.pop("system")
    policy = p.pop("policy")
    return simulate_desktop(system, policy, seed=seed_seq, **p).as_dict()


def run_desktop(system: System, policy: str, *, reps: int = 30, seed: int = 2009, workers: int | None = None,
                backend: str = "local", scheduler: str | None = None, progress: bool = False,
                **model: Any) -> dict:
    """Independent replications and their summary (the ``hetsched simulate`` JSON).

    Returns a dict with ``policy``, ``metric`` (``"W"``), ``mean``, ``ci``,
    ``accuracy`` (relative half-width), ``per_class``, ``unstable``, ``events``,
    ``wall_seconds`` (sum over replications of the kernel time), LP counts.
    """
    from ..runner import replicate
    from ..stats import t_interval

    params = {"system": system, "policy": policy, **model}
    outs = replicate(desktop_replication, params, reps, seed, workers=workers, backend=backend,
                     scheduler=scheduler, progress=progress, label=f"{system.id} {policy}")
    return summarize(outs, policy)


def summarize(outs: list[dict], policy: str) -> dict:
    from ..stats import t_interval

    unstable = any(o["unstable"] for o in outs)
    Ws = [o["W"] for o in outs if np.isfinite(o["W"])]
    est = t_interval(Ws)
    N = len(outs[0]["W_per_class"])
    per_class = []
    for i in range(N):
        vals = [o["W_per_class"][i] for o in outs if np.isfinite(o["W_per_class"][i])]
        e = t_interval(vals)
        per_class.append({"class": i + 1, "mean": e.mean, "ci": [e.low, e.high]})
    return {
        "policy": str(policy).lower(),
        "metric": "W",
        "mean": est.mean,
        "ci": [est.low, est.high],
        "accuracy": est.rel_half_width,
        "per_class": per_class,
        "unstable": bool(unstable),
        "reps": len(outs),
        "events": int(sum(o["events"] for o in outs)),
        "wall_seconds": float(sum(o["wall_seconds"] for o in outs)),
        "lp_solves": int(sum(o["lp_solves"] for o in outs)),
        "lp_pivots": int(sum(o["lp_pivots"] for o in outs)),
        "lp_seconds": float(sum(o["lp_seconds"] for o in outs)),
        "avail_events": int(sum(o["avail_events"] for o in outs)),
        "resubmissions": int(sum(o["resubmissions"] for o in outs)),
        "messages_unstable": [o["message"] for o in outs if o["unstable"]][:3],
    }


def simulate_command(system: System, policy: str, *, reps: int = 30, horizon: float | None = None, seed: int = 2009,
                     workers: int | None = None, backend: str = "local", scheduler: str | None = None,
                     dist: str | None = None, progress: bool = False, **model: Any) -> dict:
    """The one function ``hetsched simulate`` calls for this model (JSON of DESIGN.md).

    ``dist`` maps to ``exec_dist``; ``horizon`` defaults to the thesis's 20,000.
    """
    if dist is not None:
        model["exec_dist"] = dist
    out = run_desktop(system, policy, reps=reps, seed=seed, workers=workers, backend=backend, scheduler=scheduler,
                      progress=progress, horizon=float(horizon or 20_000.0), **model)
    out["scenario"] = system.id
    out["model"] = "desktop"
    return out
