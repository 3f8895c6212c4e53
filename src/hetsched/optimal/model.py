"""The routing problem of a mapping system as a CTMDP: the exact state, its truncation, the arrays.

Model (thesis ch. 2, immediate mode): class ``i`` arrives as a Poisson stream of
rate ``lambda_i``; an arrival is routed at once to one machine ``j`` with
``mu_ij > 0``; every machine serves its queue first come first served, one task
at a time, class ``i`` for an exponential time of rate ``mu_ij``. Cost rate: the
number of tasks in the system.

**Which state is needed.** Under FCFS with class-dependent rates the future of
machine ``j`` depends on the class of the task in service *and on the order* of
the classes waiting behind it (each completion starts the next task in line),
so the exact state of a machine is the *sequence* of classes in its queue;
counts per class are not enough (two orders of the same tasks empty the queue
along different paths). Only the rate matters, so classes with the same rate
on machine ``j`` are one *symbol* there: machine ``j``'s alphabet is the set of
distinct rates ``{mu_ij > 0}``. With one symbol (rates that depend on the
machine only, ``mu_ij = mu_j``, e.g. one class) the sequence is its length and
a count suffices. This reduction is exact; nothing else is merged.

**Truncation.** Each machine holds at most ``buffer = B`` tasks (in service and
waiting). An arrival may be routed only to a machine whose buffer is not full;
if every machine that can run it is full, it is *blocked* (lost), at an
optional lump cost ``penalty`` (a cost rate ``penalty * lambda_i`` while it
holds). Machine ``j`` has ``sum_{k=0..B} a_j^k`` local states (``B + 1`` for a
count), the system their product.

**Actions.** A decision is taken at each arrival; in the CTMDP an action of
state ``s`` is a routing *vector* ``r`` (a machine ``r_i`` for every class),
of which only the arriving class's entry is used, so the optimal vector is the
optimal machine of every class in ``s``. Admissible: ``r_i`` not full, or, when
every machine of class ``i`` is full, ``r_i`` = its first machine (blocked).

Local state encoding (machine with alphabet ``a``): a sequence ``c_1 .. c_k``
(``c_1`` in service) is the number ``v = sum_m c_m a^(k-m)`` at index
``offset(k) + v``, ``offset(k) = sum_{l<k} a^l``; an arrival of symbol ``c``
gives ``v a + c`` at length ``k + 1``, a completion ``v mod a^(k-1)`` at length
``k - 1``, and the symbol in service is ``v // a^(k-1)``. The system's index is
mixed radix over machines (the last machine varies fastest).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError

__all__ = ["RoutingSpace", "MachineSpace", "local_states", "routing_space", "state_count", "build_model",
           "greedy_policy", "BYTES_PER_PAIR", "count_text"]

#: memory of one state-action pair while building (COO rows of ~M+N entries, sorting, CSR copies), for the
#: estimate checked before building
BYTES_PER_PAIR = 400


def count_text(n: int) -> str:
    """An exact count with thousands separators, or ``about 9.0e+100`` when it is too long to read."""
    return f"{n:,}" if n < 10 ** 15 else f"about {float(n):.2g}" if n < 10 ** 300 else f"about 10^{len(str(n)) - 1}"


def local_states(alphabet: int, buffer: int) -> int:
    """Number of queue contents of one machine: ``sum_{k=0..B} a^k`` (``B + 1`` for ``a = 1``; 1 for ``a = 0``)."""
    if alphabet <= 0:
        return 1
    if alphabet == 1:
        return buffer + 1
    return (alphabet ** (buffer + 1) - 1) // (alphabet - 1)


@dataclass(frozen=True, eq=False)
class MachineSpace:
    """Local states of one machine: queue contents of length ``<= buffer`` over its symbols (compiled arrays)."""

    rates: np.ndarray  # (a,) service rate of each symbol
    buffer: int
    length: np.ndarray = field(init=False)  # (n,) tasks at the machine
    head: np.ndarray = field(init=False)  # (n,) symbol in service (-1: empty)
    dep: np.ndarray = field(init=False)  # (n,) local state after the completion (itself when empty)
    arr: np.ndarray = field(init=False)  # (n, a) local state after an arrival of each symbol (-1: full)
    work: np.ndarray = field(init=False)  # (n,) sum of 1/rate over the tasks at the machine

    def __post_init__(self) -> None:
        a, B = int(self.rates.size), int(self.buffer)
        n = local_states(a, B)
        length = np.zeros(n, np.int64)
        head = np.full(n, -1, np.int64)
        dep = np.arange(n, dtype=np.int64)
        arr = np.full((n, max(a, 1)), -1, np.int64)
        work = np.zeros(n)
        if a == 1:
            length[:] = np.arange(n)
            head[1:] = 0
            dep[1:] = np.arange(n - 1)
            arr[:-1, 0] = np.arange(1, n)
            work[:] = length / float(self.rates[0])
        elif a > 1:
            offset = [0]
            for k in range(B + 1):
                offset.append(offset[-1] + a ** k)
            for k in range(1, B + 1):
                lo = offset[k]
                v = np.arange(a ** k, dtype=np.int64)
                idx = lo + v
                length[idx] = k
                head[idx] = v // a ** (k - 1)
                dep[idx] = offset[k - 1] + v % a ** (k - 1)
            for k in range(B):
                v = np.arange(a ** k, dtype=np.int64)
                for c in range(a):
                    arr[offset[k] + v, c] = offset[k + 1] + v * a + c
            inv = 1.0 / self.rates
            for k in range(1, B + 1):  # work of a sequence = work of its prefix + 1/rate of its last symbol
                v = np.arange(a ** k, dtype=np.int64)
                work[offset[k] + v] = work[offset[k - 1] + v // a] + inv[v % a]
        for name, val in (("length", length), ("head", head), ("dep", dep), ("arr", arr), ("work", work)):
            object.__setattr__(self, name, val)

    @property
    def n(self) -> int:
        return int(self.length.size)

    def decode(self, x: int) -> list[int]:
        """The symbols of local state ``x``, the one in service first."""
        a, k = int(self.rates.size), int(self.length[x])
        if a <= 1:
            return [0] * k
        v = x - sum(a ** l for l in range(k))
        return [(v // a ** (k - 1 - m)) % a for m in range(k)]


@dataclass(frozen=True, eq=False)
class RoutingSpace:
    """The truncated routing MDP of one system at one buffer size (see the module docstring)."""

    alpha: np.ndarray  # (N,) arrival rates
    mu: np.ndarray  # (N, M) service rates (0 = cannot run)
    buffer: int
    symbols: np.ndarray  # (N, M) symbol of class i on machine j (-1: cannot run)
    machines: tuple[MachineSpace, ...]
    eligible: tuple[tuple[int, ...], ...]  # machines of each class
    actions: np.ndarray  # (A, N) the routing vectors, in mixed-radix order over the classes

    @property
    def N(self) -> int:
        return int(self.alpha.size)

    @property
    def M(self) -> int:
        return len(self.machines)

    @property
    def local(self) -> np.ndarray:
        return np.array([m.n for m in self.machines], np.int64)

    @property
    def strides(self) -> np.ndarray:
        n = self.local
        s = np.ones(self.M, np.int64)
        for j in range(self.M - 2, -1, -1):
            s[j] = s[j + 1] * n[j + 1]
        return s

    @property
    def n_states(self) -> int:
        return int(np.prod(self.local))

    @property
    def counts_suffice(self) -> bool:
        """True when every machine's alphabet has at most one symbol (queue lengths are the exact state)."""
        return all(m.rates.size <= 1 for m in self.machines)

    def coords(self, states: np.ndarray | None = None) -> list[np.ndarray]:
        """Local state of every machine for ``states`` (default all)."""
        s = np.arange(self.n_states, dtype=np.int64) if states is None else np.asarray(states, np.int64)
        return [(s // st) % n for st, n in zip(self.strides, self.local)]

    def encode(self, queues) -> int:
        """Index of the state whose machine ``j`` holds the classes ``queues[j]`` (in service first)."""
        s = 0
        for j, (q, m, st) in enumerate(zip(queues, self.machines, self.strides)):
            x = 0
            for i in q:
                c = int(self.symbols[i, j])
                if c < 0:
                    raise ModelError(f"queues[{j}]: class {i + 1} cannot run on machine {j + 1}")
                x = int(m.arr[x, c])
                if x < 0:
                    raise ModelError(f"queues[{j}]: more than buffer={self.buffer} tasks")
            s += x * int(st)
        return s

    def decode(self, state: int) -> list[list[int]]:
        """The symbols at each machine in ``state`` (in service first)."""
        return [m.decode(int(x[0])) for m, x in zip(self.machines, self.coords(np.array([state])))]


def _symbols(mu: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    N, M = mu.shape
    sym = np.full((N, M), -1, np.int64)
    rates = []
    for j in range(M):
        col = mu[:, j]
        r = np.unique(col[col > 0])
        rates.append(r)
        for i in range(N):
            if col[i] > 0:
                sym[i, j] = int(np.searchsorted(r, col[i]))
    return sym, rates


def state_count(mu: np.ndarray, buffer: int) -> tuple[int, int]:
    """``(states, state-action pairs at most)`` of the truncated model, exact integers, without building it."""
    _, rates = _symbols(np.asarray(mu, float))
    S = math.prod(local_states(int(r.size), int(buffer)) for r in rates)
    A = math.prod(int((np.asarray(mu)[i] > 0).sum()) for i in range(np.asarray(mu).shape[0]))
    return S, S * A


def routing_space(alpha, mu, buffer: int) -> RoutingSpace:
    """The state space at ``buffer`` (arrays for every machine; no transitions yet)."""
    alpha = np.asarray(alpha, float)
    mu = np.asarray(mu, float)
    sym, rates = _symbols(mu)
    machines = tuple(MachineSpace(r, int(buffer)) for r in rates)
    eligible = tuple(tuple(int(j) for j in np.flatnonzero(mu[i] > 0)) for i in range(mu.shape[0]))
    actions = np.array(list(itertools.product(*eligible)), np.int64).reshape(-1, mu.shape[0])
    return RoutingSpace(alpha, mu, int(buffer), sym, machines, eligible, actions)


def _admissible(space: RoutingSpace, full: list[np.ndarray], states: np.ndarray | None = None):
    """Per action: the mask of states where it is admissible, and per class whether it is blocked there."""
    allfull = []
    for E in space.eligible:
        f = full[E[0]].copy()
        for j in E[1:]:
            f &= full[j]
        allfull.append(f)
    out = []
    for r in space.actions:
        adm = np.ones_like(full[0])
        for i, j in enumerate(r):
            if j == space.eligible[i][0]:
                adm &= ~full[j] | allfull[i]
            else:
                adm &= ~full[j]
        out.append(adm)
    return out, allfull


def build_model(space: RoutingSpace, penalty: float = 0.0):
    """The truncated routing CTMDP (a :class:`hetsched.CTMDP`; action label = row of ``space.actions``)."""
    import scipy.sparse as sp

    from ..mdp import CTMDP

    S, M = space.n_states, space.M
    xs = space.coords()
    strides = space.strides
    lengths = [m.length[x] for m, x in zip(space.machines, xs)]
    count = np.sum(lengths, axis=0).astype(float)
    full = [ln == space.buffer for ln in lengths]
    # completions: the same in every action
    dep_to = np.empty((M, S), np.int64)
    dep_rate = np.zeros((M, S))
    for j, (m, x) in enumerate(zip(space.machines, xs)):
        busy = m.length[x] > 0
        dep_to[j] = np.arange(S) + (m.dep[x] - x) * strides[j]
        if m.rates.size:
            dep_rate[j, busy] = m.rates[m.head[x[busy]]]
    adm, allfull = _admissible(space, full)
    blocked_cost = np.zeros(S)
    if penalty:
        for i, f in enumerate(allfull):
            blocked_cost[f] += penalty * space.alpha[i]
    rows, cols, vals, sa_state, sa_action, cost = [], [], [], [], [], []
    k0 = 0
    for a, (r, mask) in enumerate(zip(space.actions, adm)):
        st = np.flatnonzero(mask)
        K = st.size
        pair = k0 + np.arange(K, dtype=np.int64)
        sa_state.append(st)
        sa_action.append(np.full(K, a, np.int64))
        cost.append(count[st] + blocked_cost[st])
        for i, j in enumerate(r):
            m, x = space.machines[j], xs[j][st]
            nxt = m.arr[x, space.symbols[i, j]]
            ok = nxt >= 0
            rows.append(pair[ok])
            cols.append(st[ok] + (nxt[ok] - x[ok]) * strides[j])
            vals.append(np.full(int(ok.sum()), space.alpha[i]))
        for j in range(M):
            ok = dep_rate[j, st] > 0
            rows.append(pair[ok])
            cols.append(dep_to[j, st[ok]])
            vals.append(dep_rate[j, st[ok]])
        k0 += K
    R = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(k0, S))
    return CTMDP.from_pairs(np.concatenate(sa_state), np.concatenate(sa_action), R, np.concatenate(cost), S)


def greedy_policy(space: RoutingSpace, weights: np.ndarray | None = None) -> np.ndarray:
    """The action of least expected completion time (MCT) for every class in every state; ties: lowest machine.

    ``weights[i, j]`` is the expected execution time of class ``i`` on ``j``
    (default ``1/mu``); the work at a machine is the sum of its tasks' weights.
    A blocked class takes its first machine (the admissible action then).
    """
    S = space.n_states
    xs = space.coords()
    w = np.where(space.mu > 0, 1.0 / np.where(space.mu > 0, space.mu, 1.0), np.inf) if weights is None else weights
    full = [m.length[x] == space.buffer for m, x in zip(space.machines, xs)]
    work = [m.work[x] for m, x in zip(space.machines, xs)]
    radix = [len(E) for E in space.eligible]
    label = np.zeros(S, np.int64)
    for i, E in enumerate(space.eligible):
        best = np.full(S, np.inf)
        pos = np.zeros(S, np.int64)
        for p, j in enumerate(E):
            v = np.where(full[j], np.inf, work[j] + w[i, j])
            better = v < best * (1 - 1e-12)
            best = np.where(better, v, best)
            pos = np.where(better, p, pos)
        label = label * radix[i] + pos
    return label
