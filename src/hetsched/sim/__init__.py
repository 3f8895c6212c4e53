"""Simulation engines: compiled discrete-event kernels and their models.

Every simulated model is built on the simulation core :mod:`hetsched.sim.core`
(event list, random streams, variates, tie chooser, task pool, instability
rule, result type, kernel compiler with its on-disk cache, the guard for user
code) and follows one kernel contract: ``model.py`` validates and turns the
system into arrays once (named tuples of parameters), a compiled replication
kernel with a short argument list simulates (no Python per event), and a
summary makes the one result type
(:class:`hetsched.sim.core.result.SimResult`); replications run in parallel
through :func:`hetsched.runner.replicate`.

The models (one literal table, :data:`MODELS`)
----------------------------------------------
=============  ==========================================  ======  ==========================================
model          policies                                    metric  where
=============  ==========================================  ======  ==========================================
mapping        met, mct, kpb, lpas, lpas-2k, lp-static,    Q       :mod:`hetsched.sim.mapping` (thesis ch. 2)
               guided-lpas, guided-lpas-2k
desktop-grid   fcfs, gcmu, lpas-dg, lpas-dg-robust         W       :mod:`hetsched.sim.desktop` (ch. 3)
decentral      lpas-dec (and mct, kpb on systems with      W       :mod:`hetsched.sim.decentral` (ch. 4)
               per-machine arrival streams)
coalloc        local, heuristic, table, always             cost    :mod:`hetsched.sim.coalloc` (seed 000; its
                                                                   rates, not a scenario)
=============  ==========================================  ======  ==========================================

``hetsched simulate SCENARIO --policy NAME`` (and :func:`hetsched.simulate`)
looks the policy up with :func:`model_for_policy` and calls the model's
``entry``, a ``"module:function"`` path imported only when one of its policies
is simulated (so ``hetsched --help`` never loads numba). The entry has the
signature::

    entry(system, policy, *, reps, horizon, seed, workers, backend, scheduler,
          progress, options: dict) -> SimResult

``options`` holds the model options given that are not ``None`` (``k``,
``dist``, ``tie``, ``warmup``, ...); an entry raises
:class:`~hetsched.errors.ModelError` for an option it does not understand.
A model that also runs policies owned by another model on some systems lists
them in ``shared_policies`` with an ``applies`` predicate
(``"module:function"``, ``applies(system) -> bool``). ``warm`` (a
``"module:function"``, no arguments) compiles every built-in kernel of the
model into the on-disk cache (``hetsched warmup``).

A new model is one more row of :data:`MODELS` (no file-name scan).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import ModelError

__all__ = ["Model", "MODELS", "model_table", "model_for_policy", "all_policies", "has_per_machine_streams", "warm_up_all"]

METRICS = ("Q", "W", "cost")


@dataclass(frozen=True)
class Model:
    """One simulated model: the policies it owns, its metric and its entry points.

    ``shared_policies`` are policies owned by another model that this model
    also runs for the systems where ``applies(system)`` is true (``applies`` is
    a ``"module:function"`` path, imported lazily). Example: the decentralized
    model runs ``mct`` and ``kpb`` on systems with per-machine arrival streams.
    ``scenario`` is false for a model that takes its own parameters rather
    than a scenario (co-allocation); ``runner`` then names how to run it.
    """

    name: str
    policies: tuple[str, ...]
    metric: str
    entry: str
    shared_policies: tuple[str, ...] = ()
    applies: str | None = None
    warm: str | None = None
    scenario: bool = True
    runner: str = "hetsched simulate SCENARIO --policy NAME"

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"model {self.name!r}: metric must be one of {METRICS}, got {self.metric!r}")

    def load_entry(self):
        return _load(self.entry)

    def takes(self, policy: str, system) -> bool:
        """True when this model should run ``policy`` (one of its shared policies) on ``system``."""
        if policy in self.shared_policies and self.applies is not None and system is not None:
            return bool(_load(self.applies)(system))
        return False


def _load(path: str):
    mod, _, fn = path.partition(":")
    return getattr(importlib.import_module(mod), fn)


def has_per_machine_streams(system) -> bool:
    """The decentralized decision of thesis §4.1 applies: one arrival stream per (class, machine)."""
    return system.alpha_matrix is not None


def model_table(*models: Model) -> dict[str, Model]:
    """Name -> model; a policy name may belong to one model only (ValueError otherwise)."""
    out: dict[str, Model] = {}
    for m in models:
        for other in out.values():
            both = set(other.policies) & set(m.policies)
            if both:
                raise ValueError(f"model {m.name!r}: policies {sorted(both)} already belong to {other.name!r}")
        out[m.name] = m
    return out


#: every simulated model, in one literal table
MODELS: dict[str, Model] = model_table(
    Model("mapping", ("met", "mct", "kpb", "lpas", "lpas-2k", "lp-static", "guided-lpas", "guided-lpas-2k"), "Q",
          "hetsched.sim.mapping:simulate_cli", warm="hetsched.sim.mapping.run:warm_up_all"),
    Model("desktop-grid", ("fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"), "W",
          "hetsched.sim.desktop.run:simulate_cli", warm="hetsched.sim.desktop.run:warm_up_kernels"),
    Model("decentral", ("lpas-dec",), "W", "hetsched.sim.decentral.run:simulate_cli",
          shared_policies=("mct", "kpb"), applies="hetsched.sim:has_per_machine_streams",
          warm="hetsched.sim.decentral.run:warm_up_kernels"),
    Model("coalloc", ("local", "heuristic", "table", "always"), "cost",
          "hetsched.sim.coalloc:simulate_coalloc", warm="hetsched.sim:_warm_coalloc", scenario=False,
          runner="hetsched.sim.coalloc.simulate_coalloc(params, policy) in Python, or "
                 "hetsched reproduce coalloc-fig5 ... coalloc-fig9"),
)


def all_policies() -> dict[str, str]:
    """Policy name -> model name, over every model."""
    return {p: m.name for m in MODELS.values() for p in m.policies}


def model_for_policy(policy: str, system=None) -> Model:
    """The model that runs ``policy`` (case-insensitive) on ``system``.

    A model listing the policy in ``shared_policies`` and whose ``applies``
    accepts the system wins; otherwise the model that owns the policy. A
    policy of a model that takes no scenario is refused (naming how to run it)
    when a system is given.
    """
    key = str(policy).strip().lower()
    for m in MODELS.values():
        if m.takes(key, system):
            return m
    for m in MODELS.values():
        if key in m.policies:
            if system is not None and not m.scenario:
                raise ModelError(f"policy {policy!r} belongs to the {m.name} model, which runs on its own "
                                 f"parameters, not on a scenario: {m.runner}")
            return m
    known = ", ".join(sorted(p for m in MODELS.values() if m.scenario for p in m.policies))
    raise ModelError(f"unknown policy {policy!r}; known policies: {known}")


def _warm_coalloc() -> None:
    from .coalloc import SimParams, simulate_one

    simulate_one(SimParams(lam1=0.3, lam2=0.3), "local", completions=200)


def warm_up_all(progress=None) -> list[str]:
    """Compile every built-in kernel of every model into the on-disk cache (``hetsched warmup``).

    ``progress(text)`` is told what is compiled. Returns the models warmed.
    """
    done = []
    for m in MODELS.values():
        if m.warm is None:
            continue
        if progress is not None:
            progress(f"{m.name}: compiling")
        fn = _load(m.warm)
        import inspect

        if "progress" in inspect.signature(fn).parameters:
            fn(progress=progress)
        else:
            fn()
        done.append(m.name)
    return done
