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


#: systems up to this size are solved by sparse LU; larger ones by ILU-preconditioned GMRES (LU fill-in on the
#: generator of a 6,520-state CTMC, the flexible manufacturing system with n = 3, was 12 million entries, 35 s)
DIRECT_MAX = 2_000


def linsolve(A: Any, b: np.ndarray, what: str = "linear system", ilu_of_transpose: bool = False) -> np.ndarray:
    """Solve the sparse nonsingular system ``A x = b`` (one right-hand side); re-checked.

    Up to :data:`DIRECT_MAX` unknowns: SuperLU. Beyond: BiCGSTAB, then GMRES(50), both
    preconditioned by an incomplete LU (drop tolerance 1e-4) with relative tolerance
    1e-12 (``ilu_of_transpose``: the incomplete LU of ``A^T``, applied transposed — for
    systems in the rows of a generator, ``Q h = r``), each accepted only when the residual ``|A x - b|`` is within ``1e-10 (|A| |x| +
    |b|)`` (infinity norms); otherwise SuperLU. A singular or unsolvable system raises :class:`SolverError`.
    """
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from ..errors import SolverError

    A = sp.csc_matrix(A)
    n = A.shape[0]
    b = np.asarray(b, dtype=float)
    if n == 0:
        return np.zeros(0)
    if n > DIRECT_MAX:
        try:
            if ilu_of_transpose:  # rows of a generator: SuperLU's ILU of the transpose is the stable one
                ilu = spla.spilu(A.T.tocsc(), drop_tol=1e-4, fill_factor=10)
                M = spla.LinearOperator(A.shape, lambda x: ilu.solve(x, "T"))
            else:
                ilu = spla.spilu(A, drop_tol=1e-4, fill_factor=10)
                M = spla.LinearOperator(A.shape, ilu.solve)
            absA = float(abs(A).sum(axis=1).max())
            for run in (lambda: spla.bicgstab(A, b, M=M, rtol=1e-12, atol=0.0, maxiter=2000),
                        lambda: spla.gmres(A, b, M=M, rtol=1e-12, atol=0.0, restart=50, maxiter=20)):
                x, _ = run()
                scale = absA * float(np.abs(x).max(initial=0.0)) + float(np.abs(b).max(initial=0.0))
                if np.all(np.isfinite(x)) and float(np.abs(A @ x - b).max(initial=0.0)) <= 1e-10 * max(scale, 1e-300):
                    return x
        except (RuntimeError, ValueError):  # ILU breakdown (a zero pivot): fall back to the direct solver
            pass
    try:
        x = splu(A).solve(b)
    except (RuntimeError, MemoryError, ValueError) as exc:
        raise SolverError(f"{what}: the system could not be solved ({exc})") from exc
    if not np.all(np.isfinite(x)):
        raise SolverError(f"{what}: the solution is not finite (a singular system?)")
    return x
