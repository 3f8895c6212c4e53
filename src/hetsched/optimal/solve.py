"""``hs.optimal_routing``: the exact optimal routing of a small mapping system (long-run mean number in system).

Three layers: validate the system and choose the truncation (sizes counted
before anything is built, refused in one line when too large); build the
truncated CTMDP (:mod:`.model`) and solve it with the project's average-cost
solver (:func:`hetsched.relative_value_iteration`); measure the truncation
under the optimal policy (stationary mass at the boundary, blocked arrivals,
the change of the value from the previous buffer) and re-check the answer
(the policy's stationary cost must lie within the solver's bounds).

**Choosing the buffer** (``buffer=None``): the first buffer is estimated from
the load ``rho = 1/lambda*`` (the tail ``rho^(M B)`` of a balanced system at
``tol``, minus one); the buffer then grows by one until the stationary
probability that some buffer is full *and* the estimated distance of the value
to the untruncated one are both below ``tol``, or until the next model would
exceed ``max_states`` (then the answer has status 2: truncation not
negligible, with the value only under ``value_untrusted``). The distance is
estimated from the relative changes ``c_B`` of the value from one buffer to
the next, which shrink geometrically: ``c_B r / (1 - r)`` with ``r = c_B /
c_(B-1)`` (so at least three buffers are solved). With a given ``buffer`` the
model is solved at ``buffer - 2``, ``buffer - 1`` and ``buffer`` so the change
and the distance are measured as well.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ModelError
from .model import BYTES_PER_PAIR, build_model, count_text, greedy_policy, routing_space, state_count

__all__ = ["optimal_routing", "exact_answer", "routing_size", "stationary", "DEFAULT_MAX_STATES", "DEFAULT_TOL"]

#: largest model solved by default (about 15 s per buffer there on a shared core: benchmarks/bench_optimal.py)
DEFAULT_MAX_STATES = 300_000
#: the truncation is negligible when the boundary mass and the relative change are below this
DEFAULT_TOL = 1e-3
MAX_BUFFER = 10_000


# --------------------------------------------------------------------------- validation
def _system(system):
    from ..system import System

    if isinstance(system, System):
        return system
    if isinstance(system, str):
        from ..api import load

        return load(system)
    raise ModelError(f"system: expected a hetsched System or a scenario id/path, got {type(system).__name__}")


def _arrays(system, load: float | None) -> tuple[np.ndarray, np.ndarray, float]:
    """``(alpha, mu, lambda*)`` of the routing model, arrival rates rescaled to ``load`` if given."""
    from ..api import solve_allocation

    if system.alpha_matrix is not None:
        raise ModelError(f"optimal routing of {system.id}: the mapping model has one arrival stream per class; "
                         f"'alpha_matrix' (per-machine streams) is not supported")
    if system.exec_dist != "exp":
        raise ModelError(f"optimal routing of {system.id}: the exact model needs exponential execution times, "
                         f"the system has exec_dist={system.exec_dist!r}")
    if system.failures is not None:
        raise ModelError(f"optimal routing of {system.id}: machines that fail (field 'failures') are not modelled; "
                         f"the exact routing model has machines that are always up")
    mu = np.ascontiguousarray(system.mu_effective, dtype=float)
    alpha = np.asarray(system.alpha_array, dtype=float)
    lam = float(solve_allocation(system).lam)
    if load is not None:
        load = float(load)
        if not (math.isfinite(load) and 0 < load <= 10):
            raise ModelError(f"load: expected a number in (0, 10] (1/lambda* after rescaling the arrival rates), "
                             f"got {load!r}")
        alpha = alpha * load * lam
        lam = 1.0 / load
    return alpha, mu, lam


def _alphabets(mu: np.ndarray) -> list[int]:
    return [int(np.unique(mu[:, j][mu[:, j] > 0]).size) for j in range(mu.shape[1])]


def _first_buffer(rho: float, machines: int, tol: float) -> int:
    """The tail estimate ``rho^(M B) = tol`` minus one (at least 1)."""
    if rho <= 0:
        return 1
    b = math.log(tol) / (max(machines, 1) * math.log(rho)) if rho < 1 else MAX_BUFFER
    return int(min(MAX_BUFFER, max(1, math.ceil(b) - 1)))


def routing_size(system, buffer: int | None = None, *, load: float | None = None,
                 tol: float = DEFAULT_TOL) -> dict[str, Any]:
    """The size of the exact model without building it: ``states``, ``pairs``, ``buffer``, ``alphabets``.

    ``buffer=None`` gives the first buffer of the automatic choice (from the load).
    """
    system = _system(system)
    alpha, mu, lam = _arrays(system, load)
    usable = int(sum(a > 0 for a in _alphabets(mu)))
    B = _first_buffer(1.0 / lam, usable, tol) if buffer is None else _check_buffer(buffer)
    S, K = state_count(mu, B)
    return {"states": S, "pairs": K, "buffer": B, "alphabets": _alphabets(mu), "load": 1.0 / lam}


def _check_buffer(buffer: Any) -> int:
    if isinstance(buffer, bool) or not isinstance(buffer, (int, np.integer)) or not 1 <= int(buffer) <= MAX_BUFFER:
        raise ModelError(f"buffer: expected an integer in 1..{MAX_BUFFER} (tasks per machine), got {buffer!r}")
    return int(buffer)


def _state_text(alphabets: list[int]) -> str:
    kinds = ["count" if a == 1 else ("unused" if a == 0 else f"sequence over {a} rates") for a in alphabets]
    if all(a <= 1 for a in alphabets):
        return "queue length per machine (execution rates depend on the machine only: counts are exact)"
    return ("ordered class sequence per machine where rates depend on the class (FCFS: the class in service and "
            "the order of those waiting set future rates): " + ", ".join(f"m{j + 1} {k}" for j, k in enumerate(kinds)))


def _too_large(system_id: str, mu: np.ndarray, B: int, S: int, max_states: int, why: str) -> ModelError:
    return ModelError(f"optimal routing of {system_id}: {why} the exact model has {count_text(S)} states at buffer "
                      f"B={B} (state: {_state_text(_alphabets(mu))}), more than max_states={max_states:,}; exact "
                      f"optimal routing is computed for small systems only")


# --------------------------------------------------------------------------- one truncation level
def stationary(model, policy: np.ndarray, tol: float = 1e-11, max_iter: int = 2_000_000,
               p0: np.ndarray | None = None) -> tuple[np.ndarray, float, int]:
    """Stationary distribution of the CTMC of ``policy``: power iteration on the uniformized chain.

    ``p <- p P`` with ``P = I + Q / nu``, ``nu = max q / 0.99`` (aperiodic).
    Stops when ``||p Q||_1 / nu < tol`` (checked every 25 steps); returns
    ``(p, residual, iterations)``. (A direct sparse LU of the generator fills in
    badly on sequence states: 15 million entries at 16,129 states.)
    """
    import scipy.sparse as sp

    Q = model.generator(policy)
    n = Q.shape[0]
    out = -Q.diagonal()
    nu = float(out.max()) / 0.99 if n and out.max() > 0 else 1.0
    QT = Q.T.tocsr()
    P = (sp.identity(n, format="csr") + QT / nu).tocsr()
    p = np.full(n, 1.0 / n) if p0 is None else np.asarray(p0, float) / float(np.sum(p0))
    it, res = 0, math.inf
    while it < max_iter:
        for _ in range(25):
            p = P @ p
        it += 25
        res = float(np.abs(QT @ p).sum()) / nu
        if res < tol:
            break
    p = np.clip(p, 0.0, None)
    return p / p.sum(), res, it


@dataclass
class Level:
    """The truncated model at one buffer size, solved."""

    buffer: int
    states: int
    pairs: int
    value: float  # long-run mean number in system under the optimal policy (the truncated chain)
    lower: float
    upper: float
    boundary_mass: float  # stationary probability that some machine's buffer is full
    blocking: float  # fraction of arrivals blocked
    throughput: float  # accepted arrival rate
    iterations: int
    converged: bool
    certified: bool
    seconds: float
    change: float = math.nan  # relative change of the value from the previous buffer
    error: float = math.nan  # estimated relative distance to the untruncated value (geometric tail of the changes)
    space: Any = None
    policy: Any = None
    pi: Any = None
    values: Any = None
    routes: Any = None  # (states, N) machine per class (-1 blocked), filled on first use
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"buffer": self.buffer, "states": self.states, "pairs": self.pairs, "value": self.value,
                "lower": self.lower, "upper": self.upper, "boundary_mass": self.boundary_mass,
                "blocking": self.blocking, "change": self.change, "error": self.error, "iterations": self.iterations,
                "converged": self.converged, "certified": self.certified, "seconds": self.seconds}


def _warm(prev: Level | None, space) -> np.ndarray | None:
    """The previous level's relative values carried to the new states (a longer queue reads its prefix)."""
    if prev is None or prev.values is None:
        return None
    old = prev.space
    idx = np.zeros(space.n_states, np.int64)
    for j, (m, mo, x, st) in enumerate(zip(space.machines, old.machines, space.coords(), old.strides)):
        a = int(m.rates.size)
        loc = np.arange(m.n, dtype=np.int64)
        if a == 1:
            loc = np.minimum(loc, old.buffer)
        elif a > 1:
            k = m.length.copy()
            offset = np.array([sum(a ** q for q in range(t)) for t in range(space.buffer + 2)], np.int64)
            v = loc - offset[k]
            while np.any(k > old.buffer):
                over = k > old.buffer
                v = np.where(over, v // a, v)
                k = np.where(over, k - 1, k)
            loc = offset[k] + v
        idx += loc[x] * st
    return prev.values[idx]


def solve_level(alpha, mu, buffer: int, *, penalty: float = 0.0, eps: float | None = None,
                prev: Level | None = None, max_iter: int = 1_000_000) -> Level:
    """Build and solve the truncated model at ``buffer``; measure the truncation under the optimal policy."""
    from ..mdp import relative_value_iteration

    t0 = time.perf_counter()
    space = routing_space(alpha, mu, buffer)
    model = build_model(space, penalty=penalty)
    res = relative_value_iteration(model, eps=eps, max_iter=max_iter, h0=_warm(prev, space))
    policy = np.asarray(res.policy, np.int64)
    pi, resid, _ = stationary(model, policy)
    xs = space.coords()
    lengths = [m.length[x] for m, x in zip(space.machines, xs)]
    count = np.sum(lengths, axis=0)
    full = [ln == space.buffer for ln in lengths]
    anyfull = np.zeros(space.n_states, bool)
    for f in full:
        anyfull |= f
    blocked_rate = 0.0
    for i, E in enumerate(space.eligible):
        allf = np.ones(space.n_states, bool)
        for j in E:
            allf &= full[j]
        blocked_rate += float(alpha[i]) * float(pi[allf].sum())
    lam = float(np.sum(alpha))
    value = float(pi @ count)
    lo, hi = float(res.lower), float(res.upper)
    k = model.pair_index(policy)
    g_pol = float(pi @ model.cost[k])  # includes the penalty, as the solver's gain does
    slack = (hi - lo) + 1e-7 * max(abs(hi), 1.0)
    certified = bool(res.status == 0 and lo - slack <= g_pol <= hi + slack)
    return Level(buffer=int(buffer), states=space.n_states, pairs=model.n_pairs, value=value, lower=lo, upper=hi,
                 boundary_mass=float(pi[anyfull].sum()), blocking=blocked_rate / lam if lam else 0.0,
                 throughput=lam - blocked_rate, iterations=int(res.iterations), converged=res.status == 0,
                 certified=certified, seconds=time.perf_counter() - t0, space=space, policy=policy, pi=pi,
                 values=np.asarray(res.values), message=res.message)


def _mct_value(level: Level) -> float:
    """Mean number in system of MCT (least expected completion time, lowest machine on ties) on the same chain."""
    space = level.space
    model = build_model(space)
    pol = greedy_policy(space)
    pi, _, _ = stationary(model, pol, p0=level.pi)
    xs = space.coords()
    return float(pi @ np.sum([m.length[x] for m, x in zip(space.machines, xs)], axis=0))


def _tail(prev_change: float, change: float) -> float:
    """The changes' geometric tail ``c r / (1 - r)``, ``r = c / c_prev``: the estimated relative distance of the
    last value to the untruncated one (inf when the changes do not shrink or are too few)."""
    if not (math.isfinite(prev_change) and math.isfinite(change)):
        return math.inf
    if change == 0.0:
        return 0.0
    if prev_change <= 0.0:
        return math.inf
    r = change / prev_change
    return change * r / (1.0 - r) if r < 1.0 else math.inf


# --------------------------------------------------------------------------- the API
def optimal_routing(system, *, buffer: int | None = None, load: float | None = None, tol: float = DEFAULT_TOL,
                    max_states: int = DEFAULT_MAX_STATES, penalty: float = 0.0, eps: float | None = None,
                    mct: bool = True):
    """The optimal dynamic routing of a mapping system: the least long-run mean number in system, exactly.

    Parameters
    ----------
    system : System or str
        A mapping system (``hs.System.from_arrays(alpha=..., mu=...)``, a
        scenario id or TOML path): Poisson arrivals per class, a FCFS queue per
        machine, exponential execution times of rate ``mu_ij`` (the effective
        rates ``a_j mu_ij`` where availabilities are given).
    buffer : int, optional
        Tasks per machine in the truncated model (blocked beyond). Default:
        chosen automatically (module docstring).
    load : float, optional
        Rescale the arrival rates so that ``1/lambda* = load``.
    tol : float
        The truncation is negligible when the stationary probability of a full
        buffer and the relative change of the value from the previous buffer
        are both below ``tol`` (default 1e-3).
    max_states : int
        Largest model built (default 300,000). Larger ones are refused in one
        line with their size, before anything is built.
    penalty : float
        Cost of one blocked arrival (default 0: blocked arrivals are lost).
    eps : float, optional
        Stopping tolerance of relative value iteration (default ``1e-9 max c``).
    mct : bool
        Also give MCT's exact value on the same truncated chain (``mct_value``).

    Returns
    -------
    OptimalRouting
        ``value`` (mean number in system), ``W`` (mean response time, by
        Little's law), ``route(cls, queues)``, ``table(cls)`` (counts),
        ``truncation`` (the value and the boundary mass at each buffer solved),
        ``status`` (0 ok, 1 unstable, 2 truncation not negligible, 3 not
        converged or not certified).
    """
    from .result import OptimalRouting

    t0 = time.perf_counter()
    system = _system(system)
    tol = float(tol)
    if not (0 < tol < 1):
        raise ModelError(f"tol: expected a number in (0, 1), got {tol!r}")
    if isinstance(max_states, bool) or not isinstance(max_states, (int, np.integer)) or max_states < 1:
        raise ModelError(f"max_states: expected a positive integer, got {max_states!r}")
    penalty = float(penalty)
    if not (math.isfinite(penalty) and penalty >= 0):
        raise ModelError(f"penalty: expected a finite number >= 0 (cost of a blocked arrival), got {penalty!r}")
    if buffer is not None:
        buffer = _check_buffer(buffer)
    alpha, mu, lam = _arrays(system, load)
    alph = _alphabets(mu)
    common = {"system": system, "alpha": alpha, "mu": mu, "load": 1.0 / lam, "alphabets": alph, "tol": tol,
              "state_text": _state_text(alph), "penalty": penalty}
    if lam <= 1.0:
        return OptimalRouting.unstable(**common, seconds=time.perf_counter() - t0,
                                       message=f"unstable: lambda* = {lam:.6g} <= 1 (load {1 / lam:.4g}): no policy "
                                               f"keeps the queues finite, so there is no optimal mean")
    usable = sum(a > 0 for a in alph)
    if buffer is None:
        first = _first_buffer(1.0 / lam, usable, tol)
        S, K = state_count(mu, first)
        if S > max_states:
            raise _too_large(system.id, mu, first, S, max_states,
                             f"at load {1 / lam:.4g} a negligible truncation needs B={first} tasks per machine or "
                             f"more;")
        plan = [first]
    else:
        S, K = state_count(mu, buffer)
        if S > max_states:
            raise _too_large(system.id, mu, buffer, S, max_states, "")
        plan = list(range(max(1, buffer - 2), buffer + 1))
    from .._memory import ensure_fits

    levels: list[Level] = []
    B = plan[0]
    while True:
        S, K = state_count(mu, B)
        ensure_fits(f"optimal routing of {system.id} at buffer {B} ({S:,} states)", K * BYTES_PER_PAIR)
        lv = solve_level(alpha, mu, B, penalty=penalty, eps=eps, prev=levels[-1] if levels else None)
        if levels:
            lv.change = abs(lv.value - levels[-1].value) / max(abs(lv.value), 1e-300)
            lv.error = _tail(levels[-1].change, lv.change)
        levels.append(lv)
        if buffer is not None:
            if len(levels) == len(plan):
                break
            B = plan[len(levels)]
            continue
        if lv.boundary_mass < tol and lv.error < tol:
            break
        if not (lv.converged and lv.certified):
            break
        nxt = state_count(mu, B + 1)[0]
        if nxt > max_states or B + 1 > MAX_BUFFER:
            break
        B += 1
    final = levels[-1]
    mct_value = _mct_value(final) if mct else None
    for lv in levels[:-1]:  # keep the arrays of the answer only
        lv.space = lv.policy = lv.pi = lv.values = None
    return OptimalRouting.solved(**common, levels=levels, mct_value=mct_value, max_states=max_states,
                                 next_states=state_count(mu, final.buffer + 1)[0],
                                 seconds=time.perf_counter() - t0)


def exact_answer(system, metric: str = "Q", **options: Any) -> dict[str, Any]:
    """The exact optimal value for ``hs.compare``'s policy ``optimal`` (keywords of its ``ExactAnswer``).

    ``metric`` ``Q`` (mean number in system) or ``W`` (mean response time,
    ``Q / throughput``). Compare's model options: ``dist`` other than
    exponential is refused; the others (``k``, ``tie``, ``warmup``, ...) concern
    the simulated policies. A truncation that is not negligible within the
    state limit is refused in one line, as is a model too large to build.
    """
    dist = options.get("dist")
    if dist is not None and str(dist).strip().lower() != "exp":
        raise ModelError(f"policy 'optimal': the exact optimal routing assumes exponential execution times, "
                         f"got dist={dist!r}")
    if metric not in ("Q", "W"):
        raise ModelError(f"policy 'optimal': the exact optimal routing minimises Q (and so W = Q / throughput); "
                         f"metric {metric!r} has no exact value")
    res = optimal_routing(system, mct=False)
    if res.status != 0:
        raise ModelError(f"policy 'optimal' on {res.system}: {res.message}")
    value = res.value if metric == "Q" else res.W
    return {"value": float(value), "metric": metric, "seconds": res.seconds, "extra": res.summary(),
            "message": (f"exact: {res.state_kind} at buffer B={res.buffer} ({res.states:,} states), boundary "
                        f"mass {res.boundary_mass:.2g}, estimated truncation error {res.error:.2g}")}

