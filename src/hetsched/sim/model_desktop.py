"""Registers the desktop-grid model (thesis ch. 3) with ``hetsched simulate``.

Light module (no numba import): see :mod:`hetsched.sim` for the registry.
"""

from __future__ import annotations

from ..errors import ModelError
from . import Model, register_model

# Command-line model options this model understands (others are refused).
_OPTIONS = {"dist"}


def simulate_cli(system, policy, *, reps, horizon, seed, workers, backend, scheduler, progress, options):
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ModelError(f"option --{unknown[0]} does not apply to the desktop-grid policies (fcfs, gcmu, lpas-dg)")
    from .desktop import simulate_command

    return simulate_command(system, policy, reps=reps, horizon=horizon, seed=seed, workers=workers,
                            backend=backend, scheduler=scheduler, progress=progress, **options)


register_model(Model("desktop-grid", ("fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"), "W",
                     "hetsched.sim.model_desktop:simulate_cli"))
