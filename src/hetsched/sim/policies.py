"""Policy registry of the immediate-mode mapping model (thesis ch. 2).

Users pick a policy by name (case-insensitive, names fixed by DESIGN.md);
inside the kernel it is the integer ``code``. The written contract of every
policy: a class-``i`` arrival at time ``t`` is mapped at once to one machine
(its FCFS queue), chosen as follows; ``ECT_ij = 1/mu_ij + sum_i' Q_i'j/mu_i'j``
is the expected completion time (§2.2.2), ``S_i = {j : delta*_ij > 0}`` the
LPAS set from the allocation LP, ``p_ij = delta*_ij mu_ij / (lambda* alpha_i)``.

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
=================  ====  =====================================================  ==========

Ties between machines with equal ``ECT`` (or, for MET, equal rates) follow the
``tie`` rule: ``lowest`` index (default), ``highest`` index, or ``random``
(uniform among the tied machines, from its own seeded stream).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError

__all__ = ["Policy", "POLICIES", "TIE_RULES", "get_policy", "tie_code"]


@dataclass(frozen=True)
class Policy:
    name: str
    code: int
    title: str
    uses_lp: bool
    needs_k: bool = False


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("met", 0, "MET (minimum execution time)", False),
        Policy("mct", 1, "MCT (minimum completion time)", False),
        Policy("kpb", 2, "KPB (k-percent best; k = number of machines)", False, needs_k=True),
        Policy("lpas", 3, "LPAS (LP-based affinity scheduling)", True),
        Policy("lpas-2k", 4, "LPAS-2/k (two choices within S_i)", True),
        Policy("lp-static", 5, "LP-Static (random with probabilities (2.6))", True),
        Policy("guided-lpas", 6, "Guided-LPAS", True),
        Policy("guided-lpas-2k", 7, "Guided-LPAS-2/k", True),
    )
}

TIE_RULES = {"lowest": 0, "highest": 1, "random": 2}


def get_policy(name: str) -> Policy:
    key = str(name).strip().lower()
    if key not in POLICIES:
        raise ModelError(f"policy {name!r} is not a mapping policy; known: {', '.join(POLICIES)}")
    return POLICIES[key]


def tie_code(rule: str) -> int:
    key = str(rule).strip().lower()
    if key not in TIE_RULES:
        raise ModelError(f"tie rule {rule!r} unknown; choose one of {', '.join(TIE_RULES)}")
    return TIE_RULES[key]
