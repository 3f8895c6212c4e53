"""Moved to :mod:`hetsched.policies.pull` (plain Python, no numba); kept as a re-export for old imports."""

from ..policies.pull import (  # noqa: F401
    FCFS, GCMU, LPAS_DG, LPAS_DG_ROBUST, POLICY_CODES, policy_code, select_class,
)

__all__ = ["POLICY_CODES", "policy_code", "select_class", "FCFS", "GCMU", "LPAS_DG", "LPAS_DG_ROBUST"]
