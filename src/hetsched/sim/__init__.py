"""Simulation engines: compiled discrete-event kernels and their models.

Every simulated model is a compiled kernel (numba, ``cache=True``; no Python
per event) plus a thin Python wrapper that validates, builds arrays and runs
independent replications through :func:`hetsched.runner.replicate`.

Model registry (how ``hetsched simulate`` finds a model)
--------------------------------------------------------
``hetsched simulate SCENARIO --policy NAME`` looks the policy up in
:data:`MODELS` and calls that model's entry point. A model is a
:class:`Model`: its ``name``, the policy names it runs (lower case, the names
of DESIGN.md), its ``metric`` (``"Q"`` time-average number in system or
``"W"`` mean completion time) and ``entry``, a ``"module:function"`` path
imported only when one of its policies is simulated (so ``hetsched --help``
never loads numba). The entry has the signature::

    entry(system, policy, *, reps, horizon, seed, workers, backend, scheduler,
          progress, options: dict) -> SimResult

and returns the one result type, :class:`hetsched.sim.core.result.SimResult`,
whose ``as_dict()`` is the JSON object of the command-line contract (keys at
least ``policy``, ``metric``, ``mean``, ``ci``, ``per_class``, ``unstable``,
``events``, ``wall_seconds``, ``status``, ``success``, ``message``;
``messages`` for models with message exchange). (Entries not yet moved to
the core may still return that dict; the CLI accepts both.)
``options`` holds the model options given on the command line that are not
``None`` (``k``, ``dist``, ``tie``, ``warmup``, ...); an entry raises
:class:`~hetsched.errors.ModelError` for an option it does not understand.

A new model (desktop grid, decentralized grid, ...) registers itself in a light
module ``hetsched/sim/model_<name>.py`` (no numba import at module level)::

    from hetsched.sim import Model, register_model
    register_model(Model("desktop-grid", ("fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"),
                         "W", "hetsched.sim.desktop:simulate_cli"))

A model that also runs policies owned by another model on some systems lists
them in ``shared_policies`` with an ``applies`` predicate (``"module:function"``,
``applies(system) -> bool``); :func:`model_for_policy` asks it first.

Such modules are discovered on the first lookup; nothing else needs editing.

Models shipped here: ``mapping`` (immediate-mode cluster mapping, thesis
ch. 2: :mod:`hetsched.sim.mapping`). Every model is built on the simulation
core :mod:`hetsched.sim.core` (event list, random streams, variates,
instability rule, result type).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from ..errors import ModelError

__all__ = ["Model", "MODELS", "register_model", "model_for_policy", "all_policies"]


@dataclass(frozen=True)
class Model:
    """One simulated model: the policies it owns, its metric and its entry point.

    ``shared_policies`` are policies owned by another model that this model
    also runs for the systems where ``applies(system)`` is true (``applies`` is
    a ``"module:function"`` path, imported lazily). Example: the decentralized
    model runs ``mct`` and ``kpb`` on systems with per-machine arrival streams.
    """

    name: str
    policies: tuple[str, ...]
    metric: str
    entry: str
    shared_policies: tuple[str, ...] = ()
    applies: str | None = None

    def load_entry(self):
        return _load(self.entry)

    def takes(self, policy: str, system) -> bool:
        """True when this model should run ``policy`` on ``system``."""
        if policy in self.shared_policies and self.applies is not None and system is not None:
            return bool(_load(self.applies)(system))
        return False


def _load(path: str):
    mod, _, fn = path.partition(":")
    return getattr(importlib.import_module(mod), fn)


MODELS: dict[str, Model] = {}
_DISCOVERED = False


def register_model(model: Model) -> Model:
    """Add ``model``; a policy name may belong to one model only."""
    if model.metric not in ("Q", "W"):
        raise ValueError(f"model {model.name!r}: metric must be 'Q' or 'W', got {model.metric!r}")
    for other in MODELS.values():
        if other.name != model.name and set(other.policies) & set(model.policies):
            raise ValueError(f"model {model.name!r}: policies {set(other.policies) & set(model.policies)} "
                             f"already belong to {other.name!r}")
    MODELS[model.name] = model
    return model


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    for mod in pkgutil.iter_modules(__path__):
        if mod.name.startswith("model_"):
            importlib.import_module(f"{__name__}.{mod.name}")


def all_policies() -> dict[str, str]:
    """Policy name -> model name, over every registered model."""
    _discover()
    return {p: m.name for m in MODELS.values() for p in m.policies}


def model_for_policy(policy: str, system=None) -> Model:
    """The model that runs ``policy`` (case-insensitive) on ``system``.

    A model listing the policy in ``shared_policies`` and whose ``applies``
    accepts the system wins; otherwise the model that owns the policy.
    """
    _discover()
    key = str(policy).strip().lower()
    for m in MODELS.values():
        if m.takes(key, system):
            return m
    for m in MODELS.values():
        if key in m.policies:
            return m
    known = ", ".join(sorted(all_policies()))
    raise ModelError(f"unknown policy {policy!r}; known policies: {known}")


register_model(Model(
    "mapping",
    ("met", "mct", "kpb", "lpas", "lpas-2k", "lp-static", "guided-lpas", "guided-lpas-2k"),
    "Q",
    "hetsched.sim.mapping:simulate_cli",
))
