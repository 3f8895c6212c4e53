"""Real workloads: SWF logs, workload preparation for replay, per-task records.

* :mod:`.swf` -- :func:`read_swf`: a Standard Workload Format log as a pandas
  DataFrame of its 18 fields (header in ``attrs``, gzip, chunked streaming).
* :mod:`.workload` -- :func:`workload`: a trace prepared for replay through a
  system of ``N`` task classes (arrival times, sizes ``X``, classes, and the
  time scale that puts the system at a given load under the allocation LP).
* :mod:`.records` -- the per-task records schema (one row per task) and
  :func:`check_records`, the certificate every simulator's records must pass.
"""

from .records import RECORD_COLUMNS, RecordsCheck, check_records, read_records, records_frame, write_records
from .swf import MISSING, SWF_COLUMNS, SWF_FIELDS, SWF_UNITS, read_swf, read_swf_header, with_na
from .workload import CLASS_RULES, TraceWorkload, workload

__all__ = [
    "read_swf", "read_swf_header", "with_na", "SWF_FIELDS", "SWF_COLUMNS", "SWF_UNITS", "MISSING",
    "workload", "TraceWorkload", "CLASS_RULES",
    "RECORD_COLUMNS", "records_frame", "check_records", "RecordsCheck", "read_records", "write_records",
]
