"""Reachability graph, vanishing-marking elimination and the tangible CTMC.

Three layers, as elsewhere in hetsched: :func:`explore` validates and drives a
batched breadth-first search; each batch of up to ``chunk`` markings is pushed
through every transition with NumPy array operations (marking-dependent
functions are called once per batch, not once per marking); new markings are
de-duplicated by a compiled open-addressing hash table
(:mod:`hetsched.srn._kernels`). :func:`to_ctmc` then removes the vanishing
markings,

    Q_TT' = R_TT + R_TV (I - P_VV)^{-1} P_VT,

by summing the series R_TV P_VV^k P_VT (finite when the vanishing graph is
acyclic; geometric otherwise), after checking that every vanishing marking can
reach a tangible one (otherwise the net has a *timeless trap*). The tangible
states are numbered in lexicographic order of their markings (places with more
distinct values first), and the generator is assembled by one compiled pass
(merge duplicate rates, diagonal = minus the row sum, sorted columns).

Memory: :func:`reach_memory_bytes` bounds the peak of exploring and solving a net
with a given state cap; :func:`explore` checks it, against the memory available,
every time its arrays grow, and refuses with :class:`~hetsched.errors.ModelError`
before allocating what the machine does not have.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._memory import ensure_fits
from ..errors import ModelError, SolverError
from . import _kernels as K
from .firing import _Evaluator, _fire
from .net import MarkingView, Net

__all__ = ["StateSpace", "CTMC", "explore", "to_ctmc", "reach_memory_bytes"]

DEFAULT_MAX_STATES = 5_000_000


@dataclass
class StateSpace:
    """The reachability graph (tangible and vanishing markings, all firings)."""

    net: Net
    markings: np.ndarray          # (n, P) int32
    vanishing: np.ndarray         # (n,) bool
    src: np.ndarray               # edges: source state
    dst: np.ndarray               # edges: target state
    trans: np.ndarray             # edges: transition index (net.transitions order)
    value: np.ndarray             # edges: rate (timed) or weight (immediate)
    seconds: float = 0.0
    scalar_fallbacks: list[str] = field(default_factory=list)

    @property
    def n_states(self) -> int:
        return int(self.markings.shape[0])

    @property
    def n_vanishing(self) -> int:
        return int(self.vanishing.sum())

    @property
    def n_tangible(self) -> int:
        return self.n_states - self.n_vanishing

    def scale_rate(self, tname: str, factor: float) -> "StateSpace":
        """A copy with the rate of timed transition ``tname`` multiplied by ``factor``.

        Valid when the rate is the only thing that changes (same guards, arcs and
        reachable markings), e.g. a sweep over an arrival rate: the graph is reused.
        """
        names = self.net.transition_names
        if tname not in names or not self.net.transition(tname).timed:
            raise ModelError(f"scale_rate: {tname!r} is not a timed transition of the net")
        if not (np.isfinite(factor) and factor > 0):
            raise ModelError(f"scale_rate: factor must be > 0, got {factor!r}")
        v = self.value.copy()
        v[self.trans == names.index(tname)] *= factor
        return StateSpace(self.net, self.markings, self.vanishing, self.src, self.dst, self.trans, v,
                          self.seconds, list(self.scalar_fallbacks))

    def stats(self) -> dict[str, Any]:
        """State-space statistics: counts, arcs, place bounds, generation time."""
        bounds = self.markings.max(axis=0) if self.n_states else np.zeros(0)
        return {
            "states": self.n_tangible,
            "vanishing": self.n_vanishing,
            "reachable": self.n_states,
            "arcs": int(self.src.shape[0]),
            "place_bounds": {p: int(b) for p, b in zip(self.net.place_names, bounds)},
            "generation_seconds": self.seconds,
        }


def reach_memory_bytes(net: Net, max_states: int = DEFAULT_MAX_STATES) -> int:
    """Estimated peak memory (bytes) of exploring and solving ``net`` with up to ``max_states`` markings.

    Per marking: the stored marking and its final copy (12 B per place), the hash
    table (32 B), the tangible numbering (24 B) and the steady-state vectors (80 B).
    Per firing - at most one per transition and marking - 120 B: the edge lists and
    their concatenation (56 B), the renumbered endpoints (16 B), and the generator's
    assembly buffers, scipy copy and CSC copy (36 B), with slack. An upper bound when
    every transition fires in every marking: for the 1,030,301-state gang GSPN of
    ``benchmarks/bench_srn.py`` (5 places, 9 transitions) it gives 0.99 GiB, and that
    run peaks at 0.83 GiB (VmHWM, interpreter included). The command line can call it
    to refuse a cap that cannot fit; :func:`explore` checks it, for the markings it
    is about to hold, every time its arrays grow.
    """
    if isinstance(max_states, bool) or not isinstance(max_states, (int, np.integer)) or max_states < 1:
        raise ModelError(f"max_states must be a positive integer, got {max_states!r}")
    P = max(1, len(net.place_names))
    T = max(1, len(net.transitions))
    per_state = 12 * P + 32 + 24 + 80 + 12 + 120 * T   # 12: the firing path (parent, transition)
    return int(max_states) * per_state


def _token_bounds(net: Net, max_tokens) -> np.ndarray | None:
    """The per-place token bound of :func:`explore` as an array (None: no bound)."""
    if max_tokens is None:
        return None
    names = net.place_names
    b = np.full(len(names), np.iinfo(np.int64).max, dtype=np.int64)
    if isinstance(max_tokens, dict):
        items = max_tokens.items()
    else:
        items = ((p, max_tokens) for p in names)
    for p, v in items:
        if p not in names:
            raise ModelError(f"max_tokens: unknown place {p!r}; known: {', '.join(names)}")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ModelError(f"max_tokens: the bound of place {p!r} must be an integer >= 0, got {v!r}")
        b[names.index(p)] = int(v)
    return b


def explore(net: Net, *, max_states: int = DEFAULT_MAX_STATES, chunk: int = 65536,
            max_tokens: int | dict[str, int] | None = None, detect_unbounded: bool = True) -> StateSpace:
    """Generate the reachability graph of ``net``.

    Parameters
    ----------
    net : Net
    max_states : int
        Stop with :class:`~hetsched.errors.ModelError` when more markings (tangible
        plus vanishing) are reached.
    chunk : int
        Markings processed per vectorised batch.
    max_tokens : int or dict, optional
        A token bound per place (an int for every place, or ``{place: bound}``): a
        reachable marking with more tokens in a place stops the exploration with a
        :class:`~hetsched.errors.ModelError` naming the place and the marking.
    detect_unbounded : bool
        Look for a proof of unboundedness while exploring (default): each time the number
        of markings doubles (from 64), a place whose largest token count grew is traced back
        along the firing path that reached its largest count; if an earlier marking on that
        path is covered by the later one (no fewer tokens anywhere, more in some places)
        and nothing that reads the growing places can stop the same firing sequence from
        repeating (see :mod:`hetsched.srn.bounded`), the net is unbounded and the
        exploration stops with a :class:`~hetsched.errors.ModelError` naming the place -
        long before ``max_states``.

    Returns
    -------
    StateSpace

    Notes
    -----
    Semantics (SPNP/GSPN): a marking is *vanishing* if some immediate transition is
    enabled (any priority, 0 included); there only the enabled immediate transitions of
    highest priority fire, with probability proportional to their weights; timed
    transitions fire only in tangible markings. An enabled transition has enough tokens
    on its input arcs, fewer tokens than the multiplicity on each inhibitor arc, a true
    guard, and its firing puts no place above its capacity. A timed transition with
    ``servers`` k fires at ``rate * min(k, enabling degree)``.
    """
    from .bounded import find_unbounded

    if isinstance(max_states, bool) or not isinstance(max_states, (int, np.integer)) or max_states < 1:
        raise ModelError(f"max_states must be a positive integer, got {max_states!r}")
    if max_states >= 2**31 - 1:
        raise ModelError(f"max_states must be below 2**31 - 1 (32-bit state indices), got {max_states!r}")
    t0 = time.perf_counter()
    names = net.place_names
    if not names:
        raise ModelError("the net has no places")
    trs = net.transitions   # none at all: the initial marking is the only (absorbing) one
    bound = _token_bounds(net, max_tokens)
    pidx = {p: j for j, p in enumerate(names)}
    caps = tuple((pidx[p], c) for p, c in net.capacities.items())
    P = len(names)
    ev = _Evaluator(pidx)
    imm = [(k, t) for k, t in enumerate(trs) if not t.timed]
    tim = [(k, t) for k, t in enumerate(trs) if t.timed]

    cap = 1024
    store = np.empty((cap, P), dtype=np.int32)
    parent = np.full(cap, -1, dtype=np.int64)     # the marking that first reached each one ...
    ptrans = np.full(cap, -1, dtype=np.int32)     # ... and the transition it fired
    table = np.full(4096, -1, dtype=np.int64)
    vanishing = np.zeros(cap, dtype=bool)
    m0 = net.initial_marking
    if bound is not None and (m0 > bound).any():
        j = int(np.argmax(m0 > bound))
        raise ModelError(f"max_tokens: place {names[j]!r} starts with {int(m0[j])} tokens, more than its bound "
                         f"{int(bound[j])}")
    n = K.insert_rows(table, store, 0, m0.astype(np.int32)[None, :], np.empty(1, np.int64))
    head = 0
    next_check = 64
    seen_max = m0.astype(np.int64).copy()
    E_src, E_dst, E_tr, E_val = [], [], [], []
    while head < n:
        hi = min(n, head + chunk)
        X = store[head:hi].astype(np.int64)
        B = hi - head
        cand_rows, cand_Y, cand_tr, cand_val = [], [], [], []
        # immediate transitions first: they decide which markings are vanishing
        maxprio = np.full(B, -1, dtype=np.int64)
        fired = []
        for k, t in imm:
            rows, Y, val = _fire(ev, t, X, pidx, caps)
            if rows.size:
                fired.append((k, t.priority, rows, Y, val))
                np.maximum.at(maxprio, rows, t.priority)
        for k, pr, rows, Y, val in fired:
            keep = maxprio[rows] == pr
            if keep.any():
                cand_rows.append(rows[keep]); cand_Y.append(Y[keep])
                cand_tr.append(np.full(int(keep.sum()), k, np.int32)); cand_val.append(val[keep])
        van = maxprio >= 0
        tang_rows = np.flatnonzero(~van)
        if tang_rows.size:
            XT = X[tang_rows]
            for k, t in tim:
                rows, Y, val = _fire(ev, t, XT, pidx, caps)
                if rows.size:
                    cand_rows.append(tang_rows[rows]); cand_Y.append(Y)
                    cand_tr.append(np.full(rows.size, k, np.int32)); cand_val.append(val)
        vanishing[head:hi] = van
        if cand_rows:
            Yall = np.concatenate(cand_Y)
            if Yall.max(initial=0) > np.iinfo(np.int32).max:
                raise ModelError("a place exceeded 2**31-1 tokens: the net is unbounded")
            Yall = Yall.astype(np.int32)
            E = Yall.shape[0]
            need = n + E
            if need > cap:
                newcap = max(need, 2 * cap)
                # refuse before allocating what the machine does not have
                ensure_fits(f"state space of net {net.name!r} (reached {n} markings, growing to {newcap})",
                            reach_memory_bytes(net, newcap))
                store = np.concatenate([store, np.empty((newcap - cap, P), np.int32)])
                vanishing = np.concatenate([vanishing, np.zeros(newcap - cap, bool)])
                parent = np.concatenate([parent, np.full(newcap - cap, -1, np.int64)])
                ptrans = np.concatenate([ptrans, np.full(newcap - cap, -1, np.int32)])
                cap = newcap
            if 2 * need > table.shape[0]:
                size = table.shape[0]
                while 2 * need > size:
                    size *= 2
                table = np.full(size, -1, dtype=np.int64)
                K.rehash(store, n, table)
            dst = np.empty(E, np.int64)
            n_old = n
            n = K.insert_rows(table, store, n, Yall, dst)
            src = np.concatenate(cand_rows).astype(np.int64) + head
            trn = np.concatenate(cand_tr)
            if n > n_old:  # first discoverer of each new marking: its parent on a firing path
                new_idx, first = np.unique(dst[dst >= n_old], return_index=True)
                sel = np.flatnonzero(dst >= n_old)[first]
                parent[new_idx] = src[sel]
                ptrans[new_idx] = trn[sel]
                if bound is not None:
                    over = store[n_old:n] > bound
                    if over.any():
                        i, j = np.argwhere(over)[0]
                        m = MarkingView(store[n_old + i].astype(np.int64), pidx)
                        raise ModelError(f"max_tokens: place {names[j]!r} reaches {int(store[n_old + i, j])} "
                                         f"tokens, more than its bound {int(bound[j])}, in marking {m!r}")
            E_src.append(src)
            E_dst.append(dst)
            E_tr.append(trn)
            E_val.append(np.concatenate(cand_val))
        if detect_unbounded and n >= next_check:
            next_check = 2 * n
            cur = store[:n].max(axis=0).astype(np.int64)
            grew = np.flatnonzero(cur > seen_max)
            seen_max = cur
            if grew.size:
                msg = find_unbounded(net, store, parent, ptrans, n, grew, ev.index)
                if msg:
                    raise ModelError(f"{msg}; found after {n} markings in {time.perf_counter() - t0:.2g} s")
        if n > max_states:
            bounds = store[:n].max(axis=0)
            j = int(np.argmax(bounds))
            raise ModelError(f"state space exceeds max_states={max_states} (reached {n} markings; place "
                             f"{names[j]!r} holds up to {int(bounds[j])} tokens): the net may be unbounded "
                             f"- add a capacity (guard or inhibitor arc) or raise max_states")
        head = hi
    cat = (lambda L, dt: np.concatenate(L) if L else np.zeros(0, dt))
    return StateSpace(
        net=net, markings=store[:n].copy(), vanishing=vanishing[:n].copy(),
        src=cat(E_src, np.int64), dst=cat(E_dst, np.int64), trans=cat(E_tr, np.int32),
        value=cat(E_val, np.float64), seconds=time.perf_counter() - t0,
        scalar_fallbacks=list(ev.fallbacks),
    )


@dataclass
class CTMC:
    """The tangible CTMC of a net: generator ``Q`` (CSR), markings, initial distribution."""

    Q: sp.csr_matrix
    markings: np.ndarray           # (n_T, P) tangible markings
    p0: np.ndarray                 # initial distribution over tangible states
    space: StateSpace
    t_src: np.ndarray              # timed firings from tangible states: source (tangible index)
    t_trans: np.ndarray            # ... transition index
    t_value: np.ndarray            # ... rate
    seconds: float = 0.0
    # vanishing markings (for the throughput of immediate transitions): their indices in the
    # state space, R_TV (rates tangible -> vanishing), P_VV, and every immediate firing
    # (source vanishing index, transition index, probability)
    van_states: np.ndarray | None = None
    rtv: sp.csr_matrix | None = None
    pvv: sp.csr_matrix | None = None
    v_src: np.ndarray | None = None
    v_trans: np.ndarray | None = None
    v_prob: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.Q.shape[0])

    def rate_vector(self, tname: str) -> np.ndarray:
        """Firing rate of timed transition ``tname`` in each tangible state."""
        names = self.space.net.transition_names
        if tname not in names:
            raise ModelError(f"rate(): unknown transition {tname!r}; known: {', '.join(names)}")
        k = names.index(tname)
        if not self.space.net.transition(tname).timed:
            raise ModelError(f"rate(): {tname!r} is immediate; rate() is defined for timed transitions")
        sel = self.t_trans == k
        return np.bincount(self.t_src[sel], weights=self.t_value[sel], minlength=self.n)


def _series(Y: sp.csr_matrix, P_VV: sp.csr_matrix, P_VT: sp.csr_matrix, tol: float = 1e-15,
            max_iter: int = 100_000) -> sp.csr_matrix:
    """sum_k Y P_VV^k P_VT (Y: rows x n_V)."""
    acc = Y @ P_VT
    scale = abs(Y).sum()
    it = 0
    while Y.nnz:
        Y = Y @ P_VV
        Y.eliminate_zeros()
        if Y.nnz == 0:
            break
        acc = acc + Y @ P_VT
        it += 1
        if abs(Y).sum() <= tol * scale:
            break
        if it >= max_iter:
            raise SolverError(f"vanishing-marking elimination did not converge in {max_iter} steps "
                              f"(long immediate-transition cycles)")
    return acc.tocsr()


def to_ctmc(space: StateSpace) -> CTMC:
    """Eliminate vanishing markings: the tangible CTMC of ``space``.

    Raises :class:`~hetsched.errors.ModelError` if some vanishing marking cannot
    reach a tangible one (a vanishing loop / timeless trap), or if no tangible
    marking is reachable.
    """
    t0 = time.perf_counter()
    n = space.n_states
    van = space.vanishing
    tang = ~van
    nT = int(tang.sum())
    if nT == 0:
        raise ModelError("no tangible marking is reachable: the net has a timeless trap "
                         "(immediate transitions fire forever)")
    loc = np.empty(n, np.int64)
    # tangible states in lexicographic order of their markings (see _marking_order): neighbours
    # in the chain become neighbours in memory, and Gauss-Seidel sweeps follow the queue-like places
    order = _marking_order(space.markings[tang])
    rank = np.empty(nT, np.int64)
    rank[order] = np.arange(nT)
    loc[tang] = rank
    loc[van] = np.arange(n - nT)
    nV = n - nT
    if nV == 0:  # no vanishing marking (a GSPN without immediate transitions): every edge is a rate
        ts, td, tv, ttr = space.src, space.dst, space.value, space.trans
        lts = loc[ts]
        Q = _generator(nT, lts, loc[td], tv)
        P_VV = P_VT = None
    else:
        s_t = tang[space.src]
        # timed firings from tangible markings
        ts, td, tv, ttr = space.src[s_t], space.dst[s_t], space.value[s_t], space.trans[s_t]
        lts = loc[ts]
        d_tt = tang[td]
        R_TV = sp.csr_matrix((tv[~d_tt], (lts[~d_tt], loc[td[~d_tt]])), shape=(nT, nV))
        vs, vd, vw = space.src[~s_t], space.dst[~s_t], space.value[~s_t]
        wsum = np.bincount(loc[vs], weights=vw, minlength=nV)
        prob = vw / wsum[loc[vs]]
        vdt = tang[vd]
        P_VT = sp.csr_matrix((prob[vdt], (loc[vs[vdt]], loc[vd[vdt]])), shape=(nV, nT))
        P_VV = sp.csr_matrix((prob[~vdt], (loc[vs[~vdt]], loc[vd[~vdt]])), shape=(nV, nV))
        _check_traps(space, P_VV, P_VT, loc)
        E = _series(R_TV, P_VV, P_VT).tocoo()
        Q = _generator(nT, np.concatenate([lts[d_tt], E.row.astype(np.int64)]),
                       np.concatenate([loc[td[d_tt]], E.col.astype(np.int64)]),
                       np.concatenate([tv[d_tt], E.data]))
    p0 = np.zeros(nT)
    if tang[0]:
        p0[loc[0]] = 1.0
    else:
        e = sp.csr_matrix(([1.0], ([0], [loc[0]])), shape=(1, nV))
        p0 = np.asarray(_series(e, P_VV, P_VT).todense()).ravel()
    extra = {}
    if nV:
        extra = dict(van_states=np.flatnonzero(van), rtv=R_TV.tocsr(), pvv=P_VV.tocsr(), v_src=loc[vs],
                     v_trans=space.trans[~s_t], v_prob=prob)
    return CTMC(Q=Q, markings=space.markings[tang][order], p0=p0, space=space,
                t_src=lts, t_trans=ttr, t_value=tv, seconds=time.perf_counter() - t0, **extra)


def _generator(n: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> sp.csr_matrix:
    """The CSR generator from off-diagonal rate triplets (compiled: merge, diagonal, sort)."""
    it = np.int32 if n + rows.size < 2**31 - 1 else np.int64
    indptr = np.empty(n + 1, it)
    indices = np.empty(rows.size + n, it)
    data = np.empty(rows.size + n)
    nnz = K.assemble_generator(n, rows, cols, vals, indptr, indices, data)
    Q = sp.csr_matrix((data[:nnz], indices[:nnz], indptr), shape=(n, n))
    Q.has_sorted_indices = True
    return Q


def _marking_order(M: np.ndarray) -> np.ndarray:
    """Permutation sorting markings lexicographically, places with more distinct values first.

    The place with the most distinct values (the longest, slowest direction of the chain,
    typically a queue) varies slowest; ties keep the net's place order. One stable argsort
    of a mixed-radix key when it fits in 63 bits, else ``np.lexsort``.
    """
    n, P = M.shape
    if n <= 1 or P == 0:
        return np.arange(n)
    lo = M.min(axis=0).astype(np.int64)
    span = M.max(axis=0).astype(np.int64) - lo + 1
    distinct = [np.count_nonzero(np.bincount(M[:, j].astype(np.int64) - lo[j])) if span[j] > 1 else 1
                for j in range(P)]
    keys = [j for j in sorted(range(P), key=lambda j: -distinct[j]) if distinct[j] > 1]
    if not keys:
        return np.arange(n)
    if float(np.prod([float(span[j]) for j in keys])) < 2.0**62:
        key = np.zeros(n, np.int64)
        for j in keys:
            key = key * span[j] + (M[:, j].astype(np.int64) - lo[j])
        return np.argsort(key, kind="stable")
    return np.lexsort([M[:, j] for j in reversed(keys)])


def _check_traps(space: StateSpace, P_VV, P_VT, loc) -> None:
    from scipy.sparse.csgraph import breadth_first_order

    nV = P_VV.shape[0]
    exits = np.flatnonzero(np.diff(P_VT.indptr) > 0)
    # reversed vanishing graph plus a sink node nV linked to every exit
    A = P_VV.T.tocoo()
    rows = np.concatenate([A.row, np.full(exits.size, nV)])
    cols = np.concatenate([A.col, exits])
    G = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(nV + 1, nV + 1))
    reached = breadth_first_order(G, nV, directed=True, return_predecessors=False)
    ok = np.zeros(nV + 1, bool)
    ok[reached] = True
    if not ok[:nV].all():
        bad_v = int(np.flatnonzero(~ok[:nV])[0])
        glob = np.flatnonzero(space.vanishing)[bad_v]
        m = MarkingView(space.markings[glob].astype(np.int64), {p: j for j, p in enumerate(space.net.place_names)})
        raise ModelError(f"vanishing loop (timeless trap): {int((~ok[:nV]).sum())} vanishing marking(s) never "
                         f"reach a tangible marking, e.g. {m!r}")
