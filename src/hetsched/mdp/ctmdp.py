"""General finite continuous-time Markov decision processes (CTMDPs).

A CTMDP is a finite set of states ``0..S-1``; in each state ``s`` a non-empty set
of admissible actions; for each admissible state-action pair ``(s, a)`` a cost
*rate* ``c(s, a)`` and transition *rates* ``q(s, a, j)`` to states ``j != s``
(a rate to ``s`` itself changes nothing and is dropped), and optionally a *killing
rate* ``k(s, a)`` at which the process stops at no further cost. The total exit
rate is ``q(s, a) = sum_j q(s, a, j) + k(s, a)``.

Representation
--------------
The model is stored by *state-action pairs* (as in QuantEcon's ``DiscreteDP``):
pair ``k`` belongs to state ``sa_state[k]`` and has action label ``sa_action[k]``;
pairs are sorted by state, ``state_ptr[s]:state_ptr[s+1]`` are the pairs of
``s``; ``R`` is a CSR matrix of shape ``(n_pairs, S)`` whose row ``k`` holds the
rates ``q(s, a, .)``. Every operator below is one sparse product over all pairs
(no Python loop over states) or a compiled numba sweep.

Criteria and algorithms
-----------------------
*Discounted* cost ``E int_0^inf exp(-beta t) c(x_t, u_t) dt``. Uniformization
with a constant ``nu >= max q(s, a)`` (Bertsekas 1987, pp. 275-280; paper §3)
turns it into a discrete-time problem with discount ``alpha = nu / (nu + beta)``,
stage cost ``c / (nu + beta)`` and transition matrix ``P = I + Q / nu``; its
Bellman operator is

    (T v)(s) = min_a [c(s,a) + sum_j q(s,a,j) v(j) + (nu - q(s,a)) v(s)] / (nu + beta).

* :func:`value_iteration` — successive approximation (Jacobi = the paper's
  method, or Gauss-Seidel sweeps compiled with numba, where each state's own
  self-loop is solved exactly, ``v(s) = min_a (c + sum_j q v_j) / (beta + q(s,a))``).
  **Stopping rule** (MacQueen 1966; Porteus 1971; Puterman 1994, §6.6.3, Thm
  6.6.6): with ``w = T v - v``, ``m = min w``, ``M = max w``,

      T v + alpha m / (1 - alpha)  <=  J*  <=  T v + alpha M / (1 - alpha),

  and a policy greedy for ``v`` has ``J_pi - J* <= alpha sp(w) / (1 - alpha)``.
  Iteration stops once ``alpha sp(w) / (1 - alpha) < eps``: the policy returned
  is then *certified* ``eps``-optimal in every state. Reaching ``max_iter`` first
  is reported (``success=False``, ``status=1``), never silent.
  The default (Gauss-Seidel) path is compiled end to end: a symmetric sweep is two
  numba passes over the CSR rows of the pairs, pre-divided by ``beta + q(s, a)`` so a
  sweep has no division; type-II Anderson mixing (Walker and Ni 2011) is one
  compiled pass with a single-precision history; the stopping rule is a compiled
  pass computing ``min w`` and ``max w`` from the model's own (unscaled, double)
  arrays, and a pass is confirmed by the full certificate :func:`_certify` before
  the solver stops. Acceleration and scaling move only the iterates; the
  certificate is always evaluated on ``T v`` of the returned iterate.
* :func:`policy_iteration` — Howard's algorithm; each policy is evaluated
  exactly by a sparse LU solve of ``(beta I - Q_pi) v = c_pi``; it ends when no
  action improves by more than a relative ``1e-12`` and is certified with the
  same bound.
* :func:`modified_policy_iteration` — policy improvement steps separated by
  ``m`` Gauss-Seidel evaluation sweeps of the current policy (Puterman 1994,
  §6.5; Gauss-Seidel variant §6.3.3); same stopping rule.

*Long-run average* cost (unichain models):

* :func:`relative_value_iteration` — uniformized with ``nu = max q / (1 - tau)``
  (a self-loop of probability at least ``tau`` in every state makes the chain
  aperiodic). With ``w = T h - h``: ``nu min w <= g* <= nu max w`` (Odoni 1969;
  Puterman 1994, Thm 8.5.5 and §8.5.5); stops when ``nu sp(w) < eps``.
* :func:`average_policy_iteration` — solves ``Q_pi h = g 1 - c_pi``, ``h(ref)=0``.
* :func:`evaluate_policy` / :func:`stationary_distribution` — the cost of a fixed
  policy from the CTMC it induces (discounted values, or gain via ``pi Q = 0``).

Interchange with pymdptoolbox: :func:`to_mdptoolbox` returns ``(P, R, discount)``
with ``P[a]`` an ``S x S`` sparse stochastic matrix and ``R`` of shape ``S x A``
(rewards: the *negative* stage cost, because pymdptoolbox maximizes), and
:func:`from_mdptoolbox` reads that convention back (a discrete-time MDP with
discount ``alpha`` equals the CTMDP with rates ``P``, cost rate ``-R/alpha`` and
``beta = (1 - alpha)/alpha``).
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Literal, Sequence

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ModelError, SolverError

__all__ = [
    "CTMDP",
    "MDPResult",
    "build_ctmdp",
    "value_iteration",
    "policy_iteration",
    "modified_policy_iteration",
    "relative_value_iteration",
    "average_policy_iteration",
    "evaluate_policy",
    "stationary_distribution",
    "q_values",
    "to_mdptoolbox",
    "from_mdptoolbox",
]


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, eq=False)
class CTMDP:
    """A finite CTMDP stored by state-action pairs (see the module docstring).

    Use :meth:`from_pairs`, :meth:`from_actions` or :func:`build_ctmdp` rather
    than the constructor; they validate and sort.
    """

    n_states: int
    n_actions: int
    state_ptr: np.ndarray  # (S+1,) int64
    sa_action: np.ndarray  # (K,) int64
    R: sp.csr_matrix  # (K, S) off-diagonal rates
    cost: np.ndarray  # (K,) cost rates
    kill: np.ndarray  # (K,) killing rates
    labels: Sequence[Hashable] | None = None
    out: np.ndarray = field(init=False)  # (K,) total exit rates
    sa_state: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        out = np.asarray(self.R.sum(axis=1)).ravel() + self.kill
        object.__setattr__(self, "out", out)
        sa_state = np.repeat(np.arange(self.n_states, dtype=np.int64), np.diff(self.state_ptr))
        object.__setattr__(self, "sa_state", sa_state)

    # ---------------------------------------------------------------- builders
    @classmethod
    def from_pairs(
        cls,
        sa_state: Sequence[int] | np.ndarray,
        sa_action: Sequence[int] | np.ndarray,
        R: Any,
        cost: Sequence[float] | np.ndarray,
        n_states: int | None = None,
        kill: Sequence[float] | np.ndarray | None = None,
        labels: Sequence[Hashable] | None = None,
    ) -> "CTMDP":
        """Build from state-action pairs (any order); ``R`` has one row per pair."""
        sa_state = np.asarray(sa_state, dtype=np.int64)
        sa_action = np.asarray(sa_action, dtype=np.int64)
        cost = np.asarray(cost, dtype=float)
        K = sa_state.size
        R = R.astype(float) if sp.issparse(R) and R.format == "coo" else sp.coo_matrix(sp.csr_matrix(R, dtype=float))
        S = int(n_states if n_states is not None else R.shape[1])
        kill = np.zeros(K) if kill is None else np.asarray(kill, dtype=float)
        for name, arr in (("sa_action", sa_action), ("cost", cost), ("kill", kill)):
            if arr.shape != (K,):
                raise ModelError(f"{name}: expected shape ({K},) (one per state-action pair), got {arr.shape}")
        if R.shape != (K, S):
            raise ModelError(f"R: expected shape ({K}, {S}) (pairs x states), got {R.shape}")
        if K and (sa_state.min() < 0 or sa_state.max() >= S):
            raise ModelError(f"sa_state: values must lie in 0..{S - 1}")
        if K and sa_action.min() < 0:
            raise ModelError("sa_action: action labels must be >= 0")
        if not np.all(np.isfinite(cost)):
            raise ModelError("cost: cost rates must be finite")
        if kill.size and (kill.min() < 0 or not np.all(np.isfinite(kill))):
            raise ModelError("kill: killing rates must be finite and >= 0")
        if R.nnz and (R.data.min() < 0 or not np.all(np.isfinite(R.data))):
            bad = R.data[(R.data < 0) | ~np.isfinite(R.data)][0]
            raise ModelError(f"R: transition rates must be finite and >= 0, got {bad}")
        counts = np.bincount(sa_state, minlength=S)
        if S and counts.min() == 0:
            raise ModelError(f"state {int(np.argmin(counts))} has no admissible action")
        order = np.lexsort((sa_action, sa_state))
        sa_state, sa_action, cost, kill = sa_state[order], sa_action[order], cost[order], kill[order]
        if K > 1 and np.any((np.diff(sa_state) == 0) & (np.diff(sa_action) == 0)):
            raise ModelError("sa_action: an action is listed twice for one state")
        inv = np.empty(K, dtype=np.int64)
        inv[order] = np.arange(K)
        rows = inv[R.row]  # one conversion: reorder the COO rows, drop self-rates, build CSR
        keep = R.col != sa_state[rows]  # a rate to the state itself changes nothing
        R = sp.csr_matrix((R.data[keep], (rows[keep], R.col[keep])), shape=(K, S))
        R.sum_duplicates()
        R.eliminate_zeros()
        state_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        n_actions = int(sa_action.max()) + 1 if K else 0
        return cls(S, n_actions, state_ptr, sa_action, R, cost, kill, labels)

    @classmethod
    def from_actions(
        cls,
        rates: Sequence[Any],
        cost: np.ndarray,
        admissible: np.ndarray | None = None,
        labels: Sequence[Hashable] | None = None,
    ) -> "CTMDP":
        """Build from one ``S x S`` rate matrix per action and an ``S x A`` cost-rate array.

        ``admissible`` (``S x A`` bool, default all) marks the admissible pairs.
        """
        A = len(rates)
        if A == 0:
            raise ModelError("rates: need at least one action")
        mats = [sp.csr_matrix(r, dtype=float) for r in rates]
        S = mats[0].shape[0]
        for a, m in enumerate(mats):
            if m.shape != (S, S):
                raise ModelError(f"rates[{a}]: expected shape ({S}, {S}), got {m.shape}")
        cost = np.asarray(cost, dtype=float)
        if cost.shape != (S, A):
            raise ModelError(f"cost: expected shape ({S}, {A}) (states x actions), got {cost.shape}")
        adm = np.ones((S, A), bool) if admissible is None else np.asarray(admissible, bool)
        if adm.shape != (S, A):
            raise ModelError(f"admissible: expected shape ({S}, {A}), got {adm.shape}")
        s_idx, a_idx = np.nonzero(adm)  # row-major: sorted by state, then action
        R = sp.vstack(mats, format="csr")[a_idx * S + s_idx]
        return cls.from_pairs(s_idx, a_idx, R, cost[s_idx, a_idx], S, labels=labels)

    # ---------------------------------------------------------------- helpers
    @property
    def n_pairs(self) -> int:
        return int(self.sa_action.size)

    @property
    def max_rate(self) -> float:
        return float(self.out.max()) if self.out.size else 0.0

    def admissible(self) -> np.ndarray:
        """``S x A`` boolean mask of admissible pairs."""
        m = np.zeros((self.n_states, self.n_actions), bool)
        m[self.sa_state, self.sa_action] = True
        return m

    def pair_index(self, policy: np.ndarray) -> np.ndarray:
        """Pair index chosen by ``policy`` (action label per state) in each state."""
        policy = np.asarray(policy, dtype=np.int64)
        if policy.shape != (self.n_states,):
            raise ModelError(f"policy: expected shape ({self.n_states},), got {policy.shape}")
        table = np.full((self.n_states, self.n_actions), -1, dtype=np.int64)
        table[self.sa_state, self.sa_action] = np.arange(self.n_pairs)
        if policy.min() < 0 or policy.max() >= self.n_actions:
            raise ModelError(f"policy: action labels must lie in 0..{self.n_actions - 1}")
        k = table[np.arange(self.n_states), policy]
        if np.any(k < 0):
            s = int(np.nonzero(k < 0)[0][0])
            raise ModelError(f"policy: action {int(policy[s])} is not admissible in state {s}")
        return k

    def generator(self, policy: np.ndarray) -> sp.csr_matrix:
        """The CTMC generator ``Q_pi`` (S x S, rows sum to ``-kill``) of a stationary policy."""
        k = self.pair_index(policy)
        Rp = self.R[k]
        return (Rp - sp.diags(self.out[k])).tocsr()

    def __repr__(self) -> str:
        return f"CTMDP(states={self.n_states}, actions={self.n_actions}, pairs={self.n_pairs}, nnz={self.R.nnz})"


def build_ctmdp(
    initial: Iterable[Hashable],
    actions: Callable[[Hashable], Iterable[int]],
    events: Callable[[Hashable, int], Iterable[tuple[float, Hashable | None]]],
    cost: Callable[[Hashable, int], float],
    max_states: int = 5_000_000,
) -> CTMDP:
    """Enumerate a CTMDP from a Python description of its events.

    Starting from ``initial`` states, every state reachable under some admissible
    action is discovered breadth-first. ``actions(s)`` lists the admissible action
    labels of ``s``; ``events(s, a)`` yields ``(rate, next_state)`` pairs (rates to
    the same next state add up; ``next_state=None`` is a killing event); ``cost(s,
    a)`` is the cost rate. States may be any hashable values; the result's
    ``labels`` lists them in index order (discovery order).

    The callables run once per state-action pair at build time; the solvers never
    call back into Python.
    """
    index: dict[Hashable, int] = {}
    labels: list[Hashable] = []
    queue: deque[Hashable] = deque()
    for s in initial:
        if s not in index:
            index[s] = len(labels)
            labels.append(s)
            queue.append(s)
    sa_state: list[int] = []
    sa_action: list[int] = []
    costs: list[float] = []
    kills: list[float] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    while queue:
        s = queue.popleft()
        i = index[s]
        acts = list(actions(s))
        if not acts:
            raise ModelError(f"actions({s!r}) is empty: every state needs an admissible action")
        for a in acts:
            k = len(sa_state)
            sa_state.append(i)
            sa_action.append(int(a))
            costs.append(float(cost(s, a)))
            kill = 0.0
            for rate, t in events(s, a):
                rate = float(rate)
                if rate < 0 or not math.isfinite(rate):
                    raise ModelError(f"events({s!r}, {a}): rate must be finite and >= 0, got {rate}")
                if rate == 0:
                    continue
                if t is None:
                    kill += rate
                    continue
                j = index.get(t)
                if j is None:
                    if len(labels) >= max_states:
                        raise ModelError(f"state space exceeds max_states={max_states}")
                    j = index[t] = len(labels)
                    labels.append(t)
                    queue.append(t)
                rows.append(k)
                cols.append(j)
                vals.append(rate)
            kills.append(kill)
    S, K = len(labels), len(sa_state)
    R = sp.csr_matrix((vals, (rows, cols)), shape=(K, S))
    return CTMDP.from_pairs(sa_state, sa_action, R, costs, S, kill=kills, labels=labels)


# --------------------------------------------------------------------------- results


@dataclass
class MDPResult:
    """Outcome of a solver, in the manner of ``scipy.optimize.OptimizeResult``.

    ``values`` are the discounted costs ``J`` (discounted criterion) or the
    relative values ``h`` (average criterion, with ``gain``). ``lower``/``upper``
    bound the optimal ``J*`` (or ``g*``) when the solver provides them;
    ``error_bound`` bounds ``J_policy - J*`` (or ``g_policy - g*``).
    """

    success: bool
    status: int  # 0 converged and certified, 1 iteration limit, 2 numerical failure
    message: str
    policy: np.ndarray
    values: np.ndarray
    method: str
    criterion: Literal["discounted", "average"]
    iterations: int
    seconds: float
    error_bound: float = math.inf
    lower: np.ndarray | float | None = None
    upper: np.ndarray | float | None = None
    gain: float | None = None
    beta: float | None = None
    nu: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"MDPResult(method={self.method!r}, success={self.success}, status={self.status}, "
            f"iterations={self.iterations}, seconds={self.seconds:.3g}, error_bound={self.error_bound:.3g}"
            + (f", gain={self.gain:.6g}" if self.gain is not None else "")
            + f", message={self.message!r})"
        )


# --------------------------------------------------------------------------- kernels

try:  # numba is a hard dependency of hetsched; the fallback keeps NUMBA_DISABLE_JIT-style runs simple
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*args: Any, **kwargs: Any) -> Any:
        if args and callable(args[0]):
            return args[0]
        return lambda f: f


@njit(cache=True)
def _gs_sweeps(v, state_ptr, row_ptr, cols, vals, cost, out, beta, n_sweeps, pol):
    """Compiled, no checks: ``n_sweeps`` symmetric Gauss-Seidel Bellman sweeps on ``v``.

    Each state's own self-loop is solved exactly: v(s) = min_k (c_k + sum q v) / (beta + q_k).
    Writes ``v`` in place and the minimizing pair index of the last sweep into ``pol``.
    """
    S = v.size
    for it in range(2 * n_sweeps):
        forward = it % 2 == 0
        for idx in range(S):
            s = idx if forward else S - 1 - idx
            best = np.inf
            bk = -1
            for k in range(state_ptr[s], state_ptr[s + 1]):
                acc = cost[k]
                for t in range(row_ptr[k], row_ptr[k + 1]):
                    acc += vals[t] * v[cols[t]]
                acc /= beta + out[k]
                if acc < best:
                    best = acc
                    bk = k
            v[s] = best
            pol[s] = bk


@njit(cache=True)
def _gs_eval_sweeps(v, pk, row_ptr, cols, vals, cost, out, beta, n_sweeps):
    """Compiled, no checks: symmetric Gauss-Seidel sweeps evaluating the fixed pairs ``pk``."""
    S = v.size
    for it in range(2 * n_sweeps):
        forward = it % 2 == 0
        for idx in range(S):
            s = idx if forward else S - 1 - idx
            k = pk[s]
            acc = cost[k]
            for t in range(row_ptr[k], row_ptr[k + 1]):
                acc += vals[t] * v[cols[t]]
            v[s] = acc / (beta + out[k])


@njit(cache=True, fastmath={"contract"})
def _gs_pass(v, state_ptr, row_ptr, cols, svals, scost, forward):
    """Compiled, no checks: one Gauss-Seidel Bellman pass (forward or backward) on ``v`` in place.

    Pre-scaled rows (see :func:`_scaled_rows`): ``v(s) = min_k scost_k + sum svals v``,
    i.e. ``min_k (c_k + sum_j q_kj v_j) / (beta + q_k)`` with the self-loop solved exactly.
    """
    S = v.size
    for idx in range(S):
        s = idx if forward else S - 1 - idx
        best = np.inf
        for k in range(state_ptr[s], state_ptr[s + 1]):
            acc = scost[k]
            for t in range(row_ptr[k], row_ptr[k + 1]):
                acc += svals[t] * v[cols[t]]
            if acc < best:
                best = acc
        v[s] = best


def _scaled_rows(model: CTMDP, beta: float, row_ptr: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rates and costs divided by ``beta + q(s, a)`` once, so a sweep has no division.

    Only the path of the iterates uses them; the stopping rule uses the model's own arrays.
    """
    inv = 1.0 / (beta + model.out)
    return vals * np.repeat(inv, np.diff(row_ptr)), model.cost * inv


@njit(cache=True)
def _residual_range(v, state_ptr, row_ptr, cols, vals, cost, out, beta, nu):
    """Compiled ``(min w, max w)`` of ``w = T v - v`` for the uniformized Jacobi operator ``T``.

    The same quantity as :func:`_certify`, without storing the pair Q-values: the
    solvers test the stopping rule with it and confirm with :func:`_certify`.
    """
    S = v.size
    lo = np.inf
    hi = -np.inf
    for s in range(S):
        best = np.inf
        for k in range(state_ptr[s], state_ptr[s + 1]):
            acc = cost[k] + (nu - out[k]) * v[s]
            for t in range(row_ptr[k], row_ptr[k + 1]):
                acc += vals[t] * v[cols[t]]
            if acc < best:
                best = acc
        w = best / (nu + beta) - v[s]
        if w < lo:
            lo = w
        if w > hi:
            hi = w
    return lo, hi


@njit(cache=True, fastmath={"reassoc", "contract"})
def _anderson_kernel(x, g, dF, dG, f_prev, g_prev, H, count, first, limit):
    """Compiled type-II Anderson step on ``x`` (in place) from ``g = G(x)``; see :class:`_Anderson`.

    ``dF``/``dG`` are ``(m, n)`` rings of differences of residuals / images, ``H`` their
    Gram matrix (one new row per step), ``count`` the differences stored before this
    step. A first step, or one whose residual ``max |g - x|`` exceeds ``limit``, drops
    the history and takes the plain step ``g``. Returns ``(max |g - x|, k)`` with ``k``
    the number of differences used (0: plain step, history restarted). Reassociated
    sums (vectorized dot products) change only the acceleration, never the certificate.
    """
    n = x.size
    m = dF.shape[0]
    r = 0.0
    for i in range(n):
        f = abs(g[i] - x[i])
        if f > r:
            r = f
    if first or r > limit:  # no history yet, or the residual grew: restart with a plain step
        for i in range(n):
            f_prev[i] = g[i] - x[i]
            g_prev[i] = g[i]
            x[i] = g[i]
        return r, 0
    slot = count % m
    k = min(count + 1, m)
    a = dF[slot]
    b = dG[slot]
    for i in range(n):
        f = g[i] - x[i]
        a[i] = f - f_prev[i]
        b[i] = g[i] - g_prev[i]
        f_prev[i] = f
        g_prev[i] = g[i]
    rhs = np.zeros(k)
    for j in range(k):
        d = dF[j]
        s1 = 0.0
        s2 = 0.0
        for i in range(n):
            s1 += a[i] * d[i]
            s2 += d[i] * f_prev[i]
        H[slot, j] = s1
        H[j, slot] = s1
        rhs[j] = s2
    Hk = H[:k, :k].copy()
    tr = 0.0
    for j in range(k):
        tr += Hk[j, j]
    for j in range(k):
        Hk[j, j] += 1e-12 * tr + 1e-300
    gamma = np.linalg.solve(Hk, rhs)
    for i in range(n):
        x[i] = g[i]
    for j in range(k):
        gj = gamma[j]
        d = dG[j]
        for i in range(n):
            x[i] -= gj * d[i]
    return r, k


_WARM: set[tuple[str, str]] = set()


def _warm_kernels(kind: str = "vi", index_dtype: Any = np.int32) -> None:
    """Compile (or load from numba's cache) the kernels of one solver once, so its timings exclude it.

    ``kind``: ``"vi"`` (Gauss-Seidel pass, residual range, Anderson) or ``"mpi"``;
    ``index_dtype``: the index width :func:`_csr_arrays` picked. Loading only what is
    used keeps the first call of a command short.
    """
    it = np.dtype(index_dtype)
    key = (kind, it.name)
    if key in _WARM:
        return
    one = np.ones(1)
    ptr, rp, cols = np.array([0, 1], dtype=it), np.array([0, 0], dtype=it), np.zeros(0, it)
    if kind == "mpi":
        _gs_sweeps(np.zeros(1), ptr, rp, cols, np.zeros(0), one, one, 1.0, 1, np.zeros(1, np.int64))
        _gs_eval_sweeps(np.zeros(1), np.zeros(1, np.int64), rp, cols, np.zeros(0), one, one, 1.0, 1)
    else:
        _gs_pass(np.zeros(1), ptr, rp, cols, np.zeros(0), one, True)
        _residual_range(np.zeros(1), ptr, rp, cols, np.zeros(0), one, one, 1.0, 2.0)
        _anderson_kernel(np.zeros(1), one, np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32),
                         np.zeros(1), np.zeros(1), np.zeros((1, 1)), 0, False, 1.0)
    _WARM.add(key)


# --------------------------------------------------------------------------- operators


def q_values(model: CTMDP, v: np.ndarray, beta: float, nu: float) -> np.ndarray:
    """Uniformized Q-values of every pair: ``[c + R v + (nu - q) v(s)] / (nu + beta)``."""
    return (model.cost + model.R @ v + (nu - model.out) * v[model.sa_state]) / (nu + beta)


def _segment_min(model: CTMDP, qv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-state minimum over its pairs and the pair attaining it (lowest action on ties)."""
    starts = model.state_ptr[:-1]
    vmin = np.minimum.reduceat(qv, starts)
    # first pair attaining the minimum: mask non-minimal pairs with +inf, argmin by segment
    is_min = qv <= vmin[model.sa_state]
    idx = np.arange(model.n_pairs)
    cand = np.where(is_min, idx, model.n_pairs)
    kmin = np.minimum.reduceat(cand, starts)
    return vmin, kmin


def _bellman(model: CTMDP, v: np.ndarray, beta: float, nu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    qv = q_values(model, v, beta, nu)
    tv, k = _segment_min(model, qv)
    return tv, k, qv


def _check_beta(beta: float) -> float:
    beta = float(beta)
    if not (beta > 0 and math.isfinite(beta)):
        raise ModelError(f"beta: the discount rate must be > 0 and finite, got {beta}")
    return beta


def _uniform_rate(model: CTMDP, nu: float | None) -> float:
    mr = model.max_rate
    if nu is None:
        return mr if mr > 0 else 1.0
    nu = float(nu)
    if not nu >= mr * (1 - 1e-12) or not math.isfinite(nu) or nu <= 0:
        raise ModelError(f"nu: the uniformization rate must be >= the largest exit rate {mr:.6g}, got {nu}")
    return max(nu, mr)


def _certify(model: CTMDP, v: np.ndarray, beta: float, nu: float) -> dict[str, Any]:
    """One uniformized Bellman step and the MacQueen bounds (module docstring)."""
    tv, k, qv = _bellman(model, v, beta, nu)
    w = tv - v
    alpha = nu / (nu + beta)
    m, M = float(w.min()), float(w.max())
    f = nu / beta  # = alpha / (1 - alpha), without cancellation
    return {
        "tv": tv,
        "pairs": k,
        "q": qv,
        "lower": tv + f * m,
        "upper": tv + f * M,
        "error_bound": f * (M - m),
        "span": M - m,
        "alpha": alpha,
    }


def _csr_arrays(model: CTMDP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR arrays of the rates, with 32-bit indices when they fit (less memory traffic per sweep)."""
    R = model.R
    it = np.int32 if R.nnz < 2**31 - 1 and model.n_states < 2**31 - 1 else np.int64
    return R.indptr.astype(it, copy=False), R.indices.astype(it, copy=False), R.data.astype(np.float64, copy=False)


def _default_eps(model: CTMDP, beta: float) -> float:
    """Absolute tolerance 1e-8 of the cost scale ``max|c| / beta``."""
    scale = float(np.abs(model.cost).max()) / beta if model.n_pairs else 1.0
    return 1e-8 * max(scale, 1.0)


def _finish(
    model: CTMDP,
    v: np.ndarray,
    beta: float,
    nu: float,
    eps: float,
    method: str,
    iterations: int,
    t0: float,
    cert: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> MDPResult:
    if cert is None:
        cert = _certify(model, v, beta, nu)
    ok = bool(np.all(np.isfinite(cert["tv"])))
    policy = model.sa_action[cert["pairs"]]
    if not ok:
        status, msg = 2, "numerical failure: values are not finite"
    elif cert["error_bound"] < eps:
        status, msg = 0, f"converged: greedy policy certified {cert['error_bound']:.3g}-optimal (< eps={eps:.3g})"
    else:
        status, msg = 1, (
            f"not converged after {iterations} iterations: error bound {cert['error_bound']:.3g} >= eps={eps:.3g}"
        )
    ex = {"q": cert["q"], "span": cert["span"], "alpha": cert["alpha"], "eps": eps}
    if extra:
        ex.update(extra)
    return MDPResult(
        success=status == 0,
        status=status,
        message=msg,
        policy=policy,
        values=cert["tv"],
        method=method,
        criterion="discounted",
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        error_bound=float(cert["error_bound"]),
        lower=cert["lower"],
        upper=cert["upper"],
        beta=beta,
        nu=nu,
        extra=ex,
    )


# --------------------------------------------------------------------------- discounted solvers


class _Anderson:
    """Type-II Anderson acceleration of a fixed-point map (Walker and Ni 2011), with a restart safeguard.

    ``step(x, gx)`` returns the next iterate from ``x`` and ``g(x)``: ``g(x) - dG gamma`` with
    ``gamma`` minimizing ``||f - dF gamma||_2`` (``f = g(x) - x``; regularized normal
    equations on the last ``m`` differences). If the residual grows past ``restart`` times the
    best seen, the history is dropped and the plain step ``g(x)`` is taken. Acceleration only
    moves the iterates: the stopping rule is checked on them, so certification is unchanged.
    The work is one compiled pass (:func:`_anderson_kernel`) that also updates the Gram
    matrix by one row, ``O(m n)`` per step.
    """

    def __init__(self, n: int, m: int, restart: float = 10.0):
        self.m = m
        # differences stored in single precision (half the memory traffic; only the mixing
        # weights depend on them, sums are in double); only the first min(count, m) rows are read
        self.dF = np.empty((m, n), dtype=np.float32)
        self.dG = np.empty((m, n), dtype=np.float32)
        self.H = np.zeros((m, m))
        self.f_prev = np.zeros(n)
        self.g_prev = np.zeros(n)
        self.count = 0
        self.first = True
        self.best = math.inf
        self.restart = restart

    def step(self, x: np.ndarray, gx: np.ndarray) -> np.ndarray:
        """Overwrite and return ``x`` with the accelerated iterate (``gx`` is not changed)."""
        limit = self.restart * self.best
        try:
            r, k = _anderson_kernel(x, gx, self.dF, self.dG, self.f_prev, self.g_prev, self.H,
                                    self.count, self.first, limit)
        except Exception:  # numba's solve raises on a singular system: take the plain step
            x[:] = gx
            r, k = math.inf, -1
        self.first = False
        self.best = min(self.best, r)
        self.count = self.count + 1 if k > 0 else 0
        return x


def value_iteration(
    model: CTMDP,
    beta: float,
    eps: float | None = None,
    max_iter: int = 100_000,
    method: Literal["jacobi", "gauss-seidel"] = "gauss-seidel",
    nu: float | None = None,
    v0: np.ndarray | None = None,
    anderson: int = 8,
    check_every: int = 5,
) -> MDPResult:
    """Discounted value iteration (successive approximation) with a certified stop.

    Parameters
    ----------
    model : CTMDP
    beta : float
        Discount rate (> 0) of ``E int exp(-beta t) c dt``.
    eps : float, optional
        Absolute tolerance on ``J_policy - J*`` (default ``1e-8 max|c| / beta``).
    max_iter : int
        Iteration limit (Jacobi steps, or symmetric Gauss-Seidel sweeps: one
        forward and one backward pass). Reaching it gives ``status=1``.
    method : {"jacobi", "gauss-seidel"}
        ``"jacobi"`` is the paper's successive approximation ``v <- T v`` on the
        uniformized chain (vectorized sparse products); ``"gauss-seidel"``
        (default) runs compiled symmetric sweeps that update in place and solve
        each state's self-loop exactly.
    nu : float, optional
        Uniformization rate (default: the largest exit rate). It changes the
        iterates of Jacobi and the bound's ``alpha``, never ``J*``.
    v0 : array, optional
        Starting values (default 0).
    anderson : int
        Memory of Anderson acceleration of the iteration map (0 = plain
        successive approximation). It changes the path, not the stopping rule.
    check_every : int
        Iterations between two evaluations of the stopping rule.

    Returns
    -------
    MDPResult
        ``policy`` (action label per state), ``values`` (``T v`` at the stop),
        ``lower``/``upper`` bounds on ``J*``, ``error_bound`` (the certificate:
        ``J_policy - J* <= error_bound`` in every state), ``extra['q']``.

    Notes
    -----
    Stopping rule: MacQueen (1966) bounds, Puterman (1994) §6.6.3 Thm 6.6.6; see
    the module docstring. Every method checks it on one uniformized Jacobi step
    ``T v`` of the current iterate, so the certificate holds whatever produced ``v``:
    every ``check_every`` iterations a compiled pass computes ``nu/beta * sp(T v - v)``
    and, when that is below ``eps``, :func:`_certify` recomputes it with sparse
    products before the solver returns (it continues if the two disagree).
    Cost at Delta = 200 of the co-allocation model (483,606 states): about 65
    symmetric sweeps of ~15 ms plus 65 Anderson passes of ~8 ms.
    """
    beta = _check_beta(beta)
    nu = _uniform_rate(model, nu)
    eps = _default_eps(model, beta) if eps is None else float(eps)
    if eps <= 0:
        raise ModelError(f"eps: must be > 0, got {eps}")
    if method not in ("jacobi", "gauss-seidel"):
        raise ModelError(f"method: expected 'jacobi' or 'gauss-seidel', got {method!r}")
    if anderson < 0:
        raise ModelError(f"anderson: memory must be >= 0, got {anderson}")
    row_ptr, cols, vals = _csr_arrays(model)
    _warm_kernels("vi", row_ptr.dtype)
    t0 = time.perf_counter()
    v = np.zeros(model.n_states) if v0 is None else np.array(v0, dtype=float)
    if v.shape != (model.n_states,):
        raise ModelError(f"v0: expected shape ({model.n_states},), got {v.shape}")
    sptr = model.state_ptr.astype(row_ptr.dtype)
    if method == "jacobi":
        def sweep(x: np.ndarray, y: np.ndarray) -> None:
            y[:] = _bellman(model, x, beta, nu)[0]
    else:
        svals, scost = _scaled_rows(model, beta, row_ptr, vals)

        def sweep(x: np.ndarray, y: np.ndarray) -> None:
            np.copyto(y, x)  # one symmetric sweep: a forward and a backward pass, in place
            _gs_pass(y, sptr, row_ptr, cols, svals, scost, True)
            _gs_pass(y, sptr, row_ptr, cols, svals, scost, False)
    acc = _Anderson(model.n_states, anderson) if anderson else None
    check_every = max(1, int(check_every))
    f = nu / beta  # = alpha / (1 - alpha)
    gv = np.empty_like(v)
    it = 0
    cert = None
    while True:
        sweep(v, gv)
        if acc is not None:
            v = acc.step(v, gv)
        else:
            v, gv = gv, v
        it += 1
        if it % check_every and it < max_iter:
            continue
        # the stopping rule, compiled; a pass is confirmed by the full certificate below
        lo, hi = _residual_range(v, sptr, row_ptr, cols, vals, model.cost, model.out, beta, nu)
        bound = f * (hi - lo)
        if bound < eps or it >= max_iter or not np.isfinite(bound):
            cert = _certify(model, v, beta, nu)
            if cert["error_bound"] < eps or it >= max_iter or not np.isfinite(cert["error_bound"]):
                break
    name = f"value-iteration({method}{', anderson=%d' % anderson if anderson else ''})"
    return _finish(model, v, beta, nu, eps, name, it, t0, cert)


def _evaluate_discounted(model: CTMDP, k: np.ndarray, beta: float) -> np.ndarray:
    """Exact discounted value of the pairs ``k``: solve ``(beta I - Q_pi) v = c_pi``."""
    A = (sp.diags(beta + model.out[k]) - model.R[k]).tocsc()
    try:
        return spla.splu(A).solve(model.cost[k])
    except (RuntimeError, MemoryError, ValueError) as exc:  # singular (impossible for beta > 0) or too big
        raise SolverError(f"policy evaluation failed: {exc}") from exc


def _improve(model: CTMDP, v: np.ndarray, k_old: np.ndarray, beta: float, nu: float, rtol: float) -> np.ndarray:
    """Greedy pairs for ``v``; keep the old pair unless another is better by more than rtol."""
    qv = q_values(model, v, beta, nu)
    vmin, kmin = _segment_min(model, qv)
    q_old = qv[k_old]
    keep = q_old <= vmin + rtol * np.maximum(np.abs(vmin), 1e-300)
    return np.where(keep, k_old, kmin)


def policy_iteration(
    model: CTMDP,
    beta: float,
    eps: float | None = None,
    max_iter: int = 1000,
    nu: float | None = None,
    policy0: np.ndarray | None = None,
) -> MDPResult:
    """Discounted policy iteration (Howard 1960; Puterman 1994, §6.4).

    Each policy is evaluated exactly by a sparse LU solve; improvement keeps the
    current action unless another is better by a relative ``1e-12`` (no cycling
    on ties). The final policy is certified as in :func:`value_iteration`.
    """
    beta = _check_beta(beta)
    nu = _uniform_rate(model, nu)
    eps = _default_eps(model, beta) if eps is None else float(eps)
    t0 = time.perf_counter()
    if policy0 is None:
        k = model.state_ptr[:-1].copy()  # lowest admissible action
    else:
        k = model.pair_index(policy0)
    it = 0
    while True:
        v = _evaluate_discounted(model, k, beta)
        it += 1
        k_new = _improve(model, v, k, beta, nu, 1e-12)
        if np.array_equal(k_new, k) or it >= max_iter:
            break
        k = k_new
    return _finish(model, v, beta, nu, eps, "policy-iteration", it, t0)


def modified_policy_iteration(
    model: CTMDP,
    beta: float,
    eps: float | None = None,
    m: int = 20,
    max_iter: int = 10_000,
    nu: float | None = None,
    v0: np.ndarray | None = None,
) -> MDPResult:
    """Modified policy iteration with Gauss-Seidel partial evaluation (Puterman 1994, §6.5).

    One compiled Gauss-Seidel improvement sweep, then ``m`` symmetric sweeps that
    evaluate the greedy policy, repeated until the certificate of
    :func:`value_iteration` holds. ``iterations`` counts improvement steps.
    """
    beta = _check_beta(beta)
    nu = _uniform_rate(model, nu)
    eps = _default_eps(model, beta) if eps is None else float(eps)
    row_ptr, cols, vals = _csr_arrays(model)
    _warm_kernels("mpi", row_ptr.dtype)
    t0 = time.perf_counter()
    v = np.zeros(model.n_states) if v0 is None else np.array(v0, dtype=float)
    sptr = model.state_ptr.astype(row_ptr.dtype)
    pk = np.zeros(model.n_states, dtype=np.int64)
    it = 0
    sweeps = 0
    while True:
        _gs_sweeps(v, sptr, row_ptr, cols, vals, model.cost, model.out, beta, 1, pk)
        _gs_eval_sweeps(v, pk, row_ptr, cols, vals, model.cost, model.out, beta, m)
        it += 1
        sweeps += 1 + m
        cert = _certify(model, v, beta, nu)
        if cert["error_bound"] < eps or it >= max_iter or not np.isfinite(cert["error_bound"]):
            break
    return _finish(model, v, beta, nu, eps, f"modified-policy-iteration(m={m})", it, t0, cert, {"sweeps": sweeps})


# --------------------------------------------------------------------------- policy evaluation


def stationary_distribution(Q: sp.spmatrix) -> np.ndarray:
    """Stationary distribution of an irreducible CTMC generator ``Q`` (``pi Q = 0``, ``sum pi = 1``).

    Direct sparse LU of ``Q^T`` with its last equation replaced by the
    normalization; the answer is re-checked (residual) and clipped at 0.
    """
    Q = sp.csr_matrix(Q, dtype=float)
    n = Q.shape[0]
    if Q.shape != (n, n):
        raise ModelError(f"Q: expected a square generator, got shape {Q.shape}")
    if n == 1:
        return np.ones(1)
    A = Q.T.tolil()
    A[n - 1, :] = np.ones(n)
    b = np.zeros(n)
    b[-1] = 1.0
    try:
        pi = spla.splu(A.tocsc()).solve(b)
    except (RuntimeError, MemoryError, ValueError) as exc:
        raise SolverError(f"stationary distribution: singular system ({exc}); is the chain irreducible?") from exc
    resid = float(np.abs(Q.T @ pi).max())
    scale = float(np.abs(Q.diagonal()).max()) or 1.0
    if not np.all(np.isfinite(pi)) or resid > 1e-8 * scale or pi.min() < -1e-9:
        raise SolverError(f"stationary distribution: residual {resid:.3g}, min {pi.min():.3g}; chain not irreducible?")
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def evaluate_policy(model: CTMDP, policy: np.ndarray, beta: float | None = None) -> dict[str, Any]:
    """Cost of a stationary policy from the CTMC it induces.

    With ``beta``: ``{"values": J_pi}`` (exact solve). Without: the long-run
    average ``{"gain": g, "pi": stationary distribution}`` (unichain, irreducible
    on the states it visits is required; killing rates are not allowed).
    """
    k = model.pair_index(policy)
    if beta is not None:
        return {"values": _evaluate_discounted(model, k, _check_beta(beta))}
    if np.any(model.kill[k] > 0):
        raise ModelError("average cost is undefined for a model with killing rates")
    pi = stationary_distribution(model.generator(policy))
    return {"gain": float(pi @ model.cost[k]), "pi": pi}


# --------------------------------------------------------------------------- average cost


def _average_checks(model: CTMDP, tau: float) -> None:
    if np.any(model.kill > 0):
        raise ModelError("average cost is undefined for a model with killing rates")
    if not 0 < tau < 1:
        raise ModelError(f"tau: aperiodicity fraction must be in (0, 1), got {tau}")


def relative_value_iteration(
    model: CTMDP,
    eps: float | None = None,
    max_iter: int = 1_000_000,
    tau: float = 0.01,
    ref: int = 0,
    h0: np.ndarray | None = None,
) -> MDPResult:
    """Long-run average cost by relative value iteration on the uniformized chain.

    ``nu = max q / (1 - tau)``; ``h <- T h - (T h)(ref)`` with stage cost ``c / nu``.
    Stopping rule (Odoni 1969; Puterman 1994, Thm 8.5.5): with ``w = T h - h``,
    ``nu min w <= g* <= nu max w`` and the greedy policy's gain is within
    ``nu sp(w)`` of ``g*``; stop when ``nu sp(w) < eps`` (default ``1e-9 max|c|``).
    Assumes a unichain model.
    """
    _average_checks(model, tau)
    nu = model.max_rate / (1 - tau) if model.max_rate > 0 else 1.0
    eps = 1e-9 * max(float(np.abs(model.cost).max()), 1.0) if eps is None else float(eps)
    t0 = time.perf_counter()
    h = np.zeros(model.n_states) if h0 is None else np.array(h0, dtype=float)
    # uniformized, unscaled: T h = min [c/nu + (R h + (nu - q) h(s)) / nu]
    cost = model.cost / nu
    it = 0
    while True:
        qv = cost + (model.R @ h + (nu - model.out) * h[model.sa_state]) / nu
        th, k = _segment_min(model, qv)
        w = th - h
        it += 1
        lo, hi = nu * float(w.min()), nu * float(w.max())
        h = th - th[ref]
        if hi - lo < eps or it >= max_iter or not np.isfinite(hi - lo):
            break
    ok = np.isfinite(hi - lo)
    status = 0 if hi - lo < eps else (2 if not ok else 1)
    msg = (
        f"converged: gain in [{lo:.10g}, {hi:.10g}]" if status == 0
        else f"not converged after {it} iterations: gain bounds [{lo:.6g}, {hi:.6g}]"
    )
    return MDPResult(
        success=status == 0, status=status, message=msg, policy=model.sa_action[k], values=h,
        method="relative-value-iteration", criterion="average", iterations=it,
        seconds=time.perf_counter() - t0, error_bound=hi - lo, lower=lo, upper=hi,
        gain=0.5 * (lo + hi), nu=nu, extra={"eps": eps},
    )


def _evaluate_average(model: CTMDP, k: np.ndarray, ref: int) -> tuple[float, np.ndarray]:
    """Solve ``Q_pi h = g 1 - c_pi`` with ``h(ref) = 0`` (unknown ``g`` takes column ``ref``)."""
    S = model.n_states
    G = (model.R[k] - sp.diags(model.out[k])).tocsc()
    G = G.tolil()
    G[:, ref] = -np.ones((S, 1))
    try:
        x = spla.splu(G.tocsc()).solve(-model.cost[k])
    except (RuntimeError, MemoryError, ValueError) as exc:
        raise SolverError(f"average-cost evaluation failed ({exc}); is the policy unichain?") from exc
    g = float(x[ref])
    h = x.copy()
    h[ref] = 0.0
    return g, h


def average_policy_iteration(
    model: CTMDP,
    max_iter: int = 1000,
    ref: int = 0,
    policy0: np.ndarray | None = None,
) -> MDPResult:
    """Average-cost policy iteration (Howard 1960; Puterman 1994, §8.6) for unichain models.

    Evaluation solves ``Q_pi h = g 1 - c_pi`` with ``h(ref)=0`` exactly;
    improvement minimizes ``c + Q h`` per state, keeping the current action on
    ties (relative ``1e-12``). ``lower``/``upper`` are the Odoni bounds of the final
    ``h`` (``min/max_s min_a (c + Q h)(s, a)``).
    """
    _average_checks(model, 0.5)
    t0 = time.perf_counter()
    k = model.state_ptr[:-1].copy() if policy0 is None else model.pair_index(policy0)
    it = 0
    while True:
        g, h = _evaluate_average(model, k, ref)
        it += 1
        qv = model.cost + model.R @ h - model.out * h[model.sa_state]
        vmin, kmin = _segment_min(model, qv)
        scale = max(abs(g), 1e-300)
        keep = qv[k] <= vmin + 1e-12 * scale
        k_new = np.where(keep, k, kmin)
        if np.array_equal(k_new, k) or it >= max_iter:
            break
        k = k_new
    lo, hi = float(vmin.min()), float(vmin.max())
    converged = np.array_equal(k_new, k)
    return MDPResult(
        success=bool(converged), status=0 if converged else 1,
        message="converged: no action improves" if converged else f"not converged after {it} iterations",
        policy=model.sa_action[k], values=h, method="average-policy-iteration", criterion="average",
        iterations=it, seconds=time.perf_counter() - t0, error_bound=hi - lo, lower=lo, upper=hi, gain=g,
    )


# --------------------------------------------------------------------------- pymdptoolbox


def to_mdptoolbox(
    model: CTMDP, beta: float, nu: float | None = None
) -> tuple[list[sp.csr_matrix], np.ndarray, float]:
    """Export the uniformized discounted problem in the pymdptoolbox convention.

    Returns ``(P, R, discount)``: ``P[a]`` is the ``S x S`` sparse stochastic
    matrix of action ``a``, ``R`` (``S x A``) the reward ``-c / (nu + beta)``
    (pymdptoolbox *maximizes*), ``discount = nu / (nu + beta)``. pymdptoolbox
    needs every action in every state: an inadmissible pair copies the row of the
    state's first admissible action with a penalty larger than any value range, so
    it is never chosen. Killing rates become a drop in row sums (substochastic).
    ``mdptoolbox.mdp.ValueIteration(P, R, discount)`` then returns ``V = -J``.
    """
    beta = _check_beta(beta)
    nu = _uniform_rate(model, nu)
    S, A = model.n_states, model.n_actions
    disc = nu / (nu + beta)
    first = model.state_ptr[:-1]
    table = np.tile(first[:, None], (1, A))  # pair used for (s, a)
    table[model.sa_state, model.sa_action] = np.arange(model.n_pairs)
    adm = model.admissible()
    stage = -model.cost / (nu + beta)
    span = float(stage.max() - stage.min()) if stage.size else 0.0
    penalty = 2.0 * (span / (1 - disc) + abs(float(stage.min(initial=0.0)))) + 1.0
    P, R = [], np.empty((S, A))
    eye_states = np.arange(S)
    for a in range(A):
        k = table[:, a]
        off = model.R[k] / nu
        diag = 1.0 - model.out[k] / nu  # a killing rate leaves the row short of 1
        Pa = (off + sp.csr_matrix((diag, (eye_states, eye_states)), shape=(S, S))).tocsr()
        P.append(Pa)
        R[:, a] = stage[k] - np.where(adm[:, a], 0.0, penalty)
    return P, R, disc


def from_mdptoolbox(
    P: Sequence[Any], R: np.ndarray, discount: float, admissible: np.ndarray | None = None
) -> tuple[CTMDP, float]:
    """Read a discrete-time MDP in the pymdptoolbox convention as an equivalent CTMDP.

    ``P[a]`` (``S x S``, rows summing to at most 1), ``R`` of shape ``S x A`` (or a
    list of ``S x S`` per-transition rewards, reduced to expected rewards), reward to
    *maximize*, ``discount`` in (0, 1). Returns ``(model, beta)`` with rates ``P``,
    cost rate ``-R / discount`` and ``beta = (1 - discount) / discount``; the
    CTMDP's ``J`` then equals ``-V`` of the discrete problem.
    """
    disc = float(discount)
    if not 0 < disc < 1:
        raise ModelError(f"discount: must be in (0, 1), got {discount}")
    mats = [sp.csr_matrix(p, dtype=float) for p in P]
    A = len(mats)
    S = mats[0].shape[0]
    if isinstance(R, (list, tuple)) or (np.ndim(R) == 3):
        R = np.column_stack([np.asarray(sp.csr_matrix(mats[a]).multiply(sp.csr_matrix(R[a])).sum(axis=1)).ravel()
                             for a in range(A)])
    R = np.asarray(R, dtype=float)
    if R.ndim == 1:
        R = np.tile(R[:, None], (1, A))
    if R.shape != (S, A):
        raise ModelError(f"R: expected shape ({S}, {A}), got {R.shape}")
    for a, m in enumerate(mats):
        rs = np.asarray(m.sum(axis=1)).ravel()
        if m.shape != (S, S) or (m.nnz and m.data.min() < 0) or rs.max(initial=0) > 1 + 1e-9:
            raise ModelError(f"P[{a}]: expected an {S}x{S} (sub)stochastic matrix")
    beta = (1 - disc) / disc
    kills = [np.clip(1.0 - np.asarray(m.sum(axis=1)).ravel(), 0.0, None) for m in mats]
    kills = [np.where(k < 1e-12, 0.0, k) for k in kills]
    adm = np.ones((S, A), bool) if admissible is None else np.asarray(admissible, bool)
    s_idx, a_idx = np.nonzero(adm)
    Rall = sp.vstack(mats, format="csr")[a_idx * S + s_idx]
    kill = np.array([kills[a][s] for s, a in zip(s_idx, a_idx)])
    model = CTMDP.from_pairs(s_idx, a_idx, Rall, -R[s_idx, a_idx] / disc, S, kill=kill)
    return model, beta
