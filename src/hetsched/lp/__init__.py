"""The allocation LP (thesis (2.1)-(2.3), with CPU availabilities (3.1)-(3.3)).

.. math::

    \\max \\lambda \\quad\\text{s.t.}\\quad
    \\sum_j \\delta_{ij}\\mu'_{ij} \\ge \\lambda\\alpha_i \\;(\\forall i),\\qquad
    \\sum_i \\delta_{ij} \\le a_j \\;(\\forall j),\\qquad \\delta_{ij} \\ge 0.

``lambda*`` is the system's maximum capacity: the system can be stabilized iff
``lambda* > 1`` (Theorems 2.2.1-2.2.2) and ``1/lambda*`` is the long-run
utilisation of the busiest machine; ``delta*[i, j]`` is the long-run fraction of
machine ``j`` given to class ``i`` at maximum capacity.

Solutions (HiGHS, through ``highspy``, for the LPs themselves):

* ``vertex`` — a basic optimal solution from the simplex method; it has at least
  ``N*M + 1 - N - M`` zeros (Proposition 2.2.1). Where the system has groups of
  interchangeable machines (same rate column and availability), the default is
  the **group-symmetric** vertex the thesis uses for 2.C1/2.C2: each group is
  aggregated into one machine of ``count`` times the capacity, the aggregate LP
  is solved, and every member gets the group's fraction.
* ``central`` — the interior-point solution without crossover (a point in the
  relative interior of the optimal face), used by the robust variants of §3.4.6.

Large systems (``method="auto"`` with more than ``AUTO_PAIRS`` runnable pairs,
vertex solutions) take the route their shape favours: the **price route**
where there are at least as many distinct machines as classes (and copies are
at most half of them), HiGHS interior point with crossover otherwise (fewer
machines than classes, or mostly copies of a few machines: all tied), so that
no route is slower than HiGHS IPM. The price route uses the structure of the
LP. Its dual has only ``N`` free variables: with machine prices
``v_j = max_i y_i mu_ij / alpha_i`` eliminated,

.. math::

    \\lambda^* = \\min_{y \\ge 0,\\ \\sum_i y_i = 1} \\; f(y), \\qquad
    f(y) = \\sum_j a_j \\max_i y_i \\mu_{ij} / \\alpha_i ,

a convex piecewise-linear function on the simplex (``w_i = y_i / alpha_i`` are
the class prices in the units of (2.1), ``alpha.w = 1``). The route:

1. *prices*: minimise the entropy-smoothed ``f_tau`` (log-sum-exp over the
   classes of each machine) by Newton's method for decreasing ``tau``, on
   growing samples of the machines, then on all of them;
2. *decided machines*: a machine whose best score ``y_i mu_ij / alpha_i`` beats
   its second by a clear margin gives all its capacity to that class
   (complementary slackness at the optimum); their capacity is summed per
   class into one right-hand side, so
3. *master*: only the contested machines (near-ties) are LP rows and columns;
   the master is solved by HiGHS simplex, its class duals re-price every pair
   of the full LP (one compiled pass), and machines or pairs that price out
   enter the master, which is re-solved warm (column generation) until none
   does. The result is a basic optimal solution of the full LP (a vertex).

Every result is certified after solving: the primal residuals (class rows
(2.1), machine rows) and the weak-duality bound ``f(w)`` of the reported prices
against the capacity ``min_i sum_j delta_ij mu_ij / alpha_i`` that ``delta``
actually gives; a price-route answer that fails is replaced by HiGHS on the
whole LP (interior point with crossover for large LPs). HiGHS solves the LP as written (the vertices hetsched has always
returned) and, if that answer fails, once more rescaled per unit of arrival
rate with tight tolerances. An LP without positive capacity or a solver
failure is a ``status`` of the result, not an exception (see
:class:`AllocationResult`). 

Layout (as scipy's ``optimize``): ``_solve`` (the front end:
:func:`solve_allocation` validates and scales, :func:`allocation_lp`
aggregates a system's identical machines), ``_result``
(:class:`AllocationResult`), ``_highs`` (HiGHS on the whole LP, and the price
route's master), ``_prices`` (the price route), ``_kernels`` (its compiled
sweeps), ``_certify`` (the certificate), and :mod:`hetsched.lp.tableau`, the
compiled dense tableau with which the desktop-grid and decentralized
simulators re-solve the LP inside their event loops. Public names load their
module on first use, so importing ``hetsched.lp.tableau`` loads neither HiGHS
nor the solver modules.
"""

from __future__ import annotations

from .._lazy import lazy_names

_LAZY = {
    "AllocationResult": "_result",
    "solve_allocation": "_solve",
    "allocation_lp": "_solve",
    "SOLUTIONS": "_solve",
    "METHODS": "_solve",
    "AUTO_PAIRS": "_solve",
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY, ("tableau",))
