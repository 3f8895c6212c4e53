"""TITAN's local genetic algorithm (seed 002 §3; Spooner et al. 2003), per cluster.

Schedule model (decoding, ours)
-------------------------------
A cluster of ``m`` computers has committed work that leaves computer ``c`` free
from ``avail0[c] >= t0`` (``t0`` = time of the scheduling round). A schedule of the
``n`` new jobs is a chromosome ``(perm, size)``: a job order and a size per job
(moldable, ``1 <= size <= m``; time by Eq. 3). It is decoded by serial list
scheduling: each job in ``perm`` order starts at the earliest time ``k = size``
computers are free (the ``k``-th smallest availability), on the *latest-free* ``k``
of the computers free by then (best fit, which keeps earlier-free computers for
later jobs). No job starts before ``t0`` (after its arrival) and no more than ``m``
computers are ever busy, by construction.

Objective: CP of Eq. 1 for the new jobs, with makespan ``F - t0``, idle time
``sum_c (F - avail0[c]) - sum_i size_i e_i(size_i)`` (idle computer-time created in
``[t0, F]``, ``F`` = last finish) and over-deadline ``sum_i max(0, f_i - d_i)``.

GA
--
Population ``pop_size``; individual 0 is the seed schedule (MUSCLE's, or FCFS for
the baselines); half of the others are the seed with a few swaps, half random
orders; sizes start at the preferable size and are perturbed with probability 0.1.
Each generation: tournament selection (``tournament`` = 2: binary), order
crossover (OX) of the orders with probability ``p_crossover`` (each job's size is
taken from either parent), swap mutation of the order and +-1 /
reset-to-preferable mutation of sizes with probability ``p_mutation``, and elitism
of ``elitism`` = 1 schedule (the best carried over unchanged). The best schedule
ever seen is returned, so the result is never worse than the seed whatever the
parameters (:class:`GAOptions`).

Stopping rule (§3: "until the performance in each generation stabilises"): stop
when the generation's best CP has not decreased by more than ``tol * |best|`` for
``patience`` consecutive generations (``status = 0``, converged), or after
``max_gen`` generations (``status = 2``, not converged, reported).

Why not pygad: a simulation runs one GA per cluster per scheduling round (thousands
of short GAs on 10-60 jobs); pygad has no order crossover for permutations and its
per-generation Python overhead exceeds the whole compiled GA
(``benchmarks/bench_muscle.py`` measures both on the same instance).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping

import numpy as np
from numba import njit

from ..errors import ModelError
from ..results import Result, fmt, jsonable
from .metrics import CPWeights

CONVERGED, NOT_CONVERGED, RECHECK_FAILED = 0, 2, 3

__all__ = ["GAOptions", "GAResult", "decode_schedule", "titan_improve"]


@dataclass(frozen=True)
class GAOptions:
    """TITAN's GA parameters (the paper gives none; defaults: ours, see the module docstring).

    ``pop_size`` schedules per generation; at most ``max_gen`` generations;
    stop after ``patience`` generations without an improvement of more than
    ``tol * |best|``; order crossover with probability ``p_crossover``;
    swap and size mutations each with probability ``p_mutation``; parents
    chosen by tournaments of ``tournament`` schedules (1 = uniformly at
    random); the ``elitism`` best schedules carried unchanged into the next
    generation (0 = none: the best schedule ever seen is still returned).
    """

    pop_size: int = 24
    max_gen: int = 100
    patience: int = 15
    tol: float = 1e-9
    p_crossover: float = 0.9
    p_mutation: float = 0.3
    tournament: int = 2
    elitism: int = 1

    def __post_init__(self) -> None:
        if self.pop_size < 2:
            raise ModelError(f"pop_size: must be >= 2, got {self.pop_size}")
        if self.max_gen < 0:
            raise ModelError(f"max_gen: must be >= 0, got {self.max_gen}")
        if self.patience < 1:
            raise ModelError(f"patience: must be >= 1, got {self.patience}")
        if self.tournament < 1:
            raise ModelError(f"tournament: must be >= 1, got {self.tournament}")
        if not 0 <= self.elitism <= self.pop_size:
            raise ModelError(f"elitism: must lie in [0, pop_size={self.pop_size}], got {self.elitism}")
        for name in ("p_crossover", "p_mutation"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ModelError(f"{name}: probability must lie in [0, 1], got {v}")


@dataclass(repr=False)
class GAResult(Result):
    """Like scipy's OptimizeResult: the schedule plus diagnostics (the project's result protocol).

    ``status`` (:attr:`STATUS`): 0 the best CP stabilised (the stopping rule
    met), 2 ``max_gen`` generations reached first (the schedule is still the
    best seen, never worse than the seed), 3 the re-check of the answer failed
    and the seed schedule is returned.
    """

    perm: np.ndarray
    sizes: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    avail: np.ndarray
    cp: float
    seed_cp: float
    generations: int
    status: int
    checked: bool  # the re-check of the answer passed (status 3 otherwise)
    message: str
    trace: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seconds: float = 0.0

    STATUS: ClassVar[Mapping[int, str]] = {
        CONVERGED: "best CP stabilised",
        NOT_CONVERGED: "max_gen reached before the best CP stabilised",
        RECHECK_FAILED: "re-check of the GA answer failed; seed schedule returned",
    }

    def as_dict(self) -> dict[str, Any]:
        return jsonable({"status": int(self.status), "success": self.success, "message": self.message,
                         "seconds": self.seconds, "cp": self.cp, "seed_cp": self.seed_cp,
                         "generations": self.generations, "perm": self.perm, "sizes": self.sizes,
                         "start": self.start, "finish": self.finish, "trace": self.trace})

    def _frame_rows(self) -> Iterable[dict[str, Any]]:
        yield {"measure": "cp", "value": self.cp}
        yield {"measure": "seed_cp", "value": self.seed_cp}
        yield {"measure": "generations", "value": float(self.generations)}

    def _headline(self) -> str:
        return f"CP {fmt(self.cp)} (seed {fmt(self.seed_cp)}) after {self.generations} generations"


# --- compiled kernels -------------------------------------------------------


@njit(cache=True)
def _place(avail, k, dur):
    """Compiled, no checks: best-fit place a k-computer job on sorted ``avail``; returns start."""
    m = avail.shape[0]
    start = avail[k - 1]
    q = k
    while q < m and avail[q] <= start:
        q += 1
    # the k computers q-k..q-1 (latest free by `start`) now finish at f; keep sorted
    f = start + dur
    j = q
    while j < m and avail[j] <= f:
        avail[j - k] = avail[j]
        j += 1
    for i in range(j - k, j):
        avail[i] = f
    return start


@njit(cache=True)
def _decode(avail0, t0, perm, sizes, pref, base_e, deadline, phi, w, work, start_out, finish_out):
    """Compiled, no checks: list-schedule ``perm`` on ``avail0``; writes starts/finishes and
    the final availability into ``work``; returns CP."""
    m = avail0.shape[0]
    for c in range(m):
        work[c] = avail0[c]
    theta = 0.0
    busy = 0.0
    for p in range(perm.shape[0]):
        i = perm[p]
        k = sizes[i]
        dur = base_e[i] * pref[i] / k * (1.0 + abs(k - pref[i]) * phi)
        st = _place(work, k, dur)
        start_out[i] = st
        finish_out[i] = st + dur
        late = st + dur - deadline[i]
        if late > 0.0:
            theta += late
        busy += k * dur
    F = work[m - 1]
    idle = -busy
    for c in range(m):
        idle += F - avail0[c]
    return (w[0] * (F - t0) + w[1] * idle + w[2] * theta) / (w[0] + w[1] + w[2])


@njit(cache=True)
def _mutate_size(s, pref_i, m):
    r = np.random.random()
    if r < 0.25:
        return pref_i
    if r < 0.625:
        return s - 1 if s > 1 else s + 1 if s < m else s
    return s + 1 if s < m else s - 1 if s > 1 else s


@njit(cache=True)
def _select(fit, P, k):
    """Compiled: the fittest of ``k`` schedules drawn uniformly (a tournament; first drawn wins ties)."""
    b = np.random.randint(P)
    for _ in range(1, k):
        c = np.random.randint(P)
        if fit[c] < fit[b]:
            b = c
    return b


@njit(cache=True)
def _ga(avail0, t0, seed_perm, pref, base_e, deadline, phi, w, pop_size, max_gen, patience, tol,
        p_cx, p_mut, tournament, elitism, rseed, best_perm, best_sizes, trace):
    """Compiled GA (see module doc); writes the best chromosome ever seen; returns (cp, seed_cp, gens, status)."""
    np.random.seed(rseed)
    n = seed_perm.shape[0]
    m = avail0.shape[0]
    P = pop_size
    E = elitism
    perms = np.empty((P, n), dtype=np.int64)
    sz = np.empty((P, n), dtype=np.int64)
    nperms = np.empty((P, n), dtype=np.int64)
    nsz = np.empty((P, n), dtype=np.int64)
    fit = np.empty(P)
    efit = np.empty(P)
    work = np.empty(m)
    st = np.empty(n)
    fi = np.empty(n)
    mark = np.zeros(n, dtype=np.bool_)
    for p in range(P):
        for i in range(n):
            perms[p, i] = seed_perm[i]
            sz[p, i] = pref[i]
        if p > 0 and n > 1:
            if p % 2 == 1:
                for _ in range(1 + p // 4):
                    a = np.random.randint(n)
                    b = np.random.randint(n)
                    tmp = perms[p, a]
                    perms[p, a] = perms[p, b]
                    perms[p, b] = tmp
            else:
                for i in range(n - 1, 0, -1):
                    j = np.random.randint(i + 1)
                    tmp = perms[p, i]
                    perms[p, i] = perms[p, j]
                    perms[p, j] = tmp
        if p > 0:
            for i in range(n):
                if np.random.random() < 0.1:
                    sz[p, i] = _mutate_size(sz[p, i], pref[i], m)
        fit[p] = _decode(avail0, t0, perms[p], sz[p], pref, base_e, deadline, phi, w, work, st, fi)
    seed_cp = fit[0]
    best = 0
    for p in range(1, P):
        if fit[p] < fit[best]:
            best = p
    best_val = fit[best]
    for i in range(n):
        best_perm[i] = perms[best, i]
        best_sizes[i] = sz[best, i]
    stall = 0
    gen = 0
    status = 1
    while gen < max_gen:
        gen += 1
        # the E fittest, best first (E = 1: the best, found above), carried over unchanged
        if E == 1:
            for i in range(n):
                nperms[0, i] = perms[best, i]
                nsz[0, i] = sz[best, i]
            efit[0] = fit[best]
        elif E > 1:
            idx = np.argsort(fit, kind="mergesort")
            for e in range(E):
                for i in range(n):
                    nperms[e, i] = perms[idx[e], i]
                    nsz[e, i] = sz[idx[e], i]
                efit[e] = fit[idx[e]]
        for c in range(E, P):
            pa = _select(fit, P, tournament)
            pb = _select(fit, P, tournament)
            if n > 1 and np.random.random() < p_cx:
                # order crossover (OX): slice from pa, the rest in pb's order
                i1 = np.random.randint(n)
                i2 = np.random.randint(n)
                if i1 > i2:
                    i1, i2 = i2, i1
                for i in range(n):
                    mark[i] = False
                for i in range(i1, i2 + 1):
                    nperms[c, i] = perms[pa, i]
                    mark[perms[pa, i]] = True
                pos = (i2 + 1) % n
                for t in range(n):
                    g = perms[pb, (i2 + 1 + t) % n]
                    if not mark[g]:
                        nperms[c, pos] = g
                        pos = (pos + 1) % n
                for i in range(n):
                    nsz[c, i] = sz[pa, i] if np.random.random() < 0.5 else sz[pb, i]
            else:
                for i in range(n):
                    nperms[c, i] = perms[pa, i]
                    nsz[c, i] = sz[pa, i]
            if np.random.random() < p_mut and n > 1:
                a = np.random.randint(n)
                b = np.random.randint(n)
                tmp = nperms[c, a]
                nperms[c, a] = nperms[c, b]
                nperms[c, b] = tmp
            if np.random.random() < p_mut:
                i = np.random.randint(n)
                nsz[c, i] = _mutate_size(nsz[c, i], pref[i], m)
        perms, nperms = nperms, perms
        sz, nsz = nsz, sz
        best = 0
        for p in range(P):
            if p < E:
                fit[p] = efit[p]  # an elite, unchanged
            else:
                fit[p] = _decode(avail0, t0, perms[p], sz[p], pref, base_e, deadline, phi, w, work, st, fi)
            if fit[p] < fit[best]:
                best = p
        if fit[best] < best_val - tol * abs(best_val):
            stall = 0
        else:
            stall += 1
        if fit[best] < best_val:
            best_val = fit[best]
            for i in range(n):
                best_perm[i] = perms[best, i]
                best_sizes[i] = sz[best, i]
        elif E > 0:
            best = 0
        if gen - 1 < trace.shape[0]:
            trace[gen - 1] = best_val
        if stall >= patience:
            status = 0
            break
    return best_val, seed_cp, gen, status


# --- public layer -----------------------------------------------------------


def _arrays(avail0, order, pref, base_e, deadline, m_check=True):
    avail0 = np.sort(np.asarray(avail0, dtype=np.float64))
    order = np.ascontiguousarray(order, dtype=np.int64)
    pref = np.ascontiguousarray(pref, dtype=np.int64)
    base_e = np.ascontiguousarray(base_e, dtype=np.float64)
    deadline = np.ascontiguousarray(deadline, dtype=np.float64)
    n = pref.shape[0]
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise ModelError("order: expected a permutation of the job indices 0..n-1")
    if base_e.shape != (n,) or deadline.shape != (n,):
        raise ModelError("base_e/deadline: expected one value per job")
    if n and (pref.min() < 1 or pref.max() > avail0.shape[0]):
        raise ModelError(f"pref: sizes must lie in [1, m={avail0.shape[0]}]")
    return avail0, order, pref, base_e, deadline


def decode_schedule(avail0, t0, order, sizes, pref, base_e, deadline, *, phi: float = 0.05,
                    weights: CPWeights = CPWeights()):
    """Decode one chromosome: returns ``(cp, start, finish, avail_after)``.

    ``avail0`` are the computers' free times (raised to ``t0``); ``base_e`` the times at
    the preferable sizes ``pref``; ``sizes`` the sizes to run at (Eq. 3)."""
    avail0, order, pref, base_e, deadline = _arrays(avail0, order, pref, base_e, deadline)
    avail0 = np.maximum(avail0, t0)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    if sizes.shape != pref.shape or (sizes.size and (sizes.min() < 1 or sizes.max() > avail0.shape[0])):
        raise ModelError(f"sizes: one size per job in [1, {avail0.shape[0]}] expected")
    n = pref.shape[0]
    st, fi, work = np.empty(n), np.empty(n), np.empty(avail0.shape[0])
    cp = _decode(avail0, float(t0), order, sizes, pref, base_e, deadline, float(phi), weights.as_array(), work, st, fi)
    return float(cp), st, fi, work


def titan_improve(avail0, t0, seed_order, pref, base_e, deadline, *, phi: float = 0.05,
                  weights: CPWeights = CPWeights(), options: GAOptions = GAOptions(),
                  seed: int | np.random.SeedSequence = 0) -> GAResult:
    """Improve the seed schedule ``(seed_order, pref)`` of one cluster by the GA.

    Returns a :class:`GAResult` whose ``cp <= seed_cp`` (elitism; re-checked)."""
    avail0, order, pref, base_e, deadline = _arrays(avail0, seed_order, pref, base_e, deadline)
    avail0 = np.maximum(avail0, t0)
    n, m = pref.shape[0], avail0.shape[0]
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rseed = int(ss.generate_state(1, dtype=np.uint32)[0])
    w = weights.as_array()
    perm, sizes = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    trace = np.zeros(options.max_gen)
    if n == 0:
        return GAResult(perm, sizes, np.empty(0), np.empty(0), avail0.copy(), 0.0, 0.0, 0, CONVERGED, True, "no jobs")
    t_start = time.perf_counter()
    cp, seed_cp, gens, status = _ga(avail0, float(t0), order, pref, base_e, deadline, float(phi), w,
                                    options.pop_size, options.max_gen, options.patience, options.tol,
                                    options.p_crossover, options.p_mutation, options.tournament, options.elitism,
                                    rseed, perm, sizes, trace)
    st, fi, work = np.empty(n), np.empty(n), np.empty(m)
    cp2 = _decode(avail0, float(t0), perm, sizes, pref, base_e, deadline, float(phi), w, work, st, fi)
    status = CONVERGED if status == 0 else NOT_CONVERGED
    message = "best CP stabilised" if status == CONVERGED else f"max_gen={options.max_gen} reached before stabilising"
    checked = bool(abs(cp2 - cp) <= 1e-9 * max(1.0, abs(cp)) and cp <= seed_cp)
    if not checked:  # re-check failed: fall back to the seed, say so
        perm, sizes = order.copy(), pref.copy()
        cp2 = _decode(avail0, float(t0), perm, sizes, pref, base_e, deadline, float(phi), w, work, st, fi)
        message = "re-check of the GA answer failed; seed schedule returned"
        status = RECHECK_FAILED
    return GAResult(perm, sizes, st, fi, work, float(cp2), float(seed_cp), int(gens), int(status), checked,
                    message, trace[:gens], seconds=time.perf_counter() - t_start)
