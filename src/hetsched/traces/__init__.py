"""Real workloads: SWF logs, workload preparation for replay, per-task records.

* :mod:`.swf` -- :func:`read_swf`: a Standard Workload Format log as a pandas
  DataFrame of its 18 fields (header in ``attrs``, gzip, chunked streaming).
* :mod:`.workload` -- :func:`workload`: a trace prepared for replay through a
  system of ``N`` task classes (arrival times, sizes ``X``, classes, and the
  time scale that puts the system at a given load under the allocation LP).
* :mod:`.records` -- the per-task records schema (one row per task) and
  :func:`check_records`, the certificate every simulator's records must pass;
  records files are Parquet or CSV by their suffix.
* :mod:`.estimate` -- :func:`window_estimate`: the mean of a per-job series of
  one replay with a batch-means interval whose window count tests of
  independence and normality choose, or no interval (status 3) where the log
  cannot support one; :func:`paired_estimate` for two policies on one log.
* :mod:`.replay` -- the statistics of a trace replay (the estimates, every job
  accounted for, waiting time, bounded slowdown, utilisation).

Names are loaded on first use (PEP 562), so that the command line, which
imports :mod:`.cli`, does not pay for pandas at start-up.
"""

from __future__ import annotations

from .._lazy import lazy_names

_EXPORTS = {
    "read_swf": "swf", "read_swf_header": "swf", "with_na": "swf", "SWF_FIELDS": "swf", "SWF_COLUMNS": "swf",
    "SWF_UNITS": "swf", "MISSING": "swf",
    "workload": "workload", "TraceWorkload": "workload", "CLASS_RULES": "workload", "fold_classes": "workload",
    "RECORD_COLUMNS": "records", "records_frame": "records", "check_records": "records", "RecordsCheck": "records",
    "read_records": "records", "write_records": "records", "number_in_system": "records",
    "RECORD_FORMATS": "records", "MAX_SWF_BYTES": "swf", "DROP_REASONS": "workload", "drop_reasons": "workload",
    "WindowEstimate": "estimate", "window_estimate": "estimate", "paired_estimate": "estimate",
    "estimate_from_windows": "estimate", "window_means": "estimate",
    "hpc_metrics": "replay", "bounded_slowdown": "replay",
    "BSLD_TAU_SECONDS": "replay",
}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_names(__name__, globals(), _EXPORTS)
