"""Pull policies of the desktop-grid model (thesis §3.1-§3.3): which class an idle machine takes.

Plain Python (importing this module does not load numba): the real
dispatcher (:mod:`hetsched.dispatch`) calls :func:`select_class` directly, and
the desktop-grid kernel (:mod:`hetsched.sim.desktop.kernel`) compiles the very
same source (:func:`choose`) with numba.

The written contract
--------------------
When an available, idle machine ``j`` requests a task at time ``t``, the
scheduler picks a class ``i`` among the classes the machine may take --
``qlen[i] > 0`` (a task waits), ``rate[i] = mu'_ij > 0`` and ``eligible[i]``
-- and hands over that class queue's head-of-line task (FCFS within a class).

=================  ====  ==================================================
name               code  class chosen
=================  ====  ==================================================
fcfs               0     the longest-waiting head: ``argmin_i head_arrival[i]``
                         (§3.1); ``eligible`` is ignored
gcmu               1     ``argmax_i D_i(t) mu'_ij``, ``D_i(t) = t -
                         head_arrival[i]`` (§3.2); ``eligible`` is ignored
lpas-dg            2     the Gcmu rule over the classes with ``delta*_ij > 0``
                         (``eligible``), ``delta*`` a vertex of the
                         allocation LP of the available machines (§3.3)
lpas-dg-robust     3     the same with the central LP solution (§3.4.6)
(a user policy)    4     what the user's function returns (below)
=================  ====  ==================================================

``mu_ij = a_j mu'_ij`` and ``a_j`` is common to all classes of machine ``j``, so
the Gcmu/LPAS_DG argmax is the same with nominal or effective rates.

Ties (equal keys) follow the ``tie`` rule: ``"random"`` (default; uniform
among the tied classes, from the caller's tie stream: ``u`` in [0, 1)),
``"lowest"`` or ``"highest"`` class index. The thesis says ties are broken
"arbitrarily"; the uniform choice is the neutral reading
(``docs/_parts/assumptions-desktop.md``). Returns ``-1`` when no class
qualifies (the machine then stays idle until a task it may take arrives).

User-written pull policies
--------------------------
:func:`pull_policy` turns a plain Python function
``f(t, qlen, head_arrival, rate, eligible, u) -> class`` into a
:class:`PullPolicy`: ``t`` the decision time; ``qlen[i]`` tasks waiting in
class ``i``; ``head_arrival[i]`` the original arrival time of class ``i``'s
head-of-line task (meaningful where ``qlen > 0``); ``rate[i] = mu'_ij`` the
machine's nominal rates; ``eligible[i]`` ``delta*_ij > 0`` of the vertex LP if
the policy was declared with ``uses_lp=True``, else ``rate[i] > 0``; ``u`` a
uniform in [0, 1) from the policy's own stream. It is called only when at
least one class qualifies, and must return a qualifying class (``qlen > 0``,
``rate > 0``, ``eligible``); anything else stops the run with a
:class:`~hetsched.errors.ModelError` naming the policy, the machine and the
value. In the simulator the function is compiled with numba into the kernel
(no Python per event); in the dispatcher it runs as plain Python.
"""

from __future__ import annotations

from ..errors import ModelError
from .user import DEFAULT_TIE, TIE_RULES, UserPolicy, tie_code

__all__ = ["FCFS", "GCMU", "LPAS_DG", "LPAS_DG_ROBUST", "USER", "POLICY_CODES", "POLICY_NAMES", "TIE_RULES",
           "DEFAULT_TIE", "policy_code", "tie_code", "select_class", "choose", "qualifies", "PullPolicy",
           "pull_policy", "resolve"]

FCFS, GCMU, LPAS_DG, LPAS_DG_ROBUST, USER = 0, 1, 2, 3, 4
POLICY_CODES = {"fcfs": FCFS, "gcmu": GCMU, "lpas-dg": LPAS_DG, "lpas-dg-robust": LPAS_DG_ROBUST}
POLICY_NAMES = {v: k for k, v in POLICY_CODES.items()}


def policy_code(name: str) -> int:
    """Integer code of a built-in policy name (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in POLICY_CODES:
        raise ModelError(f"policy: expected one of {', '.join(POLICY_CODES)}, got {name!r}")
    return POLICY_CODES[key]


def choose(policy, tie, t, qlen, head_arrival, rate, r, eligible, e, u):
    """The selection rule on rows: rates ``rate[r, :]``, eligibility ``eligible[e, :]``.

    Plain Python and numba-compilable (the kernel reads its 2-D arrays in
    place, without array views). ``tie``: 0 lowest, 1 highest, 2 random (the
    ``floor(u * n)``-th of the ``n`` tied classes, ``u`` in [0, 1)).
    """
    best = -1
    best_key = 0.0
    nt = 0
    use_lp = policy == 2 or policy == 3
    n = qlen.shape[0]
    for i in range(n):
        if qlen[i] <= 0 or rate[r, i] <= 0.0:
            continue
        if use_lp and not eligible[e, i]:
            continue
        if policy == 0:
            key = -head_arrival[i]  # oldest head first
        else:
            key = (t - head_arrival[i]) * rate[r, i]
        if best < 0 or key > best_key:
            best = i
            best_key = key
            nt = 1
        elif key == best_key:
            nt += 1
            if tie == 1:
                best = i
    if nt > 1 and tie == 2:
        # second pass: the k-th tied class, k uniform in 0..nt-1
        k = int(u * nt)
        if k >= nt:
            k = nt - 1
        for i in range(n):
            if qlen[i] <= 0 or rate[r, i] <= 0.0:
                continue
            if use_lp and not eligible[e, i]:
                continue
            if policy == 0:
                key = -head_arrival[i]
            else:
                key = (t - head_arrival[i]) * rate[r, i]
            if key == best_key:
                if k == 0:
                    return i
                k -= 1
    return best


def qualifies(i, qlen, rate, r, eligible, e, uses_lp):
    """True when class ``i`` may be handed to the machine (the contract above)."""
    if i < 0 or i >= qlen.shape[0]:
        return False
    if qlen[i] <= 0 or rate[r, i] <= 0.0:
        return False
    return not uses_lp or bool(eligible[e, i])


def select_class(policy, t, qlen, head_arrival, rate, eligible, *, tie="lowest", u=0.0, machine=None):
    """Class whose head-of-line task the requesting machine receives, or ``-1``.

    Parameters
    ----------
    policy : int or PullPolicy
        ``FCFS``, ``GCMU``, ``LPAS_DG``, ``LPAS_DG_ROBUST``, or a user policy
        made by :func:`pull_policy`.
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
        For the LPAS_DG policies (and user policies with ``uses_lp``),
        ``delta*_ij > 0``; ignored by FCFS and Gcmu.
    tie : {"lowest", "highest", "random"}
        Ties between classes with equal keys (``random`` uses ``u``).
    u : float
        A uniform in [0, 1) (random ties; passed to a user policy).
    machine : int, optional
        The requesting machine, named in the error of a user policy.
    """
    import numpy as np

    q = np.asarray(qlen)
    rt = np.asarray(rate, dtype=float).reshape(1, -1)
    el = np.asarray(eligible, dtype=bool).reshape(1, -1)
    if isinstance(policy, PullPolicy):
        if not any(qualifies(i, q, rt, 0, el, 0, policy.uses_lp) for i in range(q.shape[0])):
            return -1
        i = policy.fn(t, q, np.asarray(head_arrival, dtype=float), rt[0], el[0], u)
        policy.check(i, q, rt, el, machine)
        return int(i)
    return choose(int(policy), TIE_RULES[tie] if isinstance(tie, str) else int(tie), t, q, head_arrival, rt, 0,
                  el, 0, u)


# --------------------------------------------------------------------------- user policies
class PullPolicy(UserPolicy):
    """A user-written pull policy (made by :func:`pull_policy`).

    Calling it calls the plain Python function; the simulator compiles it
    (:meth:`compiled`) into the desktop-grid kernel, specialised once per
    policy per process. Picklable (by value, with numba's cloudpickle), so it
    travels to worker processes.
    """

    code = USER
    #: the model that runs it (``hetsched.simulate`` routes a policy object by this name)
    __hetsched_model__ = "desktop-grid"
    KIND = "pull policy"
    ARGS = ("t", "qlen", "head_arrival", "rate", "eligible", "u")
    READ_ONLY = ("qlen", "head_arrival", "rate", "eligible")
    RETURNS = "a class index"

    def __init__(self, fn, name: str | None = None, uses_lp: bool = False, _token: str | None = None):
        self.uses_lp = bool(uses_lp)
        super().__init__(fn, name, _token)

    def _options(self) -> dict:
        return {"uses_lp": self.uses_lp}

    def __repr__(self) -> str:
        return f"<pull policy {self.name!r}{' (uses the LP)' if self.uses_lp else ''}>"

    def signature(self):
        from numba import types

        def ro(dt):
            return types.Array(dt, 1, "C", readonly=True)

        # read-only: the check at compile time refuses a function that writes to the engine's state
        return (types.float64, ro(types.int64), ro(types.float64), ro(types.float64), ro(types.boolean),
                types.float64)

    def error(self, machine, value, why: str) -> ModelError:
        where = f"machine {machine}" if machine is not None else "a machine"
        return ModelError(f"pull policy {self.name!r} returned class {value!r} for {where}: {why}")

    def check(self, i, qlen, rate, eligible, machine=None) -> None:
        """Raise the contract's error if ``i`` is not a class the machine may take."""
        try:
            ok_int = int(i) == i and not isinstance(i, bool)
        except (TypeError, ValueError):
            ok_int = False
        if not ok_int:
            raise self.error(machine, i, "not an integer class index")
        self.explain(int(i), qlen, rate, eligible, machine)

    def explain(self, i, qlen, rate, eligible, machine=None) -> None:
        N = qlen.shape[0]
        if not 0 <= i < N:
            raise self.error(machine, i, f"outside 0..{N - 1} (a class that waits must be chosen)")
        if qlen[i] <= 0:
            raise self.error(machine, i, f"no task of class {i} is waiting")
        if rate[0, i] <= 0.0:
            raise self.error(machine, i, f"the machine cannot run class {i} (rate 0)")
        if self.uses_lp and not eligible[0, i]:
            raise self.error(machine, i, f"class {i} is not in the machine's LP support (delta* = 0)")


def pull_policy(fn=None, *, name: str | None = None, uses_lp: bool = False):
    """Decorator: ``f(t, qlen, head_arrival, rate, eligible, u) -> class`` becomes a pull policy.

    Usage (Gcmu written by hand; with ``tie="lowest"`` it gives exactly the
    built-in ``gcmu``'s numbers)::

        @hs.pull_policy
        def my_gcmu(t, qlen, head_arrival, rate, eligible, u):
            best, best_key = -1, 0.0
            for i in range(qlen.shape[0]):
                if qlen[i] > 0 and rate[i] > 0.0:
                    key = (t - head_arrival[i]) * rate[i]
                    if best < 0 or key > best_key:
                        best, best_key = i, key
            return best

        res = hs.simulate(hs.load("3.A"), my_gcmu, reps=30, horizon=20_000, seed=1)

    ``uses_lp=True``: the simulator maintains the vertex LP of the available
    machines (as for ``lpas-dg``) and passes its support as ``eligible``; an
    arriving task then also goes only to an idle machine whose support holds
    its class. See the module docstring for the contract.
    """
    if fn is None:
        return lambda f: PullPolicy(f, name, uses_lp)
    return PullPolicy(fn, name, uses_lp)


def resolve(policy):
    """``(code, name, user)`` for a policy name or a :class:`PullPolicy`."""
    if isinstance(policy, PullPolicy):
        return USER, policy.name, policy
    if callable(policy) and not isinstance(policy, str):
        raise ModelError(f"policy {getattr(policy, '__name__', policy)!r} is a plain function: decorate it with "
                         f"@hetsched.pull_policy")
    if not isinstance(policy, str):
        raise ModelError(f"policy must be a name or a @pull_policy function, got {policy!r}")
    code = policy_code(policy)
    return code, POLICY_NAMES[code], None
