"""Pull-based selection rules of the desktop-grid model (thesis §3.1-§3.3).

When an available, idle machine ``j`` requests a task at time ``t``, the scheduler
picks a class ``i`` among its non-empty FCFS class queues and hands over that
queue's head-of-line task:

* ``fcfs`` (§3.1) — the longest-waiting head over all classes the machine can run
  (``mu'_ij > 0``): ``i = argmin_i head_arrival[i]``;
* ``gcmu`` (§3.2) — ``i = argmax_i D_i(t) mu'_ij`` where ``D_i(t) = t -
  head_arrival[i]`` is the sojourn time of class ``i``'s head-of-line task;
* ``lpas-dg`` / ``lpas-dg-robust`` (§3.3, §3.4.6) — the same ``argmax D_i(t)
  mu_ij`` restricted to the classes with ``delta*_ij > 0`` (``eligible``). Since
  ``mu_ij = a_j mu'_ij`` and ``a_j`` is common to all classes of machine ``j``,
  the argmax is the same with nominal rates.

Ties (equal keys) go to the lowest class index. Returns ``-1`` when no class
qualifies (the machine then stays idle until a task it may take arrives).

:func:`select_class` is plain Python, usable by a real dispatcher;
:data:`select_class_nb` is the same source compiled by numba and used by the
simulation kernel (``tests/test_desktop_policies.py`` checks they agree).
"""

from __future__ import annotations

from numba import njit

__all__ = ["POLICY_CODES", "policy_code", "select_class", "select_class_nb", "FCFS", "GCMU", "LPAS_DG", "LPAS_DG_ROBUST"]

FCFS = 0
GCMU = 1
LPAS_DG = 2
LPAS_DG_ROBUST = 3

POLICY_CODES = {"fcfs": FCFS, "gcmu": GCMU, "lpas-dg": LPAS_DG, "lpas-dg-robust": LPAS_DG_ROBUST}


def policy_code(name: str) -> int:
    """Integer code of a policy name (case-insensitive)."""
    from ..errors import ModelError

    key = str(name).lower()
    if key not in POLICY_CODES:
        raise ModelError(f"policy: expected one of {sorted(POLICY_CODES)}, got {name!r}")
    return POLICY_CODES[key]


def select_class(policy, t, qlen, head_arrival, rate, eligible):
    """Class whose head-of-line task machine ``j`` receives, or ``-1``.

    Parameters
    ----------
    policy : int
        ``FCFS``, ``GCMU``, ``LPAS_DG`` or ``LPAS_DG_ROBUST``.
    t : float
        Decision time.
    qlen : (N,) int array
        Tasks waiting per class.
    head_arrival : (N,) float array
        Original arrival time of each class's head-of-line task (read only where
        ``qlen > 0``).
    rate : (N,) float array
        The machine's nominal rates ``mu'_ij``.
    eligible : (N,) bool array
        For the LPAS_DG policies, ``delta*_ij > 0``; ignored by FCFS and Gcmu
        (they use ``rate > 0``).
    """
    best = -1
    best_key = 0.0
    n = qlen.shape[0]
    use_lp = policy == 2 or policy == 3
    for i in range(n):
        if qlen[i] <= 0 or rate[i] <= 0.0:
            continue
        if use_lp and not eligible[i]:
            continue
        if policy == 0:
            key = -head_arrival[i]  # oldest head first
        else:
            key = (t - head_arrival[i]) * rate[i]
        if best < 0 or key > best_key:
            best = i
            best_key = key
    return best


select_class_nb = njit(cache=True)(select_class)
