"""Policies that engines and the real dispatcher share (plain Python: importing them loads no numba).

* :mod:`.pull` -- pull policies of the desktop-grid model (FCFS, Gcmu,
  LPAS_DG, robust LPAS_DG) and user-written ones (:func:`.pull.pull_policy`).
"""

__all__ = ["pull"]
