"""Markov automata: instantaneous choices beside exponential delays, by policy iteration with elimination.

A Markov automaton has *Markovian* states (one choice: rates ``q(m, .)``, exit
rate ``E(m)``; time passes) and *instantaneous* states (choices of probability
distributions; no time passes). Rewards: a Markovian state earns its state reward
per time unit plus its action reward at each jump (``E(m) x`` per time unit) and
its transition rewards; an instantaneous choice earns its action and transition
rewards once (state rewards of instantaneous states earn nothing: no time).

For a fixed choice ``sigma`` in every instantaneous state, eliminating them gives a
CTMC on the Markovian states (:func:`eliminate`): with ``B = (I - P_II)^{-1} P_IM``
(where an instantaneous path ends) and ``u = (I - P_II)^{-1} r_I`` (the reward it
collects), the rates into instantaneous states become ``q_mI B`` and the cost rate
gains ``q_mI u``. Values extend to instantaneous states by ``J_I = u + B J_M``
(discounted), ``g_I = B g_M`` and ``h_I = u + B h_M`` (average).

Policy iteration over ``sigma`` (:func:`solve_automaton`): evaluate the eliminated
CTMC exactly (discounted: sparse LU of ``(beta I - Q) J = c``; average: the
multichain evaluation of :mod:`hetsched.mdp.average`); improve each instantaneous
state's choice — discounted: ``min_a r(i, a) + sum_t P(i, a, t) J(t)``; average,
as semi-Markov multichain policy iteration with zero sojourn time (Puterman 1994,
§11.4): first the gain ``min_a sum_t P(i, a, t) g(t)``, then among gain-optimal
choices the bias ``min_a r(i, a) + sum_t P(i, a, t) h(t)`` — keeping the current
choice unless another is better by a relative ``1e-12``. It stops when no choice
changes. Models in which instantaneous choices can loop forever without reaching
a Markovian state (Zeno behaviour: no value is defined) are refused by name.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ModelError, SolverError
from .filemodel import MarkovModel, Reward
from .model import CTMDP

__all__ = ["zeno_states", "eliminate", "solve_automaton"]


def zeno_states(m: MarkovModel) -> np.ndarray:
    """Instantaneous states from which some choices avoid every Markovian state forever (greatest fixpoint)."""
    mk = np.asarray(m.markovian, bool)
    cs = m.choice_state
    inst_choice = ~mk[cs]
    X = ~mk  # candidate set: instantaneous states
    M = m.matrix.tocsr()
    while True:
        # a choice stays in X when all its targets are in X
        out_of_X = M @ (~X).astype(float) > 0
        ok = inst_choice & ~out_of_X & X[cs]
        keep = np.zeros(m.n_states, bool)
        keep[cs[ok]] = True
        new = X & keep
        if np.array_equal(new, X):
            return np.flatnonzero(X)
        X = new


def _choice_reward(m: MarkovModel, r: Reward) -> np.ndarray:
    """Per choice: action reward + expected transition reward (impulses, collected once per step)."""
    out = np.zeros(m.n_choices)
    if r.action is not None:
        out += r.action
    if r.transition is not None:
        out += np.asarray(m.matrix.multiply(r.transition).sum(axis=1)).ravel()
    return out


def _absorb(P_II: sp.csr_matrix, P_IM: sp.csr_matrix, r_I: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """``B = (I - P_II)^-1 P_IM`` (sparse) and ``u = (I - P_II)^-1 r_I``.

    Where the instantaneous choices form no cycle (``P_II`` nilpotent, the usual case)
    the series ``sum_k P_II^k`` ends after the longest instantaneous path and is
    exact, with sparse products only; otherwise one sparse LU, solved for the
    columns of ``P_IM`` that have entries (a dense right-hand side of every
    Markovian state cost seconds per solve on a 3,873-state automaton).
    """
    from scipy.sparse.csgraph import connected_components

    n = P_II.shape[0]
    P_II = P_II.copy()
    P_II.eliminate_zeros()
    acyclic = not P_II.diagonal().any() and connected_components(P_II, connection="strong")[0] == n
    if acyclic:  # P_II is nilpotent: the series ends within n steps
        X, B = P_IM, P_IM.copy()
        y, u = r_I.copy(), r_I.copy()
        for _ in range(n):
            X = P_II @ X
            X.eliminate_zeros()
            y = P_II @ y
            if X.nnz == 0 and not np.any(y):
                break
            B = B + X
            u = u + y
        return B.tocsr(), u
    try:
        lu = spla.splu((sp.identity(n, format="csc") - P_II).tocsc())
    except RuntimeError as exc:
        raise SolverError(f"Markov automaton: instantaneous states cannot be eliminated ({exc})") from exc
    cols = np.unique(P_IM.indices)  # Markovian states some instantaneous choice enters
    sol = lu.solve(np.asfortranarray(P_IM[:, cols].toarray())) if cols.size else np.zeros((n, 0))
    scatter = sp.csr_matrix((np.ones(cols.size), (np.arange(cols.size), cols)), shape=(cols.size, P_IM.shape[1]))
    B = sp.csr_matrix(sol) @ scatter
    return sp.csr_matrix(B), lu.solve(r_I)


def eliminate(m: MarkovModel, r: Reward, sigma: np.ndarray) -> dict[str, Any]:
    """The CTMC on the Markovian states under the choices ``sigma`` (global choice index per state)."""
    mk = np.asarray(m.markovian, bool)
    M_idx, I_idx = np.flatnonzero(mk), np.flatnonzero(~mk)
    A = m.matrix[sigma]  # one row per state
    imp = _choice_reward(m, r)[sigma]
    P_II, P_IM = A[I_idx][:, I_idx].tocsr(), A[I_idx][:, M_idx].tocsr()
    if I_idx.size:
        B, u = _absorb(P_II, P_IM, imp[I_idx])
    else:
        B, u = sp.csr_matrix((0, M_idx.size)), np.zeros(0)
    Q = A[M_idx]
    q_MI = Q[:, I_idx]
    R = sp.csr_matrix(Q[:, M_idx] + q_MI @ B) if I_idx.size else sp.csr_matrix(Q[:, M_idx])
    cost = np.zeros(M_idx.size)
    if r.state is not None:
        cost += r.state[M_idx]
    if r.action is not None:  # collected at every jump, self-loops included
        cost += np.asarray(Q.sum(axis=1)).ravel() * r.action[sigma[M_idx]]
    if r.transition is not None:
        cost += np.asarray(Q.multiply(r.transition[sigma[M_idx]]).sum(axis=1)).ravel()
    if I_idx.size:
        cost += q_MI @ u
    return {"R": R, "cost": cost, "M": M_idx, "I": I_idx, "B": B, "u": u}


def _segmin(vals: np.ndarray, starts: np.ndarray, cs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-state minimum over its choices and the first choice attaining it."""
    vmin = np.minimum.reduceat(vals, starts)
    idx = np.arange(vals.size)
    kmin = np.minimum.reduceat(np.where(vals <= vmin[cs], idx, vals.size), starts)
    return vmin, kmin


def _extend(e: dict[str, Any], vm: np.ndarray, S: int, add_u: bool) -> np.ndarray:
    v = np.empty(S)
    v[e["M"]] = vm
    if e["I"].size:
        v[e["I"]] = e["B"] @ vm + (e["u"] if add_u else 0.0)
    return v


def solve_automaton(m: MarkovModel, r: Reward, criterion: str, beta: float | None, sign: float,
                    max_iter: int = 1000, rtol: float = 1e-12) -> dict[str, Any]:
    """Optimal values of a Markov automaton by policy iteration over its instantaneous choices (module docstring).

    Works on costs ``sign x reward``; returns ``{"values", "policy" (choice within each state), "iterations",
    "status", "message", "n_markovian"}`` with values in cost terms.
    """
    from .average import _evaluate_multichain, recurrent_classes

    t0 = time.perf_counter()
    zeno = zeno_states(m)
    if zeno.size:
        raise ModelError(f"state {int(zeno[0])} of the Markov automaton can loop through instantaneous choices "
                         f"without ever reaching a Markovian state ({zeno.size} such states: Zeno behaviour, no "
                         "discounted or long-run value)")
    rs = Reward(None if r.state is None else sign * r.state, None if r.action is None else sign * r.action,
                None if r.transition is None else sign * r.transition)
    S = m.n_states
    cs = m.choice_state
    mk = np.asarray(m.markovian, bool)
    starts = m.state_ptr[:-1]
    sigma = starts.copy()  # the first choice of every state
    imp = _choice_reward(m, rs)  # what an instantaneous choice collects once
    scale_c = max(float(np.abs(imp).max(initial=0.0)),
                  float(np.abs(rs.state).max(initial=0.0)) if rs.state is not None else 0.0, 1e-300)
    it = 0
    n_classes = None  # recurrent classes of the last policy's CTMC (average criterion)
    while True:
        e = eliminate(m, rs, sigma)
        n = e["M"].size
        if criterion == "discounted":
            Q = e["R"] - sp.diags(np.asarray(e["R"].sum(axis=1)).ravel())
            try:
                vm = spla.splu((beta * sp.identity(n, format="csc") - Q).tocsc()).solve(e["cost"]) if n else \
                    np.zeros(0)
            except RuntimeError as exc:
                raise SolverError(f"Markov automaton: evaluation failed ({exc})") from exc
            values = _extend(e, vm, S, True)
            qv = imp + m.matrix @ values
            best, kbest = _segmin(qv, starts, cs)
            tol = rtol * max(float(np.abs(values).max(initial=0.0)), scale_c)
            new = np.where(~mk & (qv[sigma] > best + tol), kbest, sigma)
        else:
            c = CTMDP.from_pairs(np.arange(n), np.zeros(n, dtype=np.int64), e["R"], e["cost"], n)
            cls = recurrent_classes(c.R)
            n_classes = int(cls.max(initial=-1)) + 1
            gm, hm = _evaluate_multichain(c, np.arange(n), cls)
            values = _extend(e, gm, S, False)
            h = _extend(e, hm, S, True)
            G = m.matrix @ values
            gmin, kg = _segmin(G, starts, cs)
            tol_g = rtol * max(float(np.abs(values).max(initial=0.0)), scale_c)
            improve = ~mk & (G[sigma] > gmin + tol_g)
            if improve.any():  # gain step first (Puterman's two steps)
                new = np.where(improve, kg, sigma)
            else:  # bias step among the gain-optimal choices
                Hq = imp + m.matrix @ h
                hmin, kh = _segmin(np.where(G <= gmin[cs] + tol_g, Hq, np.inf), starts, cs)
                tol_h = rtol * max(float(np.abs(h).max(initial=0.0)), scale_c)
                new = np.where(~mk & (Hq[sigma] > hmin + tol_h), kh, sigma)
        it += 1
        if np.array_equal(new, sigma) or it >= max_iter:
            break
        sigma = new
    ok = np.array_equal(new, sigma)
    return {"values": values, "policy": sigma - m.state_ptr[:-1], "iterations": it, "status": 0 if ok else 1,
            "message": ("converged: no instantaneous choice improves" if ok else
                        f"not converged after {it} iterations"),
            "n_markovian": int(mk.sum()), "n_classes": n_classes, "seconds": time.perf_counter() - t0}
