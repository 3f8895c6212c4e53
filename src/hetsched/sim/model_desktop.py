"""Registers the desktop-grid model (thesis ch. 3) with ``hetsched simulate``.

Light module (no numba import): see :mod:`hetsched.sim` for the registry.
"""

from __future__ import annotations

from . import Model, register_model

register_model(Model("desktop-grid", ("fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"), "W",
                     "hetsched.sim.desktop.run:simulate_cli"))
