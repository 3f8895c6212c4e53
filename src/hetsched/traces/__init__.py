"""Real workloads: SWF logs, workload preparation for replay, per-task records.

* :mod:`.swf` -- :func:`read_swf`: a Standard Workload Format log as a pandas
  DataFrame of its 18 fields (header in ``attrs``, gzip, chunked streaming).
* :mod:`.workload` -- :func:`workload`: a trace prepared for replay through a
  system of ``N`` task classes (arrival times, sizes ``X``, classes, and the
  time scale that puts the system at a given load under the allocation LP).
* :mod:`.records` -- the per-task records schema (one row per task) and
  :func:`check_records`, the certificate every simulator's records must pass.

Names are loaded on first use (PEP 562), so that the command line, which
imports :mod:`.cli`, does not pay for pandas at start-up.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "read_swf": "swf", "read_swf_header": "swf", "with_na": "swf", "SWF_FIELDS": "swf", "SWF_COLUMNS": "swf",
    "SWF_UNITS": "swf", "MISSING": "swf",
    "workload": "workload", "TraceWorkload": "workload", "CLASS_RULES": "workload", "fold_classes": "workload",
    "RECORD_COLUMNS": "records", "records_frame": "records", "check_records": "records", "RecordsCheck": "records",
    "read_records": "records", "write_records": "records", "number_in_system": "records",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'hetsched.traces' has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{mod}")
    value = getattr(module, name)
    globals()[name] = value
    # importing a submodule binds its name here: the function ``workload`` must win over the module
    if mod in _EXPORTS and _EXPORTS[mod] == mod:
        globals()[mod] = getattr(module, mod)
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
