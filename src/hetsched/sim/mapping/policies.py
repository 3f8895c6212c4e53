"""Policies of the immediate-mode mapping model (thesis ch. 2): the registry and user policies.

Users pick a built-in policy by name (case-insensitive, names fixed by
DESIGN.md); inside the kernel it is the integer ``code``. The written contract
of every policy: a class-``i`` arrival at time ``t`` is mapped at once to one
machine (its FCFS queue), chosen as follows; ``ECT_ij = 1/mu_ij + sum_i'
Q_i'j/mu_i'j`` is the expected completion time (§2.2.2), ``S_i = {j :
delta*_ij > 0}`` the LPAS set from the allocation LP, ``p_ij = delta*_ij
mu_ij / (lambda* alpha_i)``.

=================  ====  =====================================================  ==========
name               code  machine chosen                                          contacted
=================  ====  =====================================================  ==========
met                0     least ``1/mu_ij`` (no state)                            0
mct                1     least ``ECT_ij`` over all machines with ``mu_ij > 0``   all
kpb                2     least ``ECT_ij`` over the ``k`` fastest machines        ``k``
lpas               3     least ``ECT_ij`` over ``S_i``                           ``|S_i|``
lpas-2k            4     two machines of ``S_i`` drawn with weights ``p_ij``      2
                         (without replacement), the one with least ``ECT_ij``
lp-static          5     machine ``j`` with probability ``p_ij`` (2.6)           0
guided-lpas        6     least ``ECT_ij`` over ``T_i(t) = {j in S_i :            ``|T_i|``
                         a_ij(t-) < p_ij a_i(t) + C_ij sqrt(t)}`` (§2.4)
guided-lpas-2k     7     as lpas-2k over ``T_i(t)``                              2
(a user policy)    8     what the user's function returns (below)                -
=================  ====  =====================================================  ==========

Ties between machines with equal ``ECT`` (or, for MET, equal rates) follow the
``tie`` rule: ``random`` (default: uniform among the machines tied at decision
time, from the run's own tie-breaking stream), ``lowest`` index or ``highest``
index. §2.1 says ties are "broken arbitrarily"; the uniform choice is the
neutral reading (``docs/_parts/assumptions-sim.md``).

User-written policies
---------------------
:func:`mapping_policy` turns a plain Python function
``f(i, mu, n, work, u) -> machine`` into a :class:`MappingPolicy` that runs
*inside* the compiled engine: ``i`` the class of the arriving task; ``mu``
the ``N x M`` rates; ``n[j]`` the tasks at machine ``j`` (queued and
running); ``work[j]`` the sum of ``1/mu`` over those tasks (``mu`` and
``work`` in the engine's time unit ``1/L``, in which every ``1/mu`` is an
integer when the rates are small decimals, so sums and ties are exact:
``mu`` is the system's rates divided by ``L``; ``L = 1`` otherwise); ``u`` a
uniform(0, 1] from the policy's own stream (drawn at every arrival; skipped
when the function never reads ``u``, since nobody could observe it). It
returns a machine index. The function is compiled with numba (nopython) into
the simulation kernel, so no Python runs per event; the kernel is cached on
disk by the function's content (:mod:`hetsched.sim.core.kernels`), so a new
process reuses it. A user policy breaks its own ties (with ``u`` if it wants
them random); the ``tie`` option does not apply to it.

Safety: ``mu``, ``n`` and ``work`` are read-only (a function that writes to
them is refused when it is compiled); indexing is bounds-checked and division
by zero raises, as in Python; the run happens in a watched child process
(:mod:`hetsched.sim.core.guard`), so a crash cannot take the interpreter with
it, Ctrl-C stops it, and a policy that makes no progress for
``policy_timeout`` seconds (default 10) is stopped. Each of these, and a
returned index outside ``0..M-1`` or a machine with ``mu_ij = 0``, stops the
run with a :class:`~hetsched.errors.ModelError` naming the policy.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ModelError
from ...policies.user import DEFAULT_TIE, TIE_RULES, UserPolicy, tie_code

__all__ = ["Policy", "POLICIES", "TIE_RULES", "DEFAULT_TIE", "USER_CODE", "get_policy", "tie_code",
           "MappingPolicy", "mapping_policy"]


# selection families: the policies of one family share one compiled kernel (per tie rule); the numbers are
# those of hetsched.sim.mapping.kernel.F_* (kept here too so that this module loads no numba)
F_ARGMIN, F_MET, F_STATIC, F_TWO, F_GUIDED, F_GUIDED_TWO, F_USER = range(7)


@dataclass(frozen=True)
class Policy:
    name: str
    code: int
    title: str
    uses_lp: bool
    family: int
    needs_k: bool = False


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("met", 0, "MET (minimum execution time)", False, F_MET),
        Policy("mct", 1, "MCT (minimum completion time)", False, F_ARGMIN),
        Policy("kpb", 2, "KPB (k-percent best; k = number of machines)", False, F_ARGMIN, needs_k=True),
        Policy("lpas", 3, "LPAS (LP-based affinity scheduling)", True, F_ARGMIN),
        Policy("lpas-2k", 4, "LPAS-2/k (two choices within S_i)", True, F_TWO),
        Policy("lp-static", 5, "LP-Static (random with probabilities (2.6))", True, F_STATIC),
        Policy("guided-lpas", 6, "Guided-LPAS", True, F_GUIDED),
        Policy("guided-lpas-2k", 7, "Guided-LPAS-2/k", True, F_GUIDED_TWO),
    )
}
USER_CODE = 8


def get_policy(name: str) -> Policy:
    key = str(name).strip().lower()
    if key not in POLICIES:
        raise ModelError(f"policy {name!r} is not a mapping policy; known: {', '.join(POLICIES)}")
    return POLICIES[key]


# --------------------------------------------------------------------------- user policies
class MappingPolicy(UserPolicy):
    """A user-written mapping policy (made by :func:`mapping_policy`).

    Calling it calls the plain Python function (handy for testing it); the
    simulator uses :meth:`compiled`. Picklable, so it travels to worker
    processes (by value, with numba's cloudpickle), where the kernel is
    specialised again once per process.
    """

    __hetsched_model__ = "mapping"  # hetsched.simulate routes a policy object to its model by this
    KIND = "mapping policy"
    ARGS = ("i", "mu", "n", "work", "u")
    READ_ONLY = ("mu", "n", "work")
    RETURNS = "a machine index"

    def __init__(self, fn, name: str | None = None, _token: str | None = None):
        super().__init__(fn, name, _token)
        self.uses_u = _reads_argument(fn, self._params[4].name) if self._params else True

    def signature(self):
        from numba import types

        ro = dict(readonly=True)
        return (types.int64, types.Array(types.float64, 2, "C", **ro), types.Array(types.int64, 1, "C", **ro),
                types.Array(types.float64, 1, "C", **ro), types.float64)


def _reads_argument(fn, name: str) -> bool:
    """False only when the function's bytecode provably never reads argument ``name``.

    Then the engine skips the policy's uniform draw (a value nobody can observe);
    anything unusual (nested functions, no bytecode) counts as reading it.
    """
    import dis

    code = getattr(getattr(fn, "py_func", fn), "__code__", None)
    if code is None or code.co_cellvars or any(isinstance(c, type(code)) for c in code.co_consts):
        return True
    return any(ins.argval == name for ins in dis.get_instructions(code)
               if ins.opname.startswith(("LOAD_", "DELETE_", "STORE_")))


def mapping_policy(fn=None, *, name: str | None = None):
    """Decorator: a Python function ``f(i, mu, n, work, u) -> machine`` becomes a mapping policy.

    Usage::

        @hs.mapping_policy
        def my_mct(i, mu, n, work, u):
            best, best_v = -1, 0.0
            for j in range(mu.shape[1]):
                if mu[i, j] > 0.0:
                    v = work[j] + 1.0 / mu[i, j]
                    if best < 0 or v < best_v:
                        best, best_v = j, v
            return best

        res = hs.simulate(system, my_mct, reps=30, horizon=20_000, seed=1)

    See the module docstring for the arguments; ``name`` defaults to the
    function's name.
    """
    if fn is None:
        return lambda f: MappingPolicy(f, name)
    return MappingPolicy(fn, name)


def resolve(policy) -> tuple[Policy, MappingPolicy | None]:
    """``(Policy, user)`` for a policy name or a :class:`MappingPolicy`."""
    if isinstance(policy, MappingPolicy):
        return Policy(policy.name, USER_CODE, f"user policy {policy.name}", False, F_USER), policy
    if callable(policy) and not isinstance(policy, str):
        raise ModelError(f"policy {getattr(policy, '__name__', policy)!r} is a plain function: decorate it with "
                         f"@hetsched.mapping_policy")
    if not isinstance(policy, str):
        raise ModelError(f"policy must be a name or a @mapping_policy function, got {policy!r}")
    return get_policy(policy), None

