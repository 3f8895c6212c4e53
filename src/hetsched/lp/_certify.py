"""The certificate every answer of the allocation LP passes: primal residuals and a
weak-duality bound from the reported class prices (see :func:`certify`)."""

from __future__ import annotations

import numpy as np

CERTIFIED = "optimal; certified by a dual price vector and the residuals"


def certify(d, lam_solver, w, mu, alpha, cap, solution, zero_tol):
    """Clean an answer and certify it: primal feasibility and a weak-duality bound.

    ``d`` is cleaned in place: entries below ``zero_tol`` become 0 and a machine
    whose fractions exceed its availability (by the solver's tolerance) has
    its column scaled down to it, so ``d`` is exactly feasible for (2.2)-(2.3).
    The reported ``lambda`` is the capacity it gives,
    ``min_i sum_j d_ij mu_ij / alpha_i``, a lower bound on ``lambda*``. For any
    ``w >= 0`` with ``alpha.w = 1``, ``sum_j cap_j max_i w_i mu_ij`` bounds
    ``lambda*`` from above (the dual objective with the best machine prices
    ``v_j = max_i w_i mu_ij``). Certified when the two bounds agree and the
    capacity reaches the solver's ``lambda``, within ``tol`` relative to
    ``lambda`` (1e-6 for vertices, 1e-5 for central solutions).
    Returns ``(ok, message, residuals, normalised w, lambda)``.
    """
    d[d <= zero_tol] = 0.0
    used = d.sum(axis=0)
    res_mach = float(np.max(np.clip(used - cap, 0, None), initial=0.0))
    over = used > cap
    if over.any():
        d[:, over] *= cap[over] / used[over]
    capacity = np.einsum("ij,ij->i", d, mu)
    lam = float((capacity / alpha).min())
    res_class = max(0.0, (lam_solver - lam) / abs(lam_solver)) if lam_solver != 0 else float(lam < 0)
    w = np.clip(w, 0, None)
    ws = float(alpha @ w)
    if ws > 0 and np.isfinite(ws):
        wn = w / ws
        dual_bound = float(cap @ (wn[:, None] * mu).max(axis=0))
    else:
        wn, dual_bound = w, float("inf")
    gap = (dual_bound - lam) / lam if lam > 0 else (0.0 if dual_bound == 0 else float("inf"))
    residuals = {"class_rows": res_class, "machine_rows": res_mach, "duality_gap": gap,
                 "dual_bound": dual_bound, "primal_bound": lam}
    tol = 1e-6 if solution == "vertex" else 1e-5
    ok = res_class <= tol and res_mach <= tol and abs(gap) <= tol
    msg = CERTIFIED if ok else (
        f"solved, but the certificate failed (class rows {res_class:.2e}, machine rows {res_mach:.2e}, "
        f"relative duality gap {gap:.2e})")
    return ok, msg, residuals, wn, lam
