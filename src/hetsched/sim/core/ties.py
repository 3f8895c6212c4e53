"""The one tie chooser of every simulator: which of several equally good candidates wins.

The papers break ties "arbitrarily"; every model takes a tie rule as a
parameter (DESIGN.md): ``lowest`` index, ``highest`` index or ``random``
(uniform among the tied candidates, drawn from the run's own tie stream so
that runs stay reproducible). The rule names and codes are those of
:mod:`hetsched.policies.user` (plain Python, shared with the dispatcher):
:data:`TIE_LOWEST` = 0, :data:`TIE_HIGHEST` = 1, :data:`TIE_RANDOM` = 2.

Two compiled ways to apply a rule, for the two shapes of a selection loop
(both compiled, no checks, inlined into the kernel that calls them):

* **collect, then choose** -- :func:`tie_pick` (``tie, buf, nt, st, s``): the
  loop gathers the ``nt`` tied candidates in ``buf[:nt]`` in scan order; the
  rule returns the first, the last, or ``buf[below(st, s, nt)]`` (one draw).
  Used where the candidates are scanned in ascending index order (the mapping
  model's machines).
* **streaming** -- :func:`tie_keep` (``tie, j, best, w, wtot, st, s``): the loop
  meets tied candidates one at a time; ``j`` (weight ``w``; ``wtot`` = the
  total weight of the tied candidates met so far, ``j`` included) replaces
  the current ``best`` when the rule says so: ``j < best``, ``j > best``, or
  with probability ``w / wtot`` (one draw per tied candidate; reservoir
  sampling, uniform in the end when every weight is 1). Used where the scan
  order is not the index order, or a candidate stands for several tied ones
  (weights).

The two draw different numbers of variates, so a model keeps the one it has
(changing it changes its random numbers, not the distribution of its choice).
"""

from __future__ import annotations

from numba import njit

from ...policies.user import DEFAULT_TIE, TIE_RULES, tie_code
from .rng import below, uniform

__all__ = ["TIE_RULES", "DEFAULT_TIE", "TIE_LOWEST", "TIE_HIGHEST", "TIE_RANDOM", "TIE_NAMES", "tie_code",
           "tie_pick", "tie_keep"]

TIE_LOWEST = TIE_RULES["lowest"]
TIE_HIGHEST = TIE_RULES["highest"]
TIE_RANDOM = TIE_RULES["random"]
#: code -> name
TIE_NAMES = {v: k for k, v in TIE_RULES.items()}


@njit(cache=True, inline="always")
def tie_pick(tie, buf, nt, st, s):
    """One of the ``nt >= 1`` tied candidates ``buf[:nt]`` (scan order): first, last, or uniform (stream ``s``)."""
    if nt <= 1:
        return buf[0]
    if tie == TIE_RANDOM:
        return buf[below(st, s, nt)]
    if tie == TIE_HIGHEST:
        return buf[nt - 1]
    return buf[0]


@njit(cache=True, inline="always")
def tie_keep(tie, j, best, w, wtot, st, s):
    """True when tied candidate ``j`` (weight ``w``; ``wtot`` the tied weight so far, ``j`` included)
    replaces ``best``: lower index, higher index, or with probability ``w / wtot`` (one draw from ``s``)."""
    if tie == TIE_LOWEST:
        return j < best
    if tie == TIE_HIGHEST:
        return j > best
    return uniform(st, s) * wtot <= w
