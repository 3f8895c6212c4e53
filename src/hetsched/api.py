"""The user's vocabulary, re-exported lazily by :mod:`hetsched` (``import hetsched as hs``).

Functions here are thin: they accept what a user naturally has (a scenario
id, a :class:`~hetsched.system.System`, a policy name or a user policy) and
route it to the model or solver that owns it. Nothing here imports numba at
module level.
"""

from __future__ import annotations

from typing import Any

from .errors import ModelError
from .sim.core.seeds import DEFAULT_SEED

__all__ = ["load", "solve_allocation", "simulate", "pull_policy"]


def load(scenario, arrivals: str | None = None, case: int | None = None):
    """A :class:`~hetsched.system.System`: a shipped scenario id (``"2.C1"``) or a path to a TOML file.

    ``arrivals``/``case`` select a scenario's arrival-rate variant and
    failure/availability case (``hetsched scenarios`` lists them).
    """
    from .scenarios import load as _load

    return _load(str(scenario), arrivals=arrivals, case=case)


def _system(system):
    from .system import System

    if isinstance(system, System):
        return system
    if isinstance(system, str):
        return load(system)
    raise ModelError(f"system must be a hetsched System or a scenario id/path, got {type(system).__name__}")


def solve_allocation(system, alpha=None, a=None, *, solution: str = "vertex", **kw):
    """The allocation LP (thesis §2.2.1, §3.2): ``lambda*`` (``.lam``) and ``delta*`` (``.delta``).

    ``solve_allocation(system)`` for a System or scenario id (identical
    machines aggregated, availabilities applied), or
    ``solve_allocation(mu, alpha, a)`` on arrays. An infeasible or failed LP
    is a ``status``, not an exception (``.success``, ``.message``).
    """
    from . import lp

    if alpha is None and a is None and not hasattr(system, "shape") and not isinstance(system, (list, tuple)):
        return lp.allocation_lp(_system(system), solution=solution, **kw)
    if alpha is None:
        raise ModelError("solve_allocation(mu, alpha): 'alpha' (arrival rates) is missing")
    return lp.solve_allocation(system, alpha, a, solution=solution, **kw)


def _as_result(out, model_name: str):
    """A model entry's answer as the one result type (entries not yet moved to the core return a dict)."""
    from .sim.core.result import STATUS_OK, STATUS_UNSTABLE, SimResult

    if isinstance(out, SimResult):
        return out
    if isinstance(out, dict):
        known = {"status", "message", "policy", "metric", "mean", "ci", "per_class", "events", "wall_seconds",
                 "reps", "horizon", "seed", "scenario", "model", "unstable", "success"}
        unstable = bool(out.get("unstable"))
        mean = out.get("mean")
        if mean is None:
            mean = out.get("mean_untrusted", float("nan"))
        ci = out.get("ci") or [None, None]
        return SimResult(
            status=STATUS_UNSTABLE if unstable else STATUS_OK, message=str(out.get("message", "ok")),
            policy=str(out.get("policy", "")), metric=str(out.get("metric", "")),
            mean=float("nan") if mean is None else float(mean),
            ci=tuple(float("nan") if c is None else float(c) for c in ci), per_class=list(out.get("per_class", [])),
            events=int(out.get("events", 0)), wall_seconds=float(out.get("wall_seconds", 0.0)),
            model=str(out.get("model", model_name)), scenario=str(out.get("scenario", "")),
            reps=int(out.get("reps", 0)), horizon=out.get("horizon"), seed=out.get("seed"),
            extra={k: v for k, v in out.items() if k not in known},
        )
    raise TypeError(f"model {model_name!r} returned {type(out).__name__}, not a SimResult")


def simulate(system, policy, *, reps: int = 30, horizon: float | None = None, seed: int | None = DEFAULT_SEED,
             tie: str | None = None, workers: int | None = None, backend: str = "local",
             scheduler: str | None = None, progress: bool = False, **options: Any):
    """Simulate ``system`` under ``policy``; independent replications with 95 % confidence intervals.

    Parameters
    ----------
    system : System or str
        A :class:`~hetsched.system.System` or a scenario id / TOML path.
    policy : str or policy object
        Any policy name of DESIGN.md (``mct``, ``lpas``, ``lpas-dg``,
        ``lpas-dec``, ...), routed to the model that owns it (mapping,
        desktop grid, decentralized grid, ...), or a user policy made with
        :func:`hetsched.mapping_policy` (or a pull policy of the desktop grid).
    reps, horizon, seed
        ``reps`` replications of ``[0, horizon]`` (``None``: the model's
        default, e.g. 20,000 for the mapping model), replication ``r`` seeded
        with child ``r`` of ``SeedSequence(seed)`` (default 2009).
    tie : {"random", "lowest", "highest"}, optional
        Ties between equally good machines (default ``random``).
    workers, backend, scheduler, progress
        Local worker processes (default: all cores), ``"local"`` or
        ``"dask"`` (with ``scheduler``), progress bar on stderr.
    **options
        Model options (``k`` for KPB, ``dist``, ``warmup``, ``C``, ...).

    Returns
    -------
    SimResult
        ``.mean``, ``.ci``, ``.status``/``.success``/``.message``,
        ``.per_class``, ``.events``, ``.wall_seconds``, ``.to_frame()``.
    """
    from .sim import MODELS, model_for_policy

    sysm = _system(system)
    check_run(sysm, reps, horizon, backend, scheduler, trace=options.get("trace") is not None)
    if tie is not None:
        options["tie"] = tie
    model_name = getattr(policy, "__hetsched_model__", None)
    if model_name is not None:
        if model_name not in MODELS:
            raise ModelError(f"policy {policy!r} belongs to model {model_name!r}, which is not available")
        model = MODELS[model_name]
        key = policy
    elif isinstance(policy, str):
        model = model_for_policy(policy, sysm)
        key = policy.strip().lower()
    elif callable(policy):
        raise ModelError(f"policy {getattr(policy, '__name__', policy)!r} is a plain function: decorate it with "
                         f"@hetsched.mapping_policy (a mapping policy f(i, mu, n, work, u) -> machine)")
    else:
        raise ModelError(f"policy must be a name or a policy made with hetsched.mapping_policy, got {policy!r}")
    entry = model.load_entry()
    out = entry(sysm, key, reps=reps, horizon=horizon, seed=seed, workers=workers, backend=backend,
                scheduler=scheduler, progress=progress, options=options)
    res = _as_result(out, model.name)
    if isinstance(out, dict):  # entries not yet on the core leave these out
        res.horizon = res.horizon if res.horizon is not None else horizon
        res.seed = res.seed if res.seed is not None else seed
        res.reps = res.reps or reps
        res.scenario = res.scenario or sysm.id
    return res


#: the limits of ``hetsched simulate`` (the command line's --reps, --horizon and event budget), for the API too
MAX_REPS = 10_000
MAX_HORIZON = 1e12
MAX_EVENTS = 2e10


def check_run(system, reps, horizon, backend: str = "local", scheduler=None, *, trace: bool = False) -> None:
    """The command line's checks of a run, for the API: the same limits, the project's own errors, messages that
    name the argument and the value as ``hetsched simulate`` does. (A trace replay's ``reps`` are windows of the
    log: the model checks them against its length.)"""
    import math
    import numbers

    if isinstance(reps, bool) or not isinstance(reps, numbers.Integral):
        raise ModelError(f"reps: expected an integer, got {reps!r}")
    if not trace and not 1 <= reps <= MAX_REPS:
        shown = reps if abs(reps) < 10**30 else f"an integer of {len(str(abs(int(reps))))} digits"
        raise ModelError(f"reps: must be >= 1 and <= {MAX_REPS:,}, got {shown}")
    if horizon is not None and not trace:
        if isinstance(horizon, bool) or not isinstance(horizon, numbers.Real) or not math.isfinite(horizon) \
                or not 0 < horizon <= MAX_HORIZON:
            raise ModelError(f"horizon: must be > 0 and <= {MAX_HORIZON:g}, got {horizon!r}")
        events = 2.0 * float(system.alpha_array.sum()) * float(horizon) * int(reps)
        if not math.isfinite(events) or events > MAX_EVENTS:
            raise ModelError(f"reps {reps} x horizon {horizon:g}: about {events:.3g} events estimated, over the "
                             f"limit of {MAX_EVENTS:.3g} (lower reps or horizon; limits: docs/input-validation.md)")
    if scheduler is not None and backend != "dask":
        raise ModelError(f"scheduler {scheduler!r} applies only with backend 'dask' (--backend dask)")


def pull_policy(*args, **kwargs):
    """Decorator for a user-written pull policy of the desktop grid (:func:`hetsched.policies.pull.pull_policy`)."""
    from .policies.pull import pull_policy as _pull

    return _pull(*args, **kwargs)
