"""Proofs of unboundedness found while exploring (used by :func:`hetsched.srn.reach.explore`).

A net is unbounded when a reachable marking ``m`` leads, by a firing sequence
``s``, to a marking ``m' = m + d`` with ``d >= 0`` and ``d != 0`` (``m'`` *covers*
``m``), and ``s`` can fire again from ``m'``, and from ``m' + d``, and so on: then
``m + k d`` is reachable for every ``k`` and every place with ``d_p > 0`` grows
without limit. For a place/transition net (Karp and Miller) the covering alone
is the proof, because more tokens never disable a transition. A stochastic net
has features that can: inhibitor arcs, capacities, guards, marking-dependent
rates, weights and arcs, and the priority of immediate over timed transitions
(a newly enabled immediate transition makes a marking vanishing). So the
covering is accepted as a proof only when, at every marking ``m_i`` of the
sequence, every transition is enabled or disabled *for a reason the growing
places cannot change*:

* an input arc from a growing place that is satisfied at ``m_i`` stays satisfied
  (more tokens); one that is not is no such reason;
* an inhibitor arc from a growing place that inhibits at ``m_i`` keeps inhibiting;
  one that does not is no such reason;
* a growing place may not have a capacity;
* guards, rates, weights and marking-dependent multiplicities may not read a
  growing place (the places a function reads are recorded while it runs, so for a
  pure function of the marking the same values give the same result);
* everything about the other places is unchanged along ``m_i + k d``.

Then every ``m_i + k d`` has the same enabled transitions, the same
vanishing/tangible status, the same priorities, positive rates and weights and
the same effects as ``m_i``, so ``s`` repeats forever. Otherwise no conclusion is
drawn (the exploration goes on to ``max_states``).
"""

from __future__ import annotations

import numpy as np

from .net import MarkingView, Net, RecordingView

__all__ = ["find_unbounded"]

#: longest firing path traced back from a marking (a narrow chain is at most this deep when checked)
MAX_DEPTH = 200_000
#: places examined per check
MAX_PLACES = 4


class _NoProof(Exception):
    """A function read a growing place, or raised: no conclusion."""


def _eval(f, X: np.ndarray, index: dict, growing: set[str]) -> np.ndarray:
    """``f`` on the batch ``X`` (per marking if it is written for scalars); raises :class:`_NoProof`
    if it reads a growing place or fails."""
    seen: set[str] = set()
    B = X.shape[0]
    try:
        v = np.asarray(f(RecordingView(X, index, seen)))
        if v.shape == ():
            v = np.broadcast_to(v, (B,))
        if v.shape != (B,):
            raise ValueError("shape")
    except Exception:  # noqa: BLE001 - scalar-only function
        seen.clear()
        try:
            v = np.asarray([f(RecordingView(X[i], index, seen)) for i in range(B)])
        except Exception as exc:  # noqa: BLE001
            raise _NoProof from exc
    if seen & growing:
        raise _NoProof
    return v


def _robust(net: Net, X: np.ndarray, growing: set[str], index: dict) -> bool:
    """True if at each marking (row of ``X``) every transition is enabled or disabled for a reason
    the growing places cannot change, and nothing it does depends on them (module docstring).

    Each condition of enabling is *stable* (same value at every ``m_i + k d``) or not: a
    satisfied input arc from a growing place and an inhibiting inhibitor arc from one are
    stable; an unsatisfied input arc and a non-inhibiting inhibitor arc from one are not;
    conditions on the other places are. A transition is robust at ``m_i`` if it is enabled
    and every condition is stable, or disabled by at least one stable false condition.
    """
    caps = net.capacities
    if any(p in caps for p in growing):
        return False
    B = X.shape[0]
    try:
        for t in net.transitions:
            enabled = np.ones(B, dtype=bool)
            stable_false = np.zeros(B, dtype=bool)
            unstable_true = np.zeros(B, dtype=bool)
            mult = {}
            for p, m in t.inputs:
                w = _eval(m, X, index, growing).astype(np.int64) if callable(m) else m
                mult[p] = mult.get(p, 0) - w
                ok = X[:, index[p]] >= w
                enabled &= ok
                if p not in growing:
                    stable_false |= ~ok
            for p, m in t.inhibitors:
                w = _eval(m, X, index, growing).astype(np.int64) if callable(m) else m
                inhibited = (X[:, index[p]] >= w) & (np.asarray(w) > 0)
                enabled &= ~inhibited
                stable_false |= inhibited          # more tokens keep it inhibiting
                if p in growing:
                    unstable_true |= ~inhibited
            if t.guard is not None:
                g = _eval(t.guard, X, index, growing).astype(bool)
                enabled &= g
                stable_false |= ~g
            for p, m in t.outputs:
                w = _eval(m, X, index, growing).astype(np.int64) if callable(m) else m
                mult[p] = mult.get(p, 0) + w
            for p, c in caps.items():               # no capacity on a growing place (checked above)
                if p in mult:
                    ok = X[:, index[p]] + mult[p] <= c
                    enabled &= ok
                    stable_false |= ~ok
            if callable(t.value):
                v = np.asarray(_eval(t.value, X, index, growing), dtype=float)
                stable_false |= v <= 0
                enabled &= v > 0
            if (enabled & unstable_true).any() or (~enabled & ~stable_false).any():
                return False
    except _NoProof:
        return False
    return True


def find_unbounded(net: Net, store: np.ndarray, parent: np.ndarray, ptrans: np.ndarray, n: int,
                   grew: np.ndarray, index: dict) -> str | None:
    """A one-line proof that the net is unbounded, or None (see the module docstring).

    ``store[:n]`` are the markings found so far, ``parent``/``ptrans`` the marking and
    transition that first reached each, ``grew`` the columns of the places whose largest
    token count grew since the last check.
    """
    names = net.place_names
    trs = net.transitions
    M = store[:n]
    order = grew[np.argsort(-M[:, grew].max(axis=0), kind="stable")][:MAX_PLACES]
    for j in order:
        col = M[:, j]
        top = int(n - 1 - np.argmax(col[::-1] == col.max()))   # the latest marking with the most tokens
        chain = [top]
        while parent[chain[-1]] >= 0 and len(chain) < MAX_DEPTH:
            chain.append(int(parent[chain[-1]]))
        A = M[np.array(chain[1:], dtype=np.int64)] if len(chain) > 1 else np.zeros((0, M.shape[1]), M.dtype)
        mstar = M[top]
        cover = np.flatnonzero((A <= mstar).all(axis=1) & (A < mstar).any(axis=1))
        if cover.size == 0:
            continue
        k = int(cover[0]) + 1                            # chain[k] is the covered ancestor
        path = chain[k::-1]                              # m = path[0] -> ... -> m* = path[-1]
        d = mstar.astype(np.int64) - M[path[0]].astype(np.int64)
        growing = {names[i] for i in np.flatnonzero(d > 0)}
        X = M[np.array(path[:-1], dtype=np.int64)].astype(np.int64)
        if not _robust(net, X, growing, index):
            continue
        seq = [trs[int(ptrans[i])].name for i in path[1:]]
        shown = ", ".join(seq[:8]) + (f", ... ({len(seq)} firings)" if len(seq) > 8 else "")
        gained = ", ".join(f"{names[i]!r} +{int(d[i])}" for i in np.flatnonzero(d > 0))
        m = MarkingView(M[path[0]].astype(np.int64), index)
        return (f"net {net.name!r} is unbounded: place {names[j]!r} grows without limit - from the reachable "
                f"marking {m!r} the firing sequence {shown} adds tokens ({gained}) and removes none, and no "
                f"inhibitor arc, capacity, guard, priority or marking-dependent function can stop it repeating; "
                f"add a capacity or an inhibitor arc to bound it")
    return None
