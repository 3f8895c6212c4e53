r"""Optimal co-allocation across two heterogeneous clusters as a CTMDP.

Source: Filippopoulos and Karatza, *A dynamic programming model of two
heterogeneous clusters with co-allocation of jobs* (``shared/papers/seed-000``),
§2 (model), §3 (uniformization, Bellman equation), §4 (truncation), §5 (tables).

System
------
Cluster 1 has two nodes and an unbounded FCFS queue; cluster 2 has one node and
an unbounded FCFS queue. Jobs arrive to cluster ``i`` as Poisson(``lambda_i``).
A cluster-1 job needs one node with probability ``p``, two nodes with ``1-p``;
cluster-2 jobs need one node. Local service is Exp(``mu_1``) at cluster 1 (for
either size) and Exp(``mu_2``) at cluster 2. A *co-allocated* job (a two-node
job from queue 1 placed on one node of cluster 1 and the node of cluster 2)
takes Exp(``mu_3``) and preempts the cluster-2 job in service, which resumes
where it stopped (preemptive-resume). A job of queue 1 holds cost ``c_1`` per
unit time in the system, a job of queue 2 ``c_2``.

State ``S = (q1, q2, g, x1, x2, x11)``
    ``q1`` jobs waiting in queue 1 (not in service); ``q2`` jobs at cluster 2
    *including* the one in service; ``g`` in {0, 1, 2} nodes needed by the head
    of queue 1 (``g = 0`` iff ``q1 = 0``); ``x1`` one-node jobs and ``x2``
    two-node jobs in local service at cluster 1; ``x11`` in {0, 1} co-allocated
    jobs. Free nodes of cluster 1: ``theta = 2 - x1 - 2 x2 - x11 >= 0``, so
    ``(x1, x2, x11)`` is one of six configurations
    ``(0,0,0) (1,0,0) (2,0,0) (0,1,0) (0,0,1) (1,0,1)``. With truncation
    ``q1, q2 <= Delta`` there are ``6 (Delta+1) (2 Delta+1)`` states (§4).

Actions ``Omega(S)``
    ``{0, 1}`` if ``g = 2``, ``x11 = 0``, ``theta >= 1`` (so ``x2 = 0``,
    ``x1 in {0, 1}``); ``{0}`` otherwise. 1 = co-allocate the head job, 0 = do
    not (start it locally if it fits, else leave it waiting). At most one job
    starts per decision epoch.

Post-decision sets ``Psi_d(S)`` (pairs ``(X, prob)``)
    ``d = 0``: if ``g = 0`` or the head job does not fit (``theta < g``),
    ``{(S, 1)}``. Otherwise the head job starts locally (``x1+1`` if ``g=1``,
    ``x2+1`` if ``g=2``) and the queue advances: ``q1 = 1`` gives
    ``{((0, q2, 0, x1', x2', x11), 1)}``; ``q1 > 1`` gives the next head's size,
    ``{((q1-1, q2, 1, ...), p), ((q1-1, q2, 2, ...), 1-p)}``.
    ``d = 1``: as ``d = 0`` with ``x11 + 1`` instead of a local start.

Rates ``eta(X, Y)`` out of a post-decision state ``X = (q1', q2', g', x1', x2', x11')``
    * arrival to queue 1: ``lambda_1`` to ``q1'+1`` if ``q1' > 0``; if ``q1' = 0``,
      ``lambda_1 p`` to ``(1, q2', 1, ...)`` and ``lambda_1 (1-p)`` to ``(1, q2', 2, ...)``;
    * arrival to queue 2: ``lambda_2`` to ``q2'+1``;
    * completions: ``mu_1 x1'`` (``x1'-1``), ``mu_1 x2'`` (``x2'-1``),
      ``mu_3 x11'`` (``x11'-1``), and ``mu_2`` (``q2'-1``) if ``x11' = 0, q2' > 0``.

    ``r_d(S) = sum_X prob sum_Y eta(X, Y)``. Cost rate ``c1 (q1 + x1 + x2 + x11) + c2 q2``
    (the same in ``S`` and in every ``X``: starting a job moves it, it does not remove it).

Bellman equation (§3, printed), with ``nu = lambda_1 + lambda_2 + 2 mu_1 + mu_2 + mu_3``:

    J(S) = min_d [c(S) + sum_X prob sum_Y eta(X, Y) J(Y) + (nu - r_d(S)) J(S)] / (nu + beta).

As a CTMDP over pre-decision states this is: from ``S`` under ``d`` the rate to
``Y`` is ``sum_X prob eta(X, Y)``. The exit rate does not depend on which ``X``
occurs (``g'`` changes no rate), so this is an exact CTMDP, and ``nu`` does not
change ``J``.

Ambiguities (see ``docs/assumptions.md``) and the options that select them:

* ``self_loop``: ``"pre"`` (default, printed: the fictitious uniformization
  transition returns to ``S`` and so undoes nothing — an exact uniformization) or
  ``"post"`` (it returns to ``X``, which then becomes a new decision epoch: the
  model then depends on ``nu``, and more than one job can start between two real
  events).
* ``boundary``: ``"block"`` (default, the printed truncated state space: an arrival
  to a full queue is lost) or ``"absorb"`` (the transition leaves the truncated
  space and contributes ``J = 0``: the reading of an implementation whose value
  array beyond ``Delta`` holds zeros).
* The printed arrival of a two-node job to an empty queue 1,
  ``(1, q2, 2, x1, x2, x11 + 1)``, is read as the formal ``eta`` list says,
  ``(1, q2', 2, x1', x2', x11')``: the printed ``x11 + 1`` would count the job both
  in the queue and in service and leave the state space (``x11 = 2``).
* ``nu``: the printed bound by default; any ``nu >= max r`` may be given.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from .ctmdp import (
    CTMDP,
    MDPResult,
    build_ctmdp,
    evaluate_policy,
    modified_policy_iteration,
    policy_iteration,
    value_iteration,
)

__all__ = [
    "CoallocParams",
    "CoallocModel",
    "CoallocSolution",
    "CONFIGS",
    "build_coalloc",
    "coalloc_event_model",
    "solve_coalloc",
    "local_policy",
    "heuristic_policy",
    "decision_table",
    "policy_from_table",
    "average_cost",
    "n_states",
    "n_pairs",
    "coalloc_memory_bytes",
]

#: the six server configurations ``(x1, x2, x11)`` with ``x1 + 2 x2 + x11 <= 2``
CONFIGS = np.array([(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1)], dtype=np.int64)

SelfLoop = Literal["pre", "post"]
Boundary = Literal["block", "absorb"]
Method = Literal["gauss-seidel", "jacobi", "policy-iteration", "modified-policy-iteration"]


def n_states(delta: int) -> int:
    """Number of states ``6 (Delta + 1) (2 Delta + 1)`` (§4).

    Derivation: ``(x1, x2, x11)`` takes the six configurations of :data:`CONFIGS`;
    ``q2`` takes ``Delta + 1`` values; ``(q1, g)`` is ``(0, 0)`` or ``q1 = 1..Delta``
    with ``g in {1, 2}``, i.e. ``2 Delta + 1`` values. These are the paper's set
    ``Lambda`` truncated at ``Delta``. All are reachable from the empty system except,
    under ``self_loop="pre"``, ``(0, 0, 0, 1, 0, 1)``, which is then only a
    post-decision state (the tests check both by a breadth-first search of the
    transition rules of :func:`coalloc_event_model`).
    """
    return 6 * (delta + 1) * (2 * delta + 1)


def n_pairs(delta: int) -> int:
    """Number of state-action pairs: every state, plus ``2 Delta (Delta + 1)`` with a choice.

    A choice exists in ``g = 2, x11 = 0, theta >= 1``: ``q1 = 1..Delta``, any ``q2``,
    ``(x1, x2) in {(0, 0), (1, 0)}``.
    """
    return n_states(delta) + 2 * delta * (delta + 1)


def coalloc_memory_bytes(delta: int) -> int:
    """Estimated peak memory (bytes) of building and solving the model at truncation ``delta``.

    Builder: states (48 B), state pointers, per-pair action/cost/kill (24 B) and the
    CSR buffers sized for 18 targets per pair (touched only where used: 6 rates per
    pair on average, 12 B each, counted twice for the trimmed copy). Default solver:
    the value vectors (5 x 8 B per state), the pre-scaled rates (8 B per rate), and
    Anderson's history (2 x 8 x 4 B per state). Used by :func:`build_coalloc` and the
    command line to refuse a ``delta`` that cannot fit before allocating anything.
    """
    if not isinstance(delta, (int, np.integer)) or delta < 1:
        raise ModelError(f"delta: the truncation level must be an integer >= 1, got {delta!r}")
    S, K = n_states(int(delta)), n_pairs(int(delta))
    nnz = 6 * K
    build = 48 * S + 8 * S + 24 * K + 12 * K + 2 * 12 * nnz
    solve = 5 * 8 * S + 8 * nnz + 4 * K + 2 * 8 * 4 * S + 3 * 8 * K
    return int(build + solve)


@dataclass(frozen=True)
class CoallocParams:
    """Parameters of the two-cluster model (§2, §5), validated on construction.

    Build from loads with :meth:`from_loads` (``rho1 = lambda1 m / (2 mu1)``,
    ``rho2 = lambda2 / mu2``, ``m = p + 2 (1 - p)``).
    """

    lam1: float
    lam2: float
    mu1: float = 1.0
    mu2: float = 1.0
    mu3: float = 0.7
    p: float = 0.6
    c1: float = 2.0
    c2: float = 1.0
    beta: float = 0.05
    delta: int = 30
    self_loop: SelfLoop = "pre"
    boundary: Boundary = "block"
    nu: float | None = None

    def __post_init__(self) -> None:
        for name in ("lam1", "lam2", "c1", "c2"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ModelError(f"{name}: must be a finite number >= 0, got {v!r}")
        for name in ("mu1", "mu2", "mu3", "beta"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ModelError(f"{name}: must be a finite number > 0, got {v!r}")
        if not (isinstance(self.p, (int, float)) and 0 <= self.p <= 1):
            raise ModelError(f"p: the probability of a one-node job must lie in [0, 1], got {self.p!r}")
        if not (isinstance(self.delta, (int, np.integer)) and self.delta >= 1):
            raise ModelError(f"delta: the truncation level must be an integer >= 1, got {self.delta!r}")
        if self.self_loop not in ("pre", "post"):
            raise ModelError(f"self_loop: expected 'pre' or 'post', got {self.self_loop!r}")
        if self.boundary not in ("block", "absorb"):
            raise ModelError(f"boundary: expected 'block' or 'absorb', got {self.boundary!r}")
        if self.nu is not None and not (self.nu >= self.max_rate and math.isfinite(self.nu)):
            raise ModelError(
                f"nu: the uniformization rate must be >= lambda1 + lambda2 + max(2 mu1, mu1 + mu3) + mu2 "
                f"= {self.max_rate:.6g}, got {self.nu!r}"
            )

    @classmethod
    def from_loads(
        cls,
        rho: float | None = None,
        rho1: float | None = None,
        rho2: float | None = None,
        *,
        mu1: float = 1.0,
        mu2: float = 1.0,
        p: float = 0.6,
        **kw: Any,
    ) -> "CoallocParams":
        """Parameters from loads (§5): ``rho`` sets both ``rho1`` and ``rho2``."""
        if rho is not None:
            if rho1 is not None or rho2 is not None:
                raise ModelError("rho: give either rho or rho1 and rho2, not both")
            rho1 = rho2 = rho
        if rho1 is None or rho2 is None:
            raise ModelError("rho1, rho2: both loads are needed (or rho for both)")
        for name, v in (("rho1", rho1), ("rho2", rho2)):
            if not (math.isfinite(v) and v >= 0):
                raise ModelError(f"{name}: must be a finite number >= 0, got {v!r}")
        if not 0 <= p <= 1:
            raise ModelError(f"p: the probability of a one-node job must lie in [0, 1], got {p!r}")
        m = p + 2 * (1 - p)
        return cls(lam1=2 * rho1 * mu1 / m, lam2=rho2 * mu2, mu1=mu1, mu2=mu2, p=p, **kw)

    @property
    def m(self) -> float:
        """Mean number of nodes of a cluster-1 job, ``p + 2 (1 - p)``."""
        return self.p + 2 * (1 - self.p)

    @property
    def rho1(self) -> float:
        return self.lam1 * self.m / (2 * self.mu1)

    @property
    def rho2(self) -> float:
        return self.lam2 / self.mu2

    @property
    def rho(self) -> float:
        return 0.5 * (self.rho1 + self.rho2)

    @property
    def max_rate(self) -> float:
        """Largest exit rate of any state: ``lambda1 + lambda2 + max(2 mu1, mu1 + mu3) + mu2``."""
        return self.lam1 + self.lam2 + max(2 * self.mu1, self.mu1 + self.mu3) + self.mu2

    @property
    def nu_used(self) -> float:
        """Uniformization rate: ``nu`` or the printed bound ``lambda1 + lambda2 + 2 mu1 + mu2 + mu3`` (§3)."""
        if self.nu is not None:
            return float(self.nu)
        return self.lam1 + self.lam2 + 2 * self.mu1 + self.mu2 + self.mu3

    def overload_reason(self) -> str | None:
        """Why the *untruncated* system is unstable under every policy, or ``None`` if no bound proves it.

        The truncated model always has an optimal policy; when this is not ``None``,
        that policy only describes a system that blocks arrivals at ``Delta``. The
        bounds (work conservation: ``rho2 < 1``, and the fluid bound on what cluster 1
        can carry when co-allocating as much as cluster 2 allows) are those of
        :func:`hetsched.mdp.stability.coalloc_stability`.
        """
        from .stability import coalloc_stability

        st = coalloc_stability(self)
        return st["message"].removeprefix("unstable under every policy: ").split("; the policy")[0] \
            if st["stable"] is False else None

    def with_(self, **kw: Any) -> "CoallocParams":
        return replace(self, **kw)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(rho1=self.rho1, rho2=self.rho2, rho=self.rho, m=self.m, nu_used=self.nu_used)
        return d


# --------------------------------------------------------------------------- indexing


def _state_index(delta: int, q1, q2, g, cfg):
    """Index of ``(q1, q2, g, cfg)``: level ``0`` for ``q1 = 0``, ``2 (q1-1) + g`` for ``q1 >= 1``."""
    level = np.where(np.asarray(q1) == 0, 0, 2 * (np.asarray(q1) - 1) + np.asarray(g))
    return (level * (delta + 1) + q2) * 6 + cfg


def _make_cfg_lut() -> np.ndarray:
    lut = np.full((3, 2, 2), -1, dtype=np.int64)
    for i, (a, b, c) in enumerate(CONFIGS):
        lut[a, b, c] = i
    return lut


#: ``_CFG_LUT[x1, x2, x11]`` = index in :data:`CONFIGS` (-1 for an invalid triple)
_CFG_LUT = _make_cfg_lut()


def _cfg_of(x1, x2, x11):
    # x1 + 2 x2 + x11 <= 2 with the CONFIGS order; -1 for an invalid triple
    return _CFG_LUT[np.asarray(x1), np.asarray(x2), np.asarray(x11)]


# --------------------------------------------------------------------------- the compiled builder

try:  # numba is a hard dependency; the fallback keeps a NUMBA_DISABLE_JIT-style run simple
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*args: Any, **kwargs: Any) -> Any:
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

#: most distinct targets of one state-action pair: 2 post-decision branches x (8 events + 1 self-loop)
_ROW_MAX = 18


@njit(cache=True, inline="always")
def _sidx(D, q1, q2, g, cfg):
    # index of (q1, q2, g, cfg): level 0 for q1 = 0, 2 (q1-1) + g for q1 >= 1 (as _state_index)
    level = 0 if q1 == 0 else 2 * (q1 - 1) + g
    return (level * (D + 1) + q2) * 6 + cfg


@njit(cache=True, inline="always")
def _add(bc, bv, n, j, w):
    # accumulate rate w to target j in the row buffer (at most _ROW_MAX distinct targets)
    for t in range(n):
        if bc[t] == j:
            bv[t] += w
            return n
    bc[n] = j
    bv[n] = w
    return n + 1


@njit(cache=True)
def _coalloc_kernel(D, lam1, lam2, mu1, mu2, mu3, p, c1, c2, nu, post, absorb,
                    cfgs, lut, states, state_ptr, sa_action, cost, kill, indptr, indices, data):
    """Compiled, no checks: enumerate every state and pair of the model into the given arrays.

    Writes ``states`` (S, 6), ``state_ptr`` (S+1), per-pair ``sa_action``, ``cost``, ``kill``,
    and the CSR rows ``indptr``/``indices``/``data`` (targets sorted, duplicates merged, the
    pair's own state dropped; ``indices``/``data`` sized for ``_ROW_MAX`` per pair).
    Returns the number of non-zeros.
    """
    bc = np.empty(_ROW_MAX, np.int64)
    bv = np.empty(_ROW_MAX, np.float64)
    s = 0
    k = 0
    nnz = 0
    indptr[0] = 0
    state_ptr[0] = 0
    for level in range(2 * D + 1):
        q1 = 0 if level == 0 else 1 + (level - 1) // 2
        g = 0 if level == 0 else 1 + (level - 1) % 2
        for q2 in range(D + 1):
            for cfg in range(6):
                x1, x2, x11 = cfgs[cfg, 0], cfgs[cfg, 1], cfgs[cfg, 2]
                states[s, 0] = q1
                states[s, 1] = q2
                states[s, 2] = g
                states[s, 3] = x1
                states[s, 4] = x2
                states[s, 5] = x11
                theta = 2 - x1 - 2 * x2 - x11
                n_act = 2 if (g == 2 and x11 == 0 and theta >= 1) else 1
                c = c1 * (q1 + x1 + x2 + x11) + c2 * q2
                for d in range(n_act):
                    # post-decision branches Psi_d(S): (g', prob) with the moved job's configuration
                    moves = d == 1 or (g > 0 and theta >= g)
                    nx1, nx2, nx11, nq1 = x1, x2, x11, q1
                    if moves:
                        nq1 = q1 - 1
                        if d == 1:
                            nx11 = x11 + 1
                        elif g == 1:
                            nx1 = x1 + 1
                        else:
                            nx2 = x2 + 1
                    n = 0
                    kl = 0.0
                    for branch in range(2):
                        if not moves:
                            if branch == 1:
                                break
                            gX, prob = g, 1.0
                        elif nq1 == 0:
                            if branch == 1:
                                break
                            gX, prob = 0, 1.0
                        else:
                            gX, prob = (1, p) if branch == 0 else (2, 1.0 - p)
                        if prob <= 0.0:
                            continue
                        cX = lut[nx1, nx2, nx11]
                        total = 0.0
                        # arrival to queue 1
                        if nq1 == 0:
                            w = prob * lam1 * p
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, 1, q2, 1, cX), w)
                            w = prob * lam1 * (1.0 - p)
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, 1, q2, 2, cX), w)
                            total += lam1
                        elif nq1 < D:
                            w = prob * lam1
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, nq1 + 1, q2, gX, cX), w)
                            total += lam1
                        elif absorb:
                            kl += prob * lam1
                            total += lam1
                        # arrival to queue 2
                        if q2 < D:
                            w = prob * lam2
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, nq1, q2 + 1, gX, cX), w)
                            total += lam2
                        elif absorb:
                            kl += prob * lam2
                            total += lam2
                        # completions
                        if nx1 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, lut[nx1 - 1, nx2, nx11]), prob * (mu1 * nx1))
                            total += mu1 * nx1
                        if nx2 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, lut[nx1, nx2 - 1, nx11]), prob * (mu1 * nx2))
                            total += mu1 * nx2
                        if nx11 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, lut[nx1, nx2, nx11 - 1]), prob * (mu3 * nx11))
                            total += mu3 * nx11
                        elif q2 > 0:
                            n = _add(bc, bv, n, _sidx(D, nq1, q2 - 1, gX, cX), prob * mu2)
                            total += mu2
                        if post:  # the fictitious transition of rate nu - r(X) returns to X
                            w = prob * (nu - total)
                            if w > 0.0:
                                n = _add(bc, bv, n, _sidx(D, nq1, q2, gX, cX), w)
                    # one CSR row: drop the state itself (a self-rate changes nothing), sort targets
                    for a in range(1, n):
                        jc, jv = bc[a], bv[a]
                        b = a - 1
                        while b >= 0 and bc[b] > jc:
                            bc[b + 1] = bc[b]
                            bv[b + 1] = bv[b]
                            b -= 1
                        bc[b + 1] = jc
                        bv[b + 1] = jv
                    for a in range(n):
                        if bc[a] != s and bv[a] > 0.0:
                            indices[nnz] = bc[a]
                            data[nnz] = bv[a]
                            nnz += 1
                    sa_action[k] = d
                    cost[k] = c
                    kill[k] = kl
                    k += 1
                    indptr[k] = nnz
                s += 1
                state_ptr[s] = k
    return nnz


# --------------------------------------------------------------------------- the model


@dataclass(eq=False)
class CoallocModel:
    """The truncated two-cluster CTMDP and its state encoding."""

    params: CoallocParams
    ctmdp: CTMDP
    states: np.ndarray  # (S, 6): q1, q2, g, x1, x2, x11
    build_seconds: float = 0.0

    @property
    def delta(self) -> int:
        return self.params.delta

    def index(self, q1: Any, q2: Any, g: Any, x1: Any, x2: Any, x11: Any) -> np.ndarray:
        """State index of ``(q1, q2, g, x1, x2, x11)`` (vectorized)."""
        cfg = _cfg_of(x1, x2, x11)
        return _state_index(self.delta, q1, q2, g, cfg)

    def table_states(self, x1: int) -> np.ndarray:
        """Indices ``(Delta, Delta+1)`` of ``(q1, q2, 2, x1, 0, 0)``, ``q1 = 1..Delta``, ``q2 = 0..Delta``."""
        D = self.delta
        q1, q2 = np.meshgrid(np.arange(1, D + 1), np.arange(D + 1), indexing="ij")
        return self.index(q1, q2, 2, x1, 0, 0)


_BUILDER_LOADED = False


def _warm_builder() -> None:
    """Load the compiled builder (numba cache) once per process, so build times exclude it."""
    global _BUILDER_LOADED
    if not _BUILDER_LOADED:
        S, K = n_states(1), n_pairs(1)
        _coalloc_kernel(1, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 10.0, False, False, CONFIGS, _CFG_LUT,
                        np.empty((S, 6), np.int64), np.empty(S + 1, np.int64), np.empty(K, np.int64),
                        np.empty(K), np.empty(K), np.empty(K + 1, np.int32), np.empty(_ROW_MAX * K, np.int32),
                        np.empty(_ROW_MAX * K))
        _BUILDER_LOADED = True


def build_coalloc(params: CoallocParams, *, check_memory: bool = True) -> CoallocModel:
    """Build the truncated CTMDP of §2-§3 with a compiled builder (Delta = 200 in about 0.05 s).

    One numba pass enumerates the states in index order and writes the CSR rows of
    every state-action pair directly (rates of ``Psi_d`` and ``eta`` as in the module
    docstring; duplicate targets merged, the pair's own state dropped). The
    line-by-line reference :func:`coalloc_event_model` is checked against it in the
    tests. With ``check_memory`` the model is refused (``ModelError``) before anything
    is allocated when :func:`coalloc_memory_bytes` exceeds the available memory.
    """
    D = params.delta
    if check_memory:
        from .._memory import ensure_fits

        ensure_fits(f"mdp coalloc: delta = {D}", coalloc_memory_bytes(D))
    _warm_builder()
    t0 = time.perf_counter()
    S = n_states(D)
    K = n_pairs(D)
    states = np.empty((S, 6), dtype=np.int64)
    state_ptr = np.empty(S + 1, dtype=np.int64)
    sa_action = np.empty(K, dtype=np.int64)
    cost = np.empty(K)
    kill = np.empty(K)
    idx_t = np.int32 if S < 2**31 - 1 and _ROW_MAX * K < 2**31 - 1 else np.int64
    indptr = np.empty(K + 1, dtype=idx_t)
    indices = np.empty(_ROW_MAX * K, dtype=idx_t)  # untouched pages of the slack cost nothing
    data = np.empty(_ROW_MAX * K)
    nnz = _coalloc_kernel(D, params.lam1, params.lam2, params.mu1, params.mu2, params.mu3, params.p,
                          params.c1, params.c2, params.nu_used, params.self_loop == "post",
                          params.boundary == "absorb", CONFIGS, _CFG_LUT, states, state_ptr, sa_action,
                          cost, kill, indptr, indices, data)
    # views of the buffers, no copy: their untouched tail pages are never resident
    R = sp.csr_matrix((data[:nnz], indices[:nnz], indptr), shape=(K, S), copy=False)
    R.has_sorted_indices = True
    model = CTMDP(S, 2, state_ptr, sa_action, R, cost, kill)
    return CoallocModel(params, model, states, time.perf_counter() - t0)


def coalloc_event_model(params: CoallocParams, initial: tuple | None = None) -> CTMDP:
    """The same model enumerated from a per-state Python description (reference; small Delta).

    Written line by line from §2 with :func:`~hetsched.mdp.ctmdp.build_ctmdp`;
    ``labels`` are the state tuples. Tests check it equals :func:`build_coalloc`.
    """
    D, p, nu = params.delta, params.p, params.nu_used

    def actions(s: tuple) -> list[int]:
        q1, q2, g, x1, x2, x11 = s
        theta = 2 - x1 - 2 * x2 - x11
        return [0, 1] if (g == 2 and x11 == 0 and theta >= 1) else [0]

    def psi(s: tuple, d: int) -> list[tuple[tuple, float]]:
        q1, q2, g, x1, x2, x11 = s
        theta = 2 - x1 - 2 * x2 - x11
        if d == 0:
            if g == 0 or theta < g:  # nothing waits, or the head job does not fit
                return [(s, 1.0)]
            x1, x2 = (x1 + 1, x2) if g == 1 else (x1, x2 + 1)
        else:
            x11 += 1
        if q1 == 1:
            return [((0, q2, 0, x1, x2, x11), 1.0)]
        return [((q1 - 1, q2, 1, x1, x2, x11), p), ((q1 - 1, q2, 2, x1, x2, x11), 1 - p)]

    def eta(X: tuple) -> list[tuple[float, tuple | None]]:
        q1, q2, g, x1, x2, x11 = X
        out: list[tuple[float, tuple | None]] = []
        if q1 >= D:
            out += [(params.lam1, None)] if params.boundary == "absorb" else []
        elif q1 > 0:
            out.append((params.lam1, (q1 + 1, q2, g, x1, x2, x11)))
        else:
            out.append((params.lam1 * p, (1, q2, 1, x1, x2, x11)))
            out.append((params.lam1 * (1 - p), (1, q2, 2, x1, x2, x11)))
        if q2 >= D:
            out += [(params.lam2, None)] if params.boundary == "absorb" else []
        else:
            out.append((params.lam2, (q1, q2 + 1, g, x1, x2, x11)))
        out.append((params.mu1 * x1, (q1, q2, g, x1 - 1, x2, x11)))
        out.append((params.mu1 * x2, (q1, q2, g, x1, x2 - 1, x11)))
        out.append((params.mu3 * x11, (q1, q2, g, x1, x2, x11 - 1)))
        if x11 == 0 and q2 > 0:
            out.append((params.mu2, (q1, q2 - 1, g, x1, x2, x11)))
        return out

    def events(s: tuple, d: int):
        for X, prob in psi(s, d):
            if prob == 0:
                continue
            ev = eta(X)
            for rate, Y in ev:
                yield prob * rate, Y
            if params.self_loop == "post":
                yield prob * (nu - sum(r for r, _ in ev)), X

    def cost(s: tuple, d: int) -> float:
        q1, q2, g, x1, x2, x11 = s
        return params.c1 * (q1 + x1 + x2 + x11) + params.c2 * q2

    return build_ctmdp([initial or (0, 0, 0, 0, 0, 0)], actions, events, cost)


# --------------------------------------------------------------------------- policies


def local_policy(model: CoallocModel) -> np.ndarray:
    """Never co-allocate (action 0 in every state)."""
    return np.zeros(model.ctmdp.n_states, dtype=np.int64)


def heuristic_policy(model: CoallocModel) -> np.ndarray:
    """§6 heuristic: co-allocate iff ``p c1 q1 > c2 q2`` and ``x1 = 1`` (where admissible)."""
    prm = model.params
    q1, q2, g, x1, x2, x11 = model.states.T
    adm = (g == 2) & (x11 == 0) & (2 - x1 - 2 * x2 - x11 >= 1)
    return (adm & (x1 == 1) & (prm.p * prm.c1 * q1 > prm.c2 * q2)).astype(np.int64)


def decision_table(model: CoallocModel, policy: np.ndarray) -> np.ndarray:
    """``(2, Delta+1, Delta+1)`` int8 table ``[x1, q1, q2]`` of the action in ``(q1, q2, 2, x1, 0, 0)``.

    These are the only states with a choice; row ``q1 = 0`` is unused (0). The
    simulator reads this table (clamping ``q1, q2`` at ``Delta``).
    """
    D = model.delta
    out = np.zeros((2, D + 1, D + 1), dtype=np.int8)
    for x1 in (0, 1):
        out[x1, 1:, :] = np.asarray(policy)[model.table_states(x1)]
    return out


def policy_from_table(model: CoallocModel, table: np.ndarray) -> np.ndarray:
    """Inverse of :func:`decision_table`: a full policy from a ``[x1, q1, q2]`` table."""
    pol = np.zeros(model.ctmdp.n_states, dtype=np.int64)
    for x1 in (0, 1):
        pol[model.table_states(x1)] = np.asarray(table)[x1, 1:, :]
    return pol


def average_cost(model: CoallocModel, policy: np.ndarray) -> dict[str, Any]:
    """Exact long-run average cost of ``policy`` on the truncated chain (``pi Q = 0``).

    Returns the gain and the truncation mass ``P(q1 = Delta or q2 = Delta)`` (how much
    the truncation can matter).
    """
    ev = evaluate_policy(model.ctmdp, policy)
    q1, q2 = model.states[:, 0], model.states[:, 1]
    edge = float(ev["pi"][(q1 == model.delta) | (q2 == model.delta)].sum())
    return {"gain": ev["gain"], "pi": ev["pi"], "boundary_mass": edge}


# --------------------------------------------------------------------------- solving


@dataclass
class CoallocSolution:
    """Optimal policy of the model, its tables and margins (§5 figures)."""

    model: CoallocModel
    result: MDPResult
    tables: dict[str, np.ndarray]  # "x1=0", "x1=1": (Delta, Delta+1) int, rows q1=1..Delta
    margins: dict[str, np.ndarray]  # relative (Q0 - Q1) / Q0: > 0 co-allocation is cheaper
    certified: dict[str, np.ndarray]  # |Q0 - Q1| exceeds the error bound
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def policy(self) -> np.ndarray:
        return self.result.policy

    def near_ties(self, threshold: float = 0.005) -> dict[str, list[tuple[int, int, float]]]:
        """Cells ``(q1, q2, margin)`` with ``|margin| < threshold`` (default 0.5 %)."""
        out = {}
        for key, m in self.margins.items():
            i, j = np.nonzero(np.abs(m) < threshold)
            out[key] = [(int(a) + 1, int(b), float(m[a, b])) for a, b in zip(i, j)]
        return out

    def as_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "states": self.model.ctmdp.n_states,
            "iterations": r.iterations,
            "seconds": self.seconds,
            "method": r.method,
            "success": r.success,
            "status": r.status,
            "message": r.message,
            "error_bound": r.error_bound,
            "params": self.model.params.as_dict(),
            "tables": {k: v.tolist() for k, v in self.tables.items()},
            "margins": {k: np.round(v, 6).tolist() for k, v in self.margins.items()},
            "certified": {k: v.tolist() for k, v in self.certified.items()},
            "near_ties": {k: [list(t) for t in v] for k, v in self.near_ties().items()},
            "build_seconds": self.model.build_seconds,
            "overload": self.model.params.overload_reason(),
        }


def _ct_q(model: CTMDP, v: np.ndarray, beta: float) -> np.ndarray:
    """CTMDP Q-values ``(c + R v) / (beta + q)``: cost of acting once, then following ``v``."""
    return (model.cost + model.R @ v) / (beta + model.out)


def solve_coalloc(
    params: CoallocParams | CoallocModel,
    method: Method = "gauss-seidel",
    eps: float | None = None,
    max_iter: int | None = None,
) -> CoallocSolution:
    """Optimal co-allocation policy (discounted, §3) with its §5 tables and margins.

    ``method``: ``"gauss-seidel"`` (default; compiled), ``"jacobi"`` (the paper's
    successive approximation), ``"policy-iteration"`` or
    ``"modified-policy-iteration"``. Every method stops on the same certificate
    (see :mod:`hetsched.mdp.ctmdp`).
    """
    from .ctmdp import _warm_kernels

    # load the compiled kernels first (numba cache, ~0.3 s once per process): not solver time
    _warm_kernels("mpi" if method == "modified-policy-iteration" else "vi")
    t0 = time.perf_counter()
    model = params if isinstance(params, CoallocModel) else build_coalloc(params)
    prm = model.params
    c = model.ctmdp
    nu = prm.nu_used
    kw: dict[str, Any] = {"eps": eps, "nu": nu}
    if max_iter is not None:
        kw["max_iter"] = max_iter
    if method == "gauss-seidel":
        res = value_iteration(c, prm.beta, method="gauss-seidel", **kw)
    elif method == "jacobi":
        res = value_iteration(c, prm.beta, method="jacobi", **kw)
    elif method == "policy-iteration":
        res = policy_iteration(c, prm.beta, **kw)
    elif method == "modified-policy-iteration":
        res = modified_policy_iteration(c, prm.beta, **kw)
    else:
        raise ModelError(
            f"method: expected gauss-seidel, jacobi, policy-iteration or modified-policy-iteration, got {method!r}"
        )
    q = _ct_q(c, res.values, prm.beta)
    pair = np.full((c.n_states, 2), -1, dtype=np.int64)
    pair[c.sa_state, c.sa_action] = np.arange(c.n_pairs)
    tables, margins, certified = {}, {}, {}
    for x1 in (0, 1):
        idx = model.table_states(x1)
        k0, k1 = pair[idx, 0], pair[idx, 1]
        q0, q1 = q[k0], q[k1]
        key = f"x1={x1}"
        tables[key] = res.policy[idx].astype(np.int64)
        margins[key] = (q0 - q1) / np.maximum(np.abs(q0), 1e-300)
        certified[key] = np.abs(q0 - q1) > res.error_bound
    return CoallocSolution(model, res, tables, margins, certified, time.perf_counter() - t0)
