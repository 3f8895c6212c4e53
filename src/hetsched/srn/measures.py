"""Measures of a solved net: expected tokens, throughput of every transition, GreatSPN indices.

Throughput of a timed transition ``t``: ``X(t) = sum_s pi(s) rate_t(s)`` over the
tangible markings. An immediate transition fires in vanishing markings, which
take no time; its throughput is the rate at which it fires there. The rate at
which the chain enters each vanishing marking, counting re-entries through
chains of immediate firings, is ``x_V = (pi R_TV) (I - P_VV)^{-1}`` (one sparse
solve), and ``X(t) = sum_v x_V(v) P(t fires in v)``. These are GreatSPN's
definitions; the token flow of every place then balances (``sum_t X(t) (out -
in)`` = 0 in steady state), which ``tests/srn/test_srn_files.py`` checks.

GreatSPN performance indices (``expr.parse_measure``): ``E{f}`` = ``sum_s pi(s)
f(s)``; ``E{f / c}`` = ``E{f 1_c} / P{c}``; ``P{c}`` = ``sum_s pi(s) 1_c(s)``;
``X{T}`` as above; ``X{T / c}`` counts only firings from markings where ``c``
holds and divides by ``P{c}``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ModelError
from .expr import Measure
from .net import MarkingView
from .reach import CTMC

__all__ = ["token_means", "firings", "throughputs", "evaluate_measure"]


def token_means(ctmc: CTMC, pi: np.ndarray) -> np.ndarray:
    """Expected number of tokens of each place (net order)."""
    return pi @ ctmc.markings.astype(np.float64)


def vanishing_visits(ctmc: CTMC, pi: np.ndarray) -> np.ndarray:
    """Rate of entering each vanishing marking in steady state (module docstring)."""
    if ctmc.rtv is None:
        return np.zeros(0)
    b = ctmc.rtv.T @ pi
    nV = b.size
    A = (sp.identity(nV, format="csc") - ctmc.pvv.T.tocsc()).tocsc()
    return spla.splu(A, permc_spec="COLAMD").solve(b)


def firings(ctmc: CTMC, pi: np.ndarray):
    """Every firing with its steady-state rate: ``(source markings, transition index, flow)``,
    timed firings from tangible markings and immediate ones from vanishing markings."""
    flows = [pi[ctmc.t_src] * ctmc.t_value]
    src = [ctmc.markings[ctmc.t_src]]
    trans = [ctmc.t_trans]
    if ctmc.rtv is not None:
        xv = vanishing_visits(ctmc, pi)
        flows.append(xv[ctmc.v_src] * ctmc.v_prob)
        src.append(ctmc.space.markings[ctmc.van_states[ctmc.v_src]])
        trans.append(ctmc.v_trans)
    return np.concatenate(src), np.concatenate(trans), np.concatenate(flows)


def throughputs(ctmc: CTMC, pi: np.ndarray) -> np.ndarray:
    """Throughput of each transition (net order), timed and immediate."""
    _, trans, flow = firings(ctmc, pi)
    return np.bincount(trans, weights=flow, minlength=len(ctmc.space.net.transitions))


def _values(f, X: np.ndarray, index: dict) -> np.ndarray:
    v = np.asarray(f(MarkingView(X.astype(np.int64), index)), dtype=np.float64)
    return np.broadcast_to(v, (X.shape[0],)) if v.shape == () else v


def evaluate_measure(m: Measure, ctmc: CTMC, pi: np.ndarray, fire=None) -> float:
    """The value of a GreatSPN performance index on a solved net (module docstring).

    ``fire``: the output of :func:`firings`, if already computed.
    """
    net = ctmc.space.net
    index = {p: j for j, p in enumerate(net.place_names)}
    names = net.transition_names
    total = 0.0
    with np.errstate(all="ignore"):
        for coef, kind, arg, cond in m.terms:
            c = None if cond is None else _values(cond.fn, ctmc.markings, index).astype(bool)
            pc = 1.0 if c is None else float(pi[c].sum())
            if kind == "P":
                v = float(pi @ _values(arg.fn, ctmc.markings, index).astype(bool))
            elif kind == "E":
                f = _values(arg.fn, ctmc.markings, index)
                v = float(pi @ (f if c is None else np.where(c, f, 0.0))) / pc
            else:
                if fire is None:
                    fire = firings(ctmc, pi)
                X, trans, flow = fire
                sel = trans == names.index(arg)
                if cond is not None:
                    sel &= _values(cond.fn, X, index).astype(bool)
                v = float(flow[sel].sum()) / pc
            if not np.isfinite(v):
                raise ModelError(f"measure {m.text!r}: the value is not finite (a condition that never holds?)")
            total += coef * v
    return total
