"""Layer 1 of the decentralized-grid model: validate once, turn the system into the kernel's arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..._memory import ensure_fits
from ...errors import ModelError
from ...policies.user import DEFAULT_TIE, TIE_RULES, tie_code
from ..core.instability import check_bound, default_bound

__all__ = ["prepare", "Prepared", "POLICY_CODES", "PROPAGATION", "INACCURACY_DRAWS", "TIES", "DEFAULT_TIE", "per_machine_alpha",
           "OPTIONS"]

POLICY_CODES = {"mct": 0, "kpb": 1, "lpas-dec": 2}
PROPAGATION = ("messages", "instant")
#: when an estimation error E is drawn (§4.3.2): once per rate value (kept until the rate changes), or
#: afresh in every report of a machine's rates (each message, and the deciding machine's own rates; default)
INACCURACY_DRAWS = ("per-rate", "per-message")
TIES = TIE_RULES
#: options :func:`prepare` takes besides ``k`` and ``horizon``
OPTIONS = ("warmup", "inaccuracy", "inaccuracy_draw", "rate_changes", "cpu_changes", "propagation", "include_local",
           "tie", "max_in_system", "log")


@dataclass
class Prepared:
    """Everything a replication needs (picklable): the kernel's :class:`~.kernel.Params` and sizes."""

    policy: str
    params: tuple  # kernel.Params
    N: int
    M: int
    k: int | None
    horizon: float
    warmup: float
    bound: int
    log: int
    lambda_star: float | None
    options: dict = field(default_factory=dict)
    scenario: str = ""
    class_names: tuple | None = None


def per_machine_alpha(system) -> np.ndarray:
    """``N x M`` arrival rates ``alpha_ij``: ``System.alpha_matrix``, else ``alpha_i / M`` (§4.3.3)."""
    if system.alpha_matrix is not None:
        return np.asarray(system.alpha_matrix, dtype=float)
    return np.repeat(system.alpha_array[:, None] / system.M, system.M, axis=1)


def _a_choices(system) -> np.ndarray:
    chains = [g.cpu_chain for g in system.groups]
    if any(c is None for c in chains):
        return np.unique(system.a)
    return np.array([c.mean_availability() for c in chains])


def _finite(name, v, lo, hi=None, hi_open=False, lo_open=False):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
        raise ModelError(f"{name} must be a finite number, got {v!r}")
    if v < lo or (lo_open and v == lo) or (hi is not None and (v > hi or (hi_open and v == hi))):
        rng = f"{'(' if lo_open else '['}{lo:g}, {'inf' if hi is None else f'{hi:g}'}{')' if hi_open or hi is None else ']'}"
        raise ModelError(f"{name} must lie in {rng}, got {v!r}")
    return float(v)


def prepare(system, policy: str, *, k: int | None = None, horizon: float = 200_000.0, warmup: float = 0.0,
            inaccuracy: float = 0.0, inaccuracy_draw: str = "per-message", rate_changes: bool | None = None,
            cpu_changes: bool | None = None,
            propagation: str = "messages", include_local: bool = False, tie: str = DEFAULT_TIE,
            max_in_system: int | None = None, log: int = 0) -> Prepared:
    """Validate and turn ``system`` + ``policy`` into the kernel's arrays (see :func:`.run.simulate`)."""
    from .kernel import Params

    key = str(policy).strip().lower()
    if key not in POLICY_CODES:
        raise ModelError(f"policy {policy!r} is not a decentralized-grid policy; known: {', '.join(POLICY_CODES)}")
    mu0 = np.ascontiguousarray(system.mu, dtype=float)
    N, M = mu0.shape
    kbar = 0
    if key == "kpb":
        if k is None:
            raise ModelError("policy 'kpb' needs k (k-bar, the number of machines considered per class)")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= M:
            raise ModelError(f"k must be an integer in [1, {M}] (machines per class), got {k!r}")
        kbar = int(k)
    elif k is not None:
        raise ModelError(f"option k applies to policy 'kpb' only, got k={k!r} with policy {key!r}")
    horizon = _finite("horizon", horizon, 0.0, lo_open=True)
    warmup = _finite("warmup", warmup, 0.0)
    if not warmup < horizon:
        raise ModelError(f"warmup must lie in [0, horizon), got {warmup!r}")
    inaccuracy = _finite("inaccuracy I", inaccuracy, 0.0, 1.0, hi_open=True)
    if inaccuracy_draw not in INACCURACY_DRAWS:
        raise ModelError(f"inaccuracy_draw must be one of {INACCURACY_DRAWS}, got {inaccuracy_draw!r}")
    if propagation not in PROPAGATION:
        raise ModelError(f"propagation must be one of {PROPAGATION}, got {propagation!r}")
    tcode = tie_code(tie)
    alpha0 = np.ascontiguousarray(per_machine_alpha(system))
    meta = dict(system.meta or {})
    rc_rate = float(meta.get("rate_change_rate", 0.0))
    if rate_changes is None:
        rate_changes = rc_rate > 0
    if rate_changes and rc_rate <= 0:
        raise ModelError(f"scenario {system.id!r} has no 'rate_change_rate' in its meta; rate_changes needs one")
    alpha_levels = np.asarray(meta.get("alpha_levels", [1.0, 1.0, 1.0]), float)
    mu_levels = np.asarray(meta.get("mu_levels", [1.0, 1.0, 1.0]), float)
    for name, lv in (("alpha_levels", alpha_levels), ("mu_levels", mu_levels)):
        if lv.shape != (3,) or not np.all(np.isfinite(lv)) or (lv <= 0).any():
            raise ModelError(f"meta field '{name}': expected three positive levels, got {lv.tolist()}")
    cpu_mean = float(meta.get("cpu_change_mean_interval", 0.0))
    if cpu_changes is None:
        cpu_changes = cpu_mean > 0
    if cpu_changes and cpu_mean <= 0:
        raise ModelError(f"scenario {system.id!r} has no 'cpu_change_mean_interval'; cpu_changes needs one")
    a0 = np.ascontiguousarray(system.a, dtype=float)
    runnable = ((mu0 * a0[None, :]) > 0).any(axis=1)
    if not runnable.all():
        i = int(np.flatnonzero(~runnable)[0])
        raise ModelError(f"availability: class {i + 1} cannot run on any machine with a CPU availability a > 0 "
                         f"(every machine that could run it has a = 0)")
    bound = default_bound(M) if max_in_system is None else max_in_system
    if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)) or bound < 1:
        raise ModelError(f"max_in_system must be a positive integer, got {max_in_system!r}")
    check_bound(int(bound), M)
    ensure_fits(f"max_in_system = {bound}", 32 * int(bound) + 17 * N * M * M)  # task pool, views
    if isinstance(log, bool) or not isinstance(log, (int, np.integer)) or log < 0:
        raise ModelError(f"log must be a non-negative integer, got {log!r}")
    lam = None
    try:
        from ...lp import solve_allocation

        lam = float(solve_allocation(mu0 * a0[None, :], alpha0.sum(axis=1)).lam)
    except Exception:  # pragma: no cover - diagnostic only
        lam = None
    params = Params(alpha0=alpha0, mu0=mu0, a0=a0, a_choices=np.ascontiguousarray(_a_choices(system), dtype=float),
                    alpha_levels=alpha_levels, mu_levels=mu_levels, policy=POLICY_CODES[key], kbar=kbar,
                    include_local=int(bool(include_local)), instant=int(propagation == "instant"), tie=int(tcode),
                    bound=int(bound), fresh=int(inaccuracy_draw == "per-message"),
                    rc_rate=float(rc_rate if rate_changes else 0.0),
                    cpu_rate=float(1.0 / cpu_mean if cpu_changes else 0.0),
                    inaccuracy=float(inaccuracy), horizon=float(horizon), warmup=float(warmup))
    options = {"k": kbar if key == "kpb" else None, "inaccuracy": inaccuracy, "inaccuracy_draw": inaccuracy_draw,
               "propagation": propagation,
               "include_local": bool(include_local), "tie": str(tie).lower(), "rate_changes": bool(rate_changes),
               "cpu_changes": bool(cpu_changes), "warmup": warmup, "max_in_system": int(bound),
               "lambda_star": lam}
    return Prepared(policy=key, params=params, N=N, M=M, k=kbar if key == "kpb" else None, horizon=horizon,
                    warmup=warmup, bound=int(bound), log=int(log), lambda_star=lam, options=options,
                    scenario=str(system.id), class_names=system.class_names)
