"""The registry of experiments (the catalog): a literal table of the modules that define them.

Each module in :data:`MODULES` calls :func:`register` for every
:class:`~hetsched.experiments.core.Experiment` it defines when it is imported;
:func:`registry` imports exactly the modules of the table (no scan of the
package folder), so a new experiment module is added here by name.
``tests/test_architecture.py`` checks that every module of the package that
registers experiments is in the table.
"""

from __future__ import annotations

import importlib

from ..errors import HetschedError
from .core import Experiment

__all__ = ["MODULES", "register", "registry", "get"]

#: the modules of :mod:`hetsched.experiments` that define experiments (paper order)
MODULES = (
    "thesis_ch2",  # thesis chapter 2: cluster mapping (Tables 2.1, 2.6, §2.1/2.4)
    "thesis_ch3",  # thesis chapter 3: desktop grids (Tables 3.2-3.14, Figures 3.1-3.4)
    "thesis_ch4",  # thesis chapter 4: decentralized grids (Table 4.1, Figures 4.1-4.3, §4.3.1 loads)
    "mgst",  # thesis §3.5: real dispatch on emulated desktop-grid workers
    "coalloc",  # seed 000: co-allocation in two clusters
    "muscle",  # seed 002: MUSCLE multicluster scheduling
    "gang",  # seed 003: gang scheduling SRN
    "traces",  # real workloads (SWF logs) through the mapping heuristics
)

_REGISTRY: dict[str, Experiment] = {}
_LOADED = False


def register(exp: Experiment) -> Experiment:
    """Add ``exp`` to the registry (called by the modules of :data:`MODULES` when imported)."""
    if exp.id in _REGISTRY and _REGISTRY[exp.id] is not exp:
        raise RuntimeError(f"experiment id {exp.id!r} registered twice")
    _REGISTRY[exp.id] = exp
    return exp


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for name in MODULES:
        importlib.import_module(f"{__package__}.{name}")
    _LOADED = True


def registry() -> dict[str, Experiment]:
    """Every experiment, by id (sorted)."""
    _load_all()
    return dict(sorted(_REGISTRY.items()))


def get(exp_id: str) -> Experiment:
    """The experiment ``exp_id``; an unknown id is refused with the list of ids."""
    reg = registry()
    if exp_id not in reg:
        known = ", ".join(reg) or "(none)"
        shown = exp_id if len(exp_id) <= 80 else exp_id[:40] + "..."
        raise HetschedError(f"unknown experiment id {shown!r}; known ids: {known}")
    return reg[exp_id]
