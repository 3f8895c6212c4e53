"""Uniformized Bellman operators shared by the solvers, and the discounted certificate.

``q_values`` and ``_segment_min`` are one sparse product and one segmented
minimum over all state-action pairs (no Python loop over states); ``_certify``
evaluates the MacQueen bounds of :func:`hetsched.mdp.discounted.value_iteration`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ModelError
from .model import CTMDP


def _scaled_rows(model: CTMDP, beta: float, row_ptr: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rates and costs divided by ``beta + q(s, a)`` once, so a sweep has no division.

    Only the path of the iterates uses them; the stopping rule uses the model's own arrays.
    """
    inv = 1.0 / (beta + model.out)
    return vals * np.repeat(inv, np.diff(row_ptr)), model.cost * inv



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


def splu(A: Any) -> Any:
    """scipy's sparse LU (``scipy.sparse.linalg.splu``), imported on first use: value iteration never needs it."""
    from scipy.sparse.linalg import splu as _splu

    return _splu(A)
