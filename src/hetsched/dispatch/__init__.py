"""Real dispatch: the desktop-grid policies on Dask workers (thesis §3.5, MGST).

:class:`Dispatcher` (pull-based, one FIFO queue per class, FCFS / Gcmu /
LPAS_DG / LPAS_DG robust with the simulator's selection code) built from
:class:`DispatchOptions` (frozen options), :class:`DispatchState` (the state
machine, testable without a cluster), :class:`Monitor` (LP re-solves and
drift) and :class:`DaskLayer` (membership events and submissions, Dask's public
API only); its SQLite :class:`Journal`; task files (:func:`load_taskfile`,
:func:`run_taskfile`); an emulated heterogeneous ``LocalCluster``
(:func:`local_cluster`, :func:`run_demo`) and the throughput bench
(:func:`run_bench`). Importing this package does not import Dask.
"""

from __future__ import annotations

from .._lazy import lazy_names

__all__ = ["Dispatcher", "DispatchResult", "DispatchOptions", "DispatchState", "Monitor", "DaskLayer", "Emulation",
           "Journal", "load_taskfile", "run_taskfile", "local_cluster", "quiet_dask", "run_demo", "run_bench",
           "cluster_workers"]


__getattr__, __dir__ = lazy_names(__name__, globals(), {
    "Dispatcher": "dispatcher", "DispatchResult": "result", "DispatchOptions": "options", "DispatchState": "state",
    "Monitor": "monitor", "DaskLayer": "dasklayer", "cluster_workers": "dasklayer", "Emulation": "records",
    "Journal": "journal", "load_taskfile": "taskfile", "run_taskfile": "taskfile", "local_cluster": "emulate",
    "quiet_dask": "emulate", "run_demo": "emulate", "run_bench": "bench"})
