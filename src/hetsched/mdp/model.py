"""The finite CTMDP: states, admissible actions, sparse rates, cost rates (stored by state-action pairs).

A CTMDP is a finite set of states ``0..S-1``; in each state ``s`` a non-empty set
of admissible actions; for each admissible state-action pair ``(s, a)`` a cost
*rate* ``c(s, a)`` and transition *rates* ``q(s, a, j)`` to states ``j != s``
(a rate to ``s`` itself changes nothing and is dropped), and optionally a *killing
rate* ``k(s, a)`` at which the process stops at no further cost. The total exit
rate is ``q(s, a) = sum_j q(s, a, j) + k(s, a)``.

The model is stored by *state-action pairs* (as in QuantEcon's ``DiscreteDP``):
pair ``k`` belongs to state ``sa_state[k]`` and has action label ``sa_action[k]``;
pairs are sorted by state, ``state_ptr[s]:state_ptr[s+1]`` are the pairs of
``s``; ``R`` is a CSR matrix of shape ``(n_pairs, S)`` whose row ``k`` holds the
rates ``q(s, a, .)``. The solvers (:mod:`.discounted`, :mod:`.average`) are one
sparse product over all pairs or a compiled sweep (:mod:`.kernels`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError

__all__ = ["CTMDP", "build_ctmdp"]


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
