"""Real dispatch: the desktop-grid policies on Dask workers (thesis §3.5, MGST).

:class:`Dispatcher` (pull-based, one FIFO queue per class, FCFS / Gcmu /
LPAS_DG / LPAS_DG robust with the simulator's selection code), its SQLite
:class:`Journal`, and an emulated heterogeneous ``LocalCluster``
(:mod:`hetsched.dispatch.emulate`). Importing this package does not import Dask.
"""

from __future__ import annotations

__all__ = ["Dispatcher", "DispatchResult", "Emulation", "Journal"]


def __getattr__(name):
    if name in ("Dispatcher", "DispatchResult", "Emulation"):
        from . import dispatcher

        return getattr(dispatcher, name)
    if name == "Journal":
        from .journal import Journal

        return Journal
    raise AttributeError(name)
