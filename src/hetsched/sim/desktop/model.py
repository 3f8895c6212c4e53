"""Layer 1 of the desktop-grid model: validate once, turn the system into the kernel's arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._memory import ensure_fits
from ...errors import ModelError
from ...policies.pull import DEFAULT_TIE, LPAS_DG, LPAS_DG_ROBUST, USER, PullPolicy, resolve, tie_code
from ..core.instability import check_bound, default_bound
from ..core.variates import variate

__all__ = ["prepare", "Prepared", "MACHINE_RULES", "RESUBMIT_RULES", "LP_GROUPINGS", "LP_SOLUTIONS", "POLICIES",
           "OPTIONS"]

POLICIES = ("fcfs", "gcmu", "lpas-dg", "lpas-dg-robust")
MACHINE_RULES = {"longest-idle": 0, "fastest": 1, "lowest-index": 2, "random": 3}
RESUBMIT_RULES = {"front": 0, "back": 1}
LP_GROUPINGS = ("auto", "groups", "machines", "expanded")
#: which optimal LP solution LPAS_DG uses: a vertex of the per-machine LP (thesis §3.3), or the group-symmetric one
LP_SOLUTIONS = ("vertex", "symmetric")
AUTO_MACHINES_MAX = 100  # "auto": the vertex from a per-machine tableau up to this many machines, else expanded
TABLEAU_MAX_BYTES = 256 * 2**20  # a per-machine tableau larger than this is refused (one per replication)
EXEC_DISTS = ("exp", "det", "hyperexp")
_UP = {"exp": "exp", "hyperexp": "hyperexp", "weibull": "weibull"}
_DOWN = {"exp": "exp", "const": "det", "hyperexp": "hyperexp"}
#: the options :func:`prepare` takes (the command line passes these through)
OPTIONS = ("horizon", "warmup", "tie", "machine_rule", "resubmit", "lp_solution", "lp_grouping", "lp_order",
           "cpu_info", "inaccuracy", "exec_dist", "exec_scv", "track_lp", "max_in_system", "h2_form", "h2_p")


@dataclass
class Prepared:
    """Everything a replication needs (picklable): the kernel's :class:`~.layout.Params`, sizes, and
    what the summary reports."""

    policy: str
    code: int
    user: PullPolicy | None
    params: tuple  # layout.Params
    N: int
    M: int
    C: int
    lp_mode: int
    grouping: str  # "machines", "groups" or "expanded" (resolved)
    size: np.ndarray  # machines per LP column
    bound: int
    horizon: float
    warmup: float
    lambda_capacity: float  # lambda* of the LP with a_j times the long-run available fraction
    options: dict = field(default_factory=dict)
    scenario: str = ""
    class_names: tuple | None = None


def _order(M: int, order: Any) -> np.ndarray:
    """``perm[k]`` = the machine in place ``k``: index order, reversed, or a seeded permutation."""
    if isinstance(order, str) and order == "index":
        return np.arange(M, dtype=np.int64)
    if isinstance(order, str) and order == "reverse":
        return np.arange(M - 1, -1, -1, dtype=np.int64)
    return np.random.default_rng(int(order)).permutation(M).astype(np.int64)


def _columns(mu: np.ndarray, a_est: np.ndarray, grouping: str, per_machine: bool, order: Any = "index") -> np.ndarray:
    M = mu.shape[1]
    if grouping == "machines" or per_machine:
        # the LP columns in order (another order selects another optimal vertex)
        perm = _order(M, order)  # perm[c] = machine of column c
        col = np.empty(M, dtype=np.int64)
        col[perm] = np.arange(M)
        return col
    index: dict = {}
    col = np.empty(M, dtype=np.int64)
    for j in range(M):
        key = (tuple(mu[:, j].tolist()), round(float(a_est[j]), 12))
        col[j] = index.setdefault(key, len(index))
    return col


def _number(name: str, v, lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
        raise ModelError(f"{name}: must be a finite number, got {v!r}")
    v = float(v)
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ModelError(f"{name}: must be {'>' if lo_open else '>='} {lo:g}, got {v!r}")
    if hi is not None and v > hi:
        raise ModelError(f"{name}: must be <= {hi:g}, got {v!r}")
    return v


def capacity_lambda(system) -> float:
    """``lambda*`` of the allocation LP with every machine's long-run capacity ``a_j * E[up]/(E[up]+E[down])``.

    Below 1, no policy can keep up (failures only lose more work): the
    configuration is unstable whatever is simulated.
    """
    from ...errors import SolverError
    from ...lp import solve_allocation

    a = np.asarray(system.a, float).copy()
    f = system.failures
    if f is not None:
        if f.up_dist == "weibull":
            up = np.array([g.weibull_scale * math.gamma(1 + 1 / g.weibull_shape) for g in system.groups])
            up = up[system.group_of]
        else:
            up = np.full(system.M, f.mean_up)
        a = a * up / (up + f.mean_down)
    try:
        return float(solve_allocation(np.asarray(system.mu, float), system.alpha_array,
                                      a=np.clip(a, 1e-12, 1)).raise_for_status().lam)
    except (ModelError, SolverError):
        return float("nan")


def _members(col: np.ndarray, C: int, order: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(gmem, goff, mpos)``: the members of each LP column in ``order`` (their positions in the
    expanded vertex's staircase), the offsets, and each machine's place among its column's members."""
    perm = _order(col.shape[0], order)
    gmem = np.concatenate([perm[col[perm] == c] for c in range(C)]).astype(np.int64)
    goff = np.zeros(C + 1, np.int64)
    goff[1:] = np.cumsum(np.bincount(col, minlength=C))
    mpos = np.empty(col.shape[0], np.int64)
    for c in range(C):
        mpos[gmem[goff[c]:goff[c + 1]]] = np.arange(goff[c + 1] - goff[c])
    return gmem, goff, mpos


def _grouping(lp_solution, lp_grouping: str, lp_mode: int, M: int, inaccuracy: float) -> tuple[str, str]:
    """``(solution, grouping)``: the LP reading LPAS_DG uses and how the kernel computes it."""
    if lp_solution is not None and lp_solution not in LP_SOLUTIONS:
        raise ModelError(f"lp_solution: expected one of {', '.join(LP_SOLUTIONS)}, got {lp_solution!r}")
    if lp_grouping not in LP_GROUPINGS:
        raise ModelError(f"lp_grouping: expected one of {', '.join(LP_GROUPINGS)}, got {lp_grouping!r}")
    implied = {"groups": "symmetric", "machines": "vertex", "expanded": "vertex"}.get(lp_grouping)
    if lp_solution is not None and implied is not None and implied != lp_solution:
        raise ModelError(f"lp_solution: {lp_solution!r} contradicts lp_grouping {lp_grouping!r} (which gives the "
                         f"{implied} solution)")
    solution = lp_solution or implied or "vertex"
    if lp_mode != 1:  # FCFS and Gcmu read no LP; the robust variant uses the central solution of the groups
        return solution, "groups"
    if lp_grouping != "auto":
        return solution, lp_grouping
    if solution == "symmetric":
        return solution, "groups"
    # inaccurate estimates give every machine its own a, hence its own LP column
    return solution, "machines" if (M <= AUTO_MACHINES_MAX or inaccuracy > 0.0) else "expanded"


def prepare(system, policy, *, horizon: float = 20_000.0, warmup: float = 0.0, tie: str = DEFAULT_TIE,
            machine_rule: str = "longest-idle", resubmit: str = "front", lp_solution: str | None = None,
            lp_grouping: str = "auto",
            lp_order: Any = "index", cpu_info: bool = True, inaccuracy: float = 0.0, exec_dist: str | None = None,
            exec_scv: float = 2.0, track_lp: bool = False, max_in_system: int | None = None,
            h2_form: str = "balanced", h2_p: float = 0.1) -> Prepared:
    """Validate ``system``, ``policy`` and the options once; build the kernel's arrays.

    See :func:`hetsched.sim.desktop.simulate` for the parameters.
    """
    from .layout import Params

    code, pname, user = resolve(policy)
    if machine_rule not in MACHINE_RULES:
        raise ModelError(f"machine_rule: expected one of {', '.join(MACHINE_RULES)}, got {machine_rule!r}")
    if resubmit not in RESUBMIT_RULES:
        raise ModelError(f"resubmit: expected one of {', '.join(RESUBMIT_RULES)}, got {resubmit!r}")
    if not ((isinstance(lp_order, str) and lp_order in ("index", "reverse"))
            or (isinstance(lp_order, (int, np.integer)) and not isinstance(lp_order, bool) and lp_order >= 0)):
        raise ModelError(f"lp_order: expected 'index', 'reverse' or a non-negative int seed, got {lp_order!r}")
    horizon = _number("horizon", horizon, 0.0, lo_open=True)
    warmup = _number("warmup", warmup, 0.0)
    if not warmup < horizon:
        raise ModelError(f"warmup: must lie in [0, horizon) = [0, {horizon:g}), got {warmup!r}")
    inaccuracy = _number("inaccuracy", inaccuracy, 0.0, 1.0)
    exec_scv = _number("exec_scv", exec_scv, 1.0, lo_open=True)
    tcode = tie_code(tie)
    if not isinstance(cpu_info, (bool, np.bool_)):
        raise ModelError(f"cpu_info: expected true or false, got {cpu_info!r}")
    ed = exec_dist or system.exec_dist
    if ed not in EXEC_DISTS:
        raise ModelError(f"exec_dist: expected one of {', '.join(EXEC_DISTS)}, got {ed!r}")
    N, M = system.N, system.M
    bound = default_bound(M) if max_in_system is None else max_in_system
    if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)) or bound < 1:
        raise ModelError(f"max_in_system: must be a positive integer, got {max_in_system!r}")
    check_bound(int(bound), M)
    ensure_fits(f"max_in_system = {bound}", 24 * int(bound))  # the pool of waiting tasks, per replication

    mu = np.ascontiguousarray(system.mu, dtype=float)
    alpha = np.ascontiguousarray(system.alpha_array, dtype=float)
    gid = np.asarray(system.group_of)
    chains = [g.cpu_chain for g in system.groups]
    chain_groups = [k for k, c in enumerate(chains) if c is not None]
    chain_id = np.full(M, -1, dtype=np.int64)
    nch = max(1, len(chain_groups))
    Pm = np.tile(np.eye(3), (nch, 1, 1))
    Ppow = np.zeros((nch, 48, 3, 3))
    logstay = np.zeros((nch, 3))
    stat = np.zeros((nch, 3))
    levels = np.array([1.0, 0.5, 0.33])
    step = 10.0
    for n_, k in enumerate(chain_groups):
        ch = chains[k]
        if len(ch.levels) != 3:
            raise ModelError(f"cpu_chain of group {system.groups[k].name!r}: the desktop model needs 3 levels, "
                             f"got {len(ch.levels)}")
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
    a_true = np.ascontiguousarray(system.a, dtype=float)  # static a (chain machines ignore it)
    stuck = np.flatnonzero((a_true <= 0.0) & (chain_id < 0))
    if stuck.size:
        j = int(stuck[0])
        raise ModelError(f"availability[{j}] (machine {j + 1}): a = 0 in the desktop-grid model, where a machine "
                         f"that takes a task runs it at speed a and would never finish it; give a > 0 or remove "
                         f"the machine")
    a_est0 = a_true.copy() if cpu_info else np.ones(M)

    uses_lp = user is not None and user.uses_lp
    if code == LPAS_DG_ROBUST:
        lp_mode = 2
    elif code == LPAS_DG or track_lp or uses_lp:
        lp_mode = 1
    else:
        lp_mode = 0
    solution, grouping = _grouping(lp_solution, lp_grouping, lp_mode, M, inaccuracy)
    col = _columns(mu, a_est0, "groups" if grouping == "expanded" else grouping, inaccuracy > 0.0, lp_order)
    C = int(col.max()) + 1
    if lp_mode == 1:
        nbytes = 8 * (N + C) * (N * C + N + C + 2)
        if nbytes > TABLEAU_MAX_BYTES:
            why = ("inaccuracy > 0 gives every machine its own estimated a, hence its own LP column"
                   if inaccuracy > 0.0 else f"lp_grouping={grouping!r}")
            raise ModelError(f"inaccuracy/lp_grouping: the LP tableau of {C} columns would need "
                             f"{nbytes / 2**20:.0f} MiB per replication (limit {TABLEAU_MAX_BYTES // 2**20} MiB; "
                             f"{why}); use lp_grouping='expanded' or 'groups' without inaccuracy")
    gmem, goff, mpos = _members(col, C, lp_order) if grouping == "expanded" else (
        np.zeros(1, np.int64), np.zeros(2, np.int64), np.zeros(1, np.int64))
    first = np.array([np.flatnonzero(col == c)[0] for c in range(C)])
    size = np.bincount(col, minlength=C).astype(float)
    mu_colT = np.ascontiguousarray(mu[:, first].T)
    muT = np.ascontiguousarray(mu.T)

    f = system.failures
    fail_on = f is not None
    up_par = np.zeros((M, 4))
    up_k = down_k = 0
    down_par = np.zeros(4)
    if fail_on:
        if f.up_dist == "weibull":
            if not all(g.weibull_shape is not None for g in system.groups):
                raise ModelError("failures field 'up_dist': 'weibull' needs weibull_shape/scale on every group")
            up_k = 3
            for k, g in enumerate(system.groups):
                v = variate("weibull", g.weibull_scale * math.gamma(1 + 1 / g.weibull_shape),
                            shape=g.weibull_shape, label=f"groups[{k}].weibull")
                up_par[gid == k] = v.par
        else:
            v = variate(_UP[f.up_dist], f.mean_up, scv=f.scv, label="failures.up_dist", form=h2_form, p=h2_p)
            up_k = v.code
            up_par[:] = v.par
        v = variate(_DOWN[f.down_dist], f.mean_down, scv=f.scv, label="failures.down_dist", form=h2_form, p=h2_p)
        down_k = v.code
        down_par = v.par
    ev_ = variate(ed, 1.0, scv=exec_scv, label="exec_dist")

    params = Params(col=col, muT=muT, mu_colT=mu_colT, a_true=a_true, a_est0=a_est0, chain_id=chain_id, Pm=Pm,
                    Ppow=Ppow, logstay=logstay, levels=levels, stat=stat, alpha=alpha, up_par=up_par,
                    down_par=np.ascontiguousarray(down_par, dtype=float),
                    exec_par=np.ascontiguousarray(ev_.par, dtype=float), gmem=gmem, goff=goff, mpos=mpos,
                    policy=int(code), machine_rule=MACHINE_RULES[machine_rule], resubmit=RESUBMIT_RULES[resubmit],
                    lp_mode=int(lp_mode), tie=int(tcode), failures=int(fail_on), up_kind=int(up_k),
                    down_kind=int(down_k), exec_kind=int(ev_.code), bound=int(bound), uses_lp=int(uses_lp),
                    expand=int(grouping == "expanded"), horizon=float(horizon), warmup=float(warmup),
                    inaccuracy=float(inaccuracy), step=float(step))
    options = {"tie": str(tie).lower(), "machine_rule": machine_rule, "resubmit": resubmit, "lp_solution": solution,
               "lp_grouping": grouping,
               "lp_order": lp_order, "cpu_info": bool(cpu_info), "inaccuracy": inaccuracy, "exec_dist": ed,
               "warmup": warmup, "max_in_system": int(bound)}
    return Prepared(policy=pname, code=code if user is None else USER, user=user, params=params, N=N, M=M, C=C,
                    lp_mode=lp_mode, grouping=grouping, size=size, bound=int(bound), horizon=horizon, warmup=warmup,
                    lambda_capacity=capacity_lambda(system), options=options, scenario=str(system.id),
                    class_names=system.class_names)
