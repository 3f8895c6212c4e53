"""Real dispatch: the desktop-grid policies on Dask workers (thesis §3.5, MGST).

:class:`Dispatcher` (pull-based, one FIFO queue per class, FCFS / Gcmu /
LPAS_DG / LPAS_DG robust with the simulator's selection code), its SQLite
:class:`Journal`, and an emulated heterogeneous ``LocalCluster``
(:mod:`hetsched.dispatch.emulate`). Importing this package does not import Dask.
"""

from __future__ import annotations

from .._lazy import lazy_names

__all__ = ["Dispatcher", "DispatchResult", "Emulation", "Journal"]


__getattr__, __dir__ = lazy_names(__name__, globals(), {"Dispatcher": "dispatcher", "DispatchResult": "dispatcher",
                                                      "Emulation": "dispatcher", "Journal": "journal"})
