"""pymdptoolbox interchange: the uniformized discounted problem out, a discrete-time MDP in.

:func:`to_mdptoolbox` returns ``(P, R, discount)`` with ``P[a]`` an ``S x S``
sparse stochastic matrix and ``R`` of shape ``S x A`` (rewards: the *negative*
stage cost, because pymdptoolbox maximizes); :func:`from_mdptoolbox` reads that
convention back (a discrete-time MDP with discount ``alpha`` equals the CTMDP
with rates ``P``, cost rate ``-R/alpha`` and ``beta = (1 - alpha)/alpha``),
vectorized over state-action pairs (no Python loop over pairs).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from .model import CTMDP
from .operators import _check_beta, _uniform_rate

__all__ = ["to_mdptoolbox", "from_mdptoolbox"]


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
    if A == 0:
        raise ModelError("P: need at least one action (a list of S x S matrices)")
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
        if m.shape != (S, S) or (m.nnz and (m.data.min() < 0 or not np.all(np.isfinite(m.data)))):
            raise ModelError(f"P[{a}]: expected an {S}x{S} (sub)stochastic matrix")
    sums = np.vstack([np.asarray(m.sum(axis=1)).ravel() for m in mats])  # (A, S) row sums
    if sums.max(initial=0) > 1 + 1e-9:
        a = int(np.argmax(sums.max(axis=1)))
        raise ModelError(f"P[{a}]: expected an {S}x{S} (sub)stochastic matrix (a row sums to {sums[a].max():.6g})")
    beta = (1 - disc) / disc
    kills = np.clip(1.0 - sums, 0.0, None)
    kills[kills < 1e-12] = 0.0
    adm = np.ones((S, A), bool) if admissible is None else np.asarray(admissible, bool)
    if adm.shape != (S, A):
        raise ModelError(f"admissible: expected shape ({S}, {A}), got {adm.shape}")
    s_idx, a_idx = np.nonzero(adm)
    Rall = sp.vstack(mats, format="csr")[a_idx * S + s_idx]
    model = CTMDP.from_pairs(s_idx, a_idx, Rall, -R[s_idx, a_idx] / disc, S, kill=kills[a_idx, s_idx])
    return model, beta
