"""``hs.compare``: several policies on one system, on common random numbers, compared in pairs.

Three steps, like every model: validate and resolve (the system, the policies
and the one model that runs them all), plan every policy's replications with
that model's ``plan`` function and run them as one batch
(:class:`hetsched.runner.Batch`: every policy x replication goes to the local
pool or the Dask cluster at once), then the paired statistics
(:mod:`.stats`) and the result (:class:`.result.CompareResult`).

Common random numbers: every policy is planned with the same ``seed``, so
replication ``r`` of every policy draws from child ``r`` of
``SeedSequence(seed)``; each model keeps separate streams for arrivals, sizes
and availability, and a policy's private stream (ties, its own ``u``) apart
(:mod:`hetsched.sim.core.rng`), so the workload of replication ``r`` is the
same under every policy. On a trace, every policy replays the same log cut
into the same windows.

Exact solvers (:data:`EXACT`): a policy name registered there (e.g. the
exact optimal policy of a model, when it exists) is answered by its solver
with an exact value; if the solver also returns a policy the simulator can
run, that policy is simulated beside the others, so its simulated value and
its paired differences appear too.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ModelError
from ..sim.core.seeds import DEFAULT_SEED

__all__ = ["compare", "ExactAnswer", "EXACT", "register_exact", "resolve_policies"]


@dataclass(frozen=True)
class ExactAnswer:
    """What an exact solver returns for one system: the metric's exact value under its policy."""

    value: float
    metric: str
    #: a policy the simulator can run (name or policy object), simulated beside the others; or None
    policy: Any = None
    message: str = "ok"
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExactSolver:
    name: str
    model: str
    solve: Callable[..., ExactAnswer]  # solve(system, metric=..., **options) -> ExactAnswer


#: policy name -> exact solver (filled by the modules that provide one; empty until then)
EXACT: dict[str, ExactSolver] = {}


def register_exact(name: str, model: str, solve: Callable[..., ExactAnswer]) -> ExactSolver:
    """Make ``name`` a policy of ``compare`` on ``model``, answered by ``solve(system, metric=..., **options)``.

    ``solve`` raises :class:`~hetsched.errors.ModelError` (one line: why, e.g. the
    state space is too large, with its size) where it does not apply.
    """
    key = str(name).strip().lower()
    s = ExactSolver(key, model, solve)
    EXACT[key] = s
    return s


# --------------------------------------------------------------------------- resolving
def _system(system):
    """``("system", System)`` or ``("coalloc", params)`` for a co-allocation parameter set."""
    from ..system import System

    if isinstance(system, System):
        return "system", system
    if isinstance(system, (str, os.PathLike)):
        from ..api import load

        return "system", load(os.fspath(system))
    from ..mdp.coalloc import CoallocParams
    from ..sim.coalloc import SimParams

    if isinstance(system, (CoallocParams, SimParams)):
        return "coalloc", system
    raise ModelError(f"system: expected a hetsched System, a scenario id or path, or co-allocation parameters "
                     f"(hs.CoallocParams), got {type(system).__name__}")


@dataclass(frozen=True)
class _Entry:
    label: str     # the name shown in every output
    key: Any       # what the model's plan takes (a lower-case name or a policy object)
    model: str
    exact: ExactSolver | None = None


def _label(p) -> str:
    return p.strip().lower() if isinstance(p, str) else str(getattr(p, "name", p))


def resolve_policies(policies, kind: str, system) -> tuple[list[_Entry], str]:
    """The policies as entries and the one model that runs them all (refused in one line otherwise)."""
    from ..sim import MODELS, all_policies, model_for_policy

    if isinstance(policies, Mapping):  # {label: policy}: the user's own names (the same policy twice allowed)
        labelled = []
        for lab, p in policies.items():
            if not isinstance(lab, str) or not lab.strip():
                raise ModelError(f"policies: a label must be a non-empty string, got {lab!r}")
            labelled.append((lab.strip(), p))
    else:
        if isinstance(policies, (str, bytes)) or not hasattr(policies, "__iter__"):
            policies = [policies]
        labelled = [(None, p) for p in policies]
    policies = [p for _, p in labelled]
    if len(policies) < 2:
        raise ModelError(f"policies: a comparison needs at least two policies, got {len(policies)}")
    if len(policies) > 64:
        raise ModelError(f"policies: at most 64 policies in one comparison, got {len(policies)}")
    entries: list[_Entry] = []
    for given, p in labelled:
        label = given or _label(p)
        if not label:
            raise ModelError(f"policies: empty policy name {p!r}")
        if kind == "coalloc":
            from ..sim.coalloc import POLICIES

            key = _label(p)
            if not isinstance(p, str) or key not in POLICIES:
                raise ModelError(f"policy {key!r} is not a co-allocation policy; known: {', '.join(POLICIES)}")
            entries.append(_Entry(label, key, "coalloc"))
            continue
        model_name = getattr(p, "__hetsched_model__", None)
        if model_name is not None:
            all_policies()  # fills the model registry
            if model_name not in MODELS:
                raise ModelError(f"policy {label!r} belongs to model {model_name!r}, which is not available")
            entries.append(_Entry(label, p, model_name))
        elif isinstance(p, str):
            key = _label(p)
            if key in EXACT:
                entries.append(_Entry(label, key, EXACT[key].model, EXACT[key]))
            else:
                entries.append(_Entry(label, key, model_for_policy(key, system).name))
        elif callable(p):
            raise ModelError(f"policy {label!r} is a plain function: decorate it with @hs.mapping_policy "
                             f"(or @hs.pull_policy for a desktop grid)")
        else:
            raise ModelError(f"policies: expected names or policy objects, got {p!r}")
    seen: set[str] = set()
    for e in entries:
        if e.label in seen:
            raise ModelError(f"policies: {e.label!r} is given twice (every policy needs its own name)")
        seen.add(e.label)
    models = {e.model for e in entries}
    if len(models) > 1:
        first = entries[0]
        other = next(e for e in entries if e.model != first.model)
        raise ModelError(f"policies: {first.label!r} runs on the {first.model} model and {other.label!r} on the "
                         f"{other.model} model; one comparison runs policies of one model on one system")
    return entries, entries[0].model


def _plan_function(model: str):
    """The model's ``plan`` (next to its registered entry point)."""
    if model == "coalloc":
        from ..sim.coalloc import plan_coalloc

        return plan_coalloc
    from ..sim import MODELS

    mod = importlib.import_module(MODELS[model].entry.partition(":")[0])
    return mod.plan


def _coalloc_table(params, entries) -> Any:
    if not any(e.key == "table" for e in entries):
        return None
    from ..mdp.coalloc import CoallocParams, decision_table, solve_coalloc

    if not isinstance(params, CoallocParams):
        raise ModelError("policy 'table' reads the optimal decision table of the MDP: give hs.CoallocParams "
                         "(with delta and beta), not SimParams")
    sol = solve_coalloc(params)
    return decision_table(sol.model, sol.policy)


def _plan_all(entries, model, kind, system, *, reps, horizon, seed, tw, options):
    plan = _plan_function(model)
    opts = {k: v for k, v in options.items() if v is not None}
    out = []
    if kind == "coalloc":
        from ..sim.coalloc import SimParams

        sp = SimParams.of(system)
        table = _coalloc_table(system, entries)
        if horizon is not None:
            opts["completions"] = max(1, int(round(float(horizon) * (sp.lam1 + sp.lam2))))
        for e in entries:
            out.append(plan(sp, e.key, reps=reps, seed=seed, table=table if e.key == "table" else None, **opts))
        return out
    if model == "desktop-grid" and "dist" in opts:
        opts["exec_dist"] = opts.pop("dist")
    if horizon is not None:
        opts["horizon"] = horizon
    if tw is not None:
        opts["trace"] = tw
    k = opts.pop("k", None)
    for e in entries:  # k (k-bar) is KPB's own option; the models refuse it for other policies
        extra = {"k": k} if k is not None and e.key == "kpb" else {}
        out.append(plan(system, e.key, reps=reps, seed=seed, **opts, **extra))
    return out


def _run(planned, labels, *, workers, backend, scheduler, progress, label):
    from ..runner import Batch, check_scheduler

    if backend not in ("local", "dask"):
        raise ModelError(f"backend: expected 'local' or 'dask', got {backend!r}")
    if scheduler and backend != "dask":
        raise ModelError(f"scheduler {scheduler!r} applies only with backend 'dask'")

    def go(sched):
        b = Batch(workers=workers, backend=backend, scheduler=sched, progress=progress, label=label)
        cells = [b.add(p, label=lab) for p, lab in zip(planned, labels)]
        b.run()
        return [c.result for c in cells]

    if backend == "dask" and not scheduler:
        try:
            from distributed import LocalCluster
        except ImportError:  # pragma: no cover - optional extra
            raise ModelError("backend 'dask' needs the 'distributed' package: pip install 'hetsched[dask]'") from None
        import logging

        from ..runner import default_workers

        with LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
                          dashboard_address=None, host="127.0.0.1", silence_logs=logging.CRITICAL) as cluster:
            return go(cluster.scheduler_address)
    if scheduler:
        check_scheduler(scheduler)
    return go(scheduler)


# --------------------------------------------------------------------------- the API
def compare(system, policies, *, reps: int = 30, horizon: float | None = None, seed: int | None = DEFAULT_SEED,
            trace: Any = None, load: float | None = None, classes: str = "runtime", metrics=None,
            confidence: float = 0.95, workers: int | None = None, backend: str = "local",
            scheduler: str | None = None, progress: bool = False, **options: Any):
    """Compare policies on one system: each policy's metric with its CI, paired differences, a ranking.

    Parameters
    ----------
    system : System, str or CoallocParams
        A :class:`~hetsched.system.System` (``hs.System.from_arrays(...,
        class_names=, machine_names=)``), a scenario id or TOML path, or
        co-allocation parameters (``hs.CoallocParams``; policies ``local``,
        ``heuristic``, ``table``, ``always``).
    policies : sequence of str or policy objects, or a dict {label: policy}
        At least two: built-in names (``mct``, ``lpas``, ``lpas-dg``, ...)
        and policies made with ``@hs.mapping_policy`` / ``@hs.pull_policy``,
        all run by one model (mapping, desktop grid, decentralized grid or
        co-allocation); mixing models is refused. A dict names them in every
        output (and may hold one policy twice).
    reps, horizon, seed
        ``reps`` replications of ``[0, horizon]`` (``None``: the model's
        default), every policy seeded alike (common random numbers). On a
        trace, ``reps`` windows of the log (``horizon`` does not apply). For
        co-allocation, ``horizon`` sets the jobs simulated (``horizon`` times
        the total arrival rate).
    trace, load, classes
        Replay an SWF log (path, DataFrame or ``TraceWorkload``) instead of
        Poisson arrivals (mapping model only), at load ``1/lambda* = load``,
        classes by ``classes`` (:func:`hetsched.traces.workload`).
    metrics : str or list of str, optional
        Metrics to compare (the first ranks): ``Q``, ``W`` (mapping; a trace:
        ``W``), ``W`` (desktop grid), ``W``, ``Q``, ``messages``
        (decentralized), ``cost`` (co-allocation). Default: the model's own.
    confidence : float
        Level of every interval (default 0.95; individual, not simultaneous).
    workers, backend, scheduler, progress
        As :func:`hetsched.simulate`; every policy x replication is submitted
        at once. ``backend="dask"`` without ``scheduler`` starts a local Dask
        cluster of ``workers`` processes for the call.
    **options
        Model options given to every policy (``k`` for KPB, ``tie``,
        ``dist``, ``warmup``, ...).

    Returns
    -------
    CompareResult
        ``.ranking``, ``.policies`` (mean, CI, stability, per class),
        ``.differences`` (paired), ``.to_frame()``, ``.as_dict()``, plots
        (``.plot_means()``, ``.plot_differences()``, ``.plot_classes()``).
    """
    from .metrics import METRICS, available_metrics
    from .result import build_result
    from .stats import _check_conf

    confidence = _check_conf(confidence)
    kind, sysm = _system(system)
    entries, model = resolve_policies(policies, kind, sysm if kind == "system" else None)
    if (load is not None or classes != "runtime") and trace is None:
        raise ModelError("load and classes apply to a trace replay only (give trace=...)")
    tw = None
    if trace is not None:
        if model != "mapping":
            raise ModelError(f"trace: only the mapping model replays traces; these policies run on the {model} "
                             f"model (Poisson arrivals)")
        from ..traces import TraceWorkload, workload

        tw = trace if isinstance(trace, TraceWorkload) else workload(trace, sysm, classes=classes, load=load)
    avail = available_metrics(model, tw is not None)
    if metrics is None:
        metrics = [avail[0]]
    elif isinstance(metrics, str):
        metrics = [metrics]
    metrics = [str(m) for m in metrics]
    if not metrics:
        raise ModelError("metrics: give at least one metric")
    for m in metrics:
        if m not in avail:
            what = "a trace replay" if tw is not None else f"the {model} model"
            known = "" if m in METRICS else f" (unknown metric; known: {', '.join(METRICS)})"
            raise ModelError(f"metrics: {m!r} is not measured by {what}; available: {', '.join(avail)}{known}")
    if len(set(metrics)) != len(metrics):
        raise ModelError(f"metrics: a metric is given twice: {metrics}")

    exact: dict[str, Any] = {}
    sim_entries = []
    for e in entries:
        if e.exact is None:
            sim_entries.append(e)
            continue
        if tw is not None:
            raise ModelError(f"policy {e.label!r}: an exact value assumes the model's Poisson arrivals, not a trace "
                             f"replay; compare it without trace")
        ans = e.exact.solve(sysm, metric=metrics[0], **{k: v for k, v in options.items() if v is not None})
        exact[e.label] = ans
        if ans.policy is not None:
            sim_entries.append(_Entry(e.label, ans.policy, e.model))
    planned = _plan_all(sim_entries, model, kind, sysm, reps=reps, horizon=horizon, seed=seed, tw=tw,
                        options=options)
    sysid = sysm.id if kind == "system" else "coalloc"
    if backend == "local":  # start-up, not timed: compile (or load) every kernel here; forked workers inherit it
        for p in planned:  # each one (a model's warm key may not tell a user policy's kernel apart); cheap
            if p.warm is not None:
                p.warm()
    t0 = time.perf_counter()
    results = _run(planned, [e.label for e in sim_entries], workers=workers, backend=backend, scheduler=scheduler,
                   progress=progress, label=f"compare {sysid}")
    sims = {e.label: r for e, r in zip(sim_entries, results)}
    return build_result(kind=kind, system=sysm, model=model, order=[e.label for e in entries], sims=sims,
                        exact=exact, metrics=metrics, confidence=confidence, reps=reps, horizon=horizon,
                        seed=DEFAULT_SEED if seed is None else seed, tw=tw, trace=trace, load=load,
                        options={k: v for k, v in options.items() if v is not None},
                        seconds=time.perf_counter() - t0)


# --------------------------------------------------------------------------- built-in exact solvers
def _optimal_routing(system, metric: str = "Q", **options: Any) -> ExactAnswer:
    """``optimal``: the exact optimal routing of a small mapping system (:func:`hetsched.optimal_routing`)."""
    from ..optimal import exact_answer

    return ExactAnswer(**exact_answer(system, metric, **options))


register_exact("optimal", "mapping", _optimal_routing)
