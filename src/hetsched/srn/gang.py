r"""Gang scheduling with migration in a two-site grid, as an SRN (Ro & Cao 2010, seed 003).

Model (paper Section 3, Fig. 1, Tables 1-5; choices for what the paper leaves
open are marked *A* and listed in ``docs/assumptions.md``)

Places (initial marking)
    ``GQ`` (0)         gangs waiting in the grid scheduler's queue, capacity ``C`` = 64
    ``PCONT`` (1)      rate-control level of the threshold queue, 1..K (K = 7)
    ``N1``, ``N2`` (16) idle servers of site 1 / 2
    ``LQ1``, ``LQ2`` (0) tasks in execution at site i (each holds one server, so
                       ``#N_i + #LQ_i = n_i`` is invariant)
    ``pl1``, ``pl2`` (0) local jobs (and migrated gang tasks) waiting for a server of site i
    ``RR1`` (1), ``RR2`` (0)  round-robin turn, LS policy only (*A*)

Timed transitions (rate)
    ``T``      gang arrival, rate ``lambda``, guard ``#GQ < C``  (Table 4 prints
               ``mu*#PCONT`` for T; the text says rate lambda, *A*); ``arrival=
               "lambda*pcont"``: ``lambda*#PCONT``; ``arrival="mu*pcont"``: Table 4 as written,
               ``arrival_mu*#PCONT`` (then lambda does not enter the model)
    ``GS1``    dispatch a gang to site 1: GQ -1, N1 -np, LQ1 +np; rate ``mu1*#PCONT``;
               guard = policy guard of site 1 (Table 5)
    ``GS2``    same for site 2, rate ``mu2*#PCONT``
    ``GS11``   dispatch with migration, site 1 first (Tables 1-2): GQ -1,
               N1 -ca1, LQ1 +ca1, pl2 +ca2 with ca1 = #N1, ca2 = np - #N1; rate
               ``mu1*#PCONT`` (*A*); guard ``1 < #N1 < np && #N2 > np - #N1`` (Table 1)
               and the policy guard of site 1 (*A*)
    ``GS21``   symmetric (ca11 = #N2, ca21 = np - #N2), rate ``mu2*#PCONT``
    ``LT1``, ``LT2``  local job arrival, rate ``lambda_local`` (*A*), guard ``#pl_i < q_i`` (*A*)
    ``t1``, ``t2``    task completion: LQ_i -1, N_i +1, rate ``mu_task * #LQ_i`` (*A*)

Immediate transitions (all priority 1, weight 1)
    ``it1``, ``it2``  pl_i -1, N_i -1, LQ_i +1 (local jobs and migrated tasks take a free server)
    ``Tinc``   PCONT +1, guard ``#GQ > S_{#PCONT} && #PCONT < K``   (Table 3)
    ``Tdec``   PCONT -1, guard ``#GQ <= s_{#PCONT-1}`` (and ``#PCONT > 1``) (Table 3)

Policies (guards of GS1 / GS2, Table 5; relation signs lost in the paper, *A*)
    LS   round robin: GS1/GS11 need the token in RR1 and pass it to RR2, and back
         (``ls_rule="round-robin"``, *A*); ``ls_rule="race"``: no RR places, GS1 and GS2
         race whenever both can fire ("in turn" read as "both take part")
    LC1  ``#LQ1 <= #LQ2`` / ``#LQ1 > #LQ2``
    LC2  ``#LQ1 + #LQ2 <= th1`` / ``th1 < #LQ1 + #LQ2 <= th2`` with
         ``th1 = (h1+h2)/3``, ``th2 = 2(h1+h2)/3``, ``h_i = n_i + q_i``
         (``lc2_rule="table"``); ``lc2_rule="text"`` reads Section 4.3
         ("if TL <= th1 ... Site1, else ... Site2"): GS2 needs only ``TL > th1``

Measures (eqs 1-4)
    ST  = rate(t1) + rate(t2)
    SRT = E[#LQ1 + #LQ2 + #GQ] / rate(T)
    UoS = 1 - E[#N1 + #N2] / (n1 + n2)
    GoS = ST + W / SRT,  W = 10
"""

from __future__ import annotations

import numbers
import math
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ..errors import ModelError
from ..results import Result, fmt, jsonable
from .net import Net, mark, rate

__all__ = ["GangParams", "GangResult", "POLICIES", "gang_net", "gang_measures", "solve_gang", "LAMBDAS"]

POLICIES = ("LS", "LC1", "LC2")
LAMBDAS = tuple(1.0 + 0.5 * i for i in range(10))   # 1.0, 1.5, ..., 5.5 (Section 5.2)
MIGRATION_GUARDS = ("table", "text")
LC2_RULES = ("table", "text")
LS_RULES = ("round-robin", "race")
ARRIVALS = ("lambda", "lambda*pcont", "mu*pcont")


@dataclass(frozen=True)
class GangParams:
    """Parameters of the gang-scheduling SRN (defaults: paper Section 5.2 plus assumptions)."""

    policy: str = "LS"
    arrival_rate: float = 1.0                       # lambda
    capacity: int = 64                              # C
    forward: tuple[int, ...] = (0, 8, 16, 24, 32, 44)   # S_1..S_{K-1}
    reverse: tuple[int, ...] = (0, 4, 8, 12, 16, 20)    # s_1..s_{K-1}
    servers: tuple[int, int] = (16, 16)             # n1, n2
    gang_size: int = 5                              # np
    local_capacity: tuple[int, int] = (2, 2)        # q1, q2
    local_rate: tuple[float, float] = (1.0, 1.0)    # local arrival rates (A)
    task_rate: float = 1.0                          # service rate of one task on one server (A)
    mu: tuple[float, float] = (1.0, 1.0)            # mu1, mu2: dispatch rate per PCONT level (A)
    migration: bool = True
    migration_guard: str = "table"                  # "table": 1 < #N1 < np, #N2 > np-#N1; "text": 0 < .., >=
    migration_follows_policy: bool = True
    load_includes_waiting: bool = False             # LC1/LC2 load: #LQ_i (False) or #LQ_i + #pl_i
    arrival_scales_with_pcont: bool = False         # same as arrival="lambda*pcont" (kept for old callers)
    lc2_rule: str = "table"                         # LC-2: "table" (th1 < TL <= th2 for GS2) or "text" (TL > th1)
    W: float = 10.0
    ls_rule: str = "round-robin"                    # LS: strict alternation through RR1/RR2 (A), or "race"
    arrival: str = "lambda"                         # rate of T: "lambda", "lambda*pcont", "mu*pcont" (Table 4)
    arrival_mu: float = 1.0                         # the mu of Table 4's T rate mu*#PCONT (arrival="mu*pcont")

    def __post_init__(self):
        pol = str(self.policy).upper().replace("-", "")
        if pol not in POLICIES:
            raise ModelError(f"policy must be one of {', '.join(POLICIES)}, got {self.policy!r}")
        object.__setattr__(self, "policy", pol)
        for name in ("arrival_rate", "task_rate", "W"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v <= 0:
                raise ModelError(f"{name} must be a number > 0, got {v!r}")
        for name in ("local_rate", "mu"):
            v = tuple(getattr(self, name))
            if len(v) != 2 or any(not isinstance(x, numbers.Real) or not np.isfinite(x) or x < 0 for x in v):
                raise ModelError(f"{name} must be two numbers >= 0, got {v!r}")
            if name == "mu" and min(v) <= 0:
                raise ModelError(f"mu must be two numbers > 0, got {v!r}")
        for name in ("servers", "local_capacity"):
            v = tuple(getattr(self, name))
            if len(v) != 2 or any(isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 0 for x in v):
                raise ModelError(f"{name} must be two integers >= 0, got {v!r}")
        if not isinstance(self.capacity, numbers.Integral) or self.capacity < 1:
            raise ModelError(f"capacity must be an integer >= 1, got {self.capacity!r}")
        if not isinstance(self.gang_size, numbers.Integral) or not 1 <= self.gang_size <= min(self.servers):
            raise ModelError(f"gang_size must be an integer in 1..min(servers), got {self.gang_size!r}")
        S, s = tuple(self.forward), tuple(self.reverse)
        if len(S) != len(s) or len(S) < 1:
            raise ModelError(f"forward and reverse thresholds must have the same length >= 1, got {S!r}, {s!r}")
        if any(b <= a for a, b in zip(S, S[1:])) or any(b <= a for a, b in zip(s, s[1:])):
            raise ModelError(f"thresholds must increase strictly, got forward={S!r}, reverse={s!r}")
        if any(r > f for f, r in zip(S, s)):
            raise ModelError(f"each reverse threshold must be <= its forward threshold (else a vanishing loop), "
                             f"got forward={S!r}, reverse={s!r}")
        if self.migration_guard not in MIGRATION_GUARDS:
            raise ModelError(f"migration_guard must be one of {MIGRATION_GUARDS}, got {self.migration_guard!r}")
        if self.lc2_rule not in LC2_RULES:
            raise ModelError(f"lc2_rule must be one of {LC2_RULES}, got {self.lc2_rule!r}")
        if self.ls_rule not in LS_RULES:
            raise ModelError(f"ls_rule must be one of {LS_RULES}, got {self.ls_rule!r}")
        if self.arrival not in ARRIVALS:
            raise ModelError(f"arrival must be one of {ARRIVALS}, got {self.arrival!r}")
        if self.arrival_scales_with_pcont:
            if self.arrival not in ("lambda", "lambda*pcont"):
                raise ModelError(f"arrival_scales_with_pcont=True contradicts arrival={self.arrival!r}")
            object.__setattr__(self, "arrival", "lambda*pcont")
        object.__setattr__(self, "arrival_scales_with_pcont", self.arrival == "lambda*pcont")
        v = self.arrival_mu
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v <= 0:
            raise ModelError(f"arrival_mu must be a number > 0, got {v!r}")

    @property
    def K(self) -> int:
        return len(self.forward) + 1

    @property
    def thresholds(self) -> tuple[float, float]:
        h = sum(self.servers) + sum(self.local_capacity)
        return h / 3.0, 2.0 * h / 3.0

    def with_(self, **kw) -> "GangParams":
        return replace(self, **kw)


def gang_net(p: GangParams) -> Net:
    """Build the SRN of the two-site grid (see the module docstring)."""
    n1, n2 = p.servers
    npg = p.gang_size
    K = p.K
    big = np.iinfo(np.int64).max // 4
    S_pad = np.array([big, *p.forward, big], dtype=np.int64)       # index = #PCONT (1..K)
    s_pad = np.array([-1, *p.reverse], dtype=np.int64)              # index = #PCONT - 1
    th1, th2 = p.thresholds
    net = Net(f"gang_{p.policy}")
    net.places(GQ=0, PCONT=1, N1=n1, LQ1=0, pl1=0, N2=n2, LQ2=0, pl2=0)
    rr = p.policy == "LS" and p.ls_rule == "round-robin"
    if rr:
        net.places(RR1=1, RR2=0)

    lam = p.arrival_rate
    C = p.capacity
    if p.arrival == "lambda*pcont":
        net.timed("T", lambda m: lam * m["PCONT"], outputs={"GQ": 1}, guard=lambda m: m["GQ"] < C)
    elif p.arrival == "mu*pcont":
        mu_t = p.arrival_mu
        net.timed("T", lambda m: mu_t * m["PCONT"], outputs={"GQ": 1}, guard=lambda m: m["GQ"] < C)
    else:
        net.timed("T", lam, outputs={"GQ": 1}, guard=lambda m: m["GQ"] < C)
    net.immediate("Tinc", outputs={"PCONT": 1},
                  guard=lambda m: (m["GQ"] > S_pad[m["PCONT"]]) & (m["PCONT"] < K))
    net.immediate("Tdec", inputs={"PCONT": 1}, guard=lambda m: m["GQ"] <= s_pad[m["PCONT"] - 1])

    def load(m, i):
        v = m[f"LQ{i}"]
        return v + m[f"pl{i}"] if p.load_includes_waiting else v

    if p.policy == "LC1":
        pol = {1: lambda m: load(m, 1) <= load(m, 2), 2: lambda m: load(m, 1) > load(m, 2)}
    elif p.policy == "LC2" and p.lc2_rule == "text":
        pol = {1: lambda m: (load(m, 1) + load(m, 2)) <= th1,
               2: lambda m: (load(m, 1) + load(m, 2)) > th1}
    elif p.policy == "LC2":
        pol = {1: lambda m: (load(m, 1) + load(m, 2)) <= th1,
               2: lambda m: ((load(m, 1) + load(m, 2)) > th1) & ((load(m, 1) + load(m, 2)) <= th2)}
    else:
        pol = {1: None, 2: None}

    for i, j in ((1, 2), (2, 1)):
        mu_i = p.mu[i - 1]
        Ni, Nj = f"N{i}", f"N{j}"
        rr_in = {f"RR{i}": 1} if rr else {}
        rr_out = {f"RR{j}": 1} if rr else {}
        net.timed(f"GS{i}", lambda m, mu_i=mu_i: mu_i * m["PCONT"],
                  inputs={"GQ": 1, Ni: npg, **rr_in}, outputs={f"LQ{i}": npg, **rr_out}, guard=pol[i])
        if p.migration:
            lo_ok = (lambda m, Ni=Ni: m[Ni] > 1) if p.migration_guard == "table" else (lambda m, Ni=Ni: m[Ni] > 0)
            if p.migration_guard == "table":
                other_ok = lambda m, Ni=Ni, Nj=Nj: m[Nj] > npg - m[Ni]  # noqa: E731
            else:
                other_ok = lambda m, Ni=Ni, Nj=Nj: m[Nj] >= npg - m[Ni]  # noqa: E731
            pg = pol[i] if p.migration_follows_policy else None

            def guard(m, lo_ok=lo_ok, other_ok=other_ok, pg=pg, Ni=Ni):
                g = lo_ok(m) & (m[Ni] < npg) & other_ok(m)
                return g & pg(m) if pg is not None else g

            net.timed(f"GS{i}{1}", lambda m, mu_i=mu_i: mu_i * m["PCONT"],
                      inputs={"GQ": 1, Ni: lambda m, Ni=Ni: m[Ni], **rr_in},
                      outputs={f"LQ{i}": lambda m, Ni=Ni: m[Ni], f"pl{j}": lambda m, Ni=Ni: npg - m[Ni], **rr_out},
                      guard=guard)
    for i in (1, 2):
        qi = p.local_capacity[i - 1]
        if p.local_rate[i - 1] > 0 and qi > 0:
            net.timed(f"LT{i}", p.local_rate[i - 1], outputs={f"pl{i}": 1},
                      guard=lambda m, i=i, qi=qi: m[f"pl{i}"] < qi)
        net.immediate(f"it{i}", inputs={f"pl{i}": 1, f"N{i}": 1}, outputs={f"LQ{i}": 1})
        net.timed(f"t{i}", lambda m, i=i: p.task_rate * m[f"LQ{i}"], inputs={f"LQ{i}": 1}, outputs={f"N{i}": 1})
    return net


# rewards of eqs (1)-(4)
ST_REWARD = rate("t1") + rate("t2")
QUEUE_REWARD = mark("LQ1") + mark("LQ2") + mark("GQ")


def gang_measures(res, p: GangParams) -> dict[str, Any]:
    """ST, SRT, UoS, GoS (eqs 1-4) and diagnostics from a solved gang net."""
    ST = res.expect(ST_REWARD)
    XT = res.expect(rate("T"))
    L = res.expect(QUEUE_REWARD)
    SRT = L / XT
    UoS = 1.0 - res.expect(mark("N1") + mark("N2")) / sum(p.servers)
    GoS = ST + p.W / SRT
    X_local = sum(res.expect(rate(f"LT{i}")) for i in (1, 2) if f"LT{i}" in res.space.net.transition_names)
    return {
        "ST": ST, "SRT": SRT, "UoS": UoS, "GoS": GoS,
        "gang_throughput": XT,
        "local_throughput": X_local,
        "mean_GQ": res.expect(mark("GQ")),
        "mean_busy": res.expect(mark("LQ1") + mark("LQ2")),
        "blocking": 1.0 - XT / p.arrival_rate if p.arrival == "lambda" else float("nan"),
    }


MEASURES = ("ST", "SRT", "UoS", "GoS", "gang_throughput", "local_throughput", "mean_GQ", "mean_busy", "blocking")


@dataclass(repr=False)
class GangResult(Result):
    """The gang model solved (the result protocol of :mod:`hetsched.results`).

    ``res["ST"]``, ``res["SRT"]``, ... and ``res["states"]`` read like the dict this
    function used to return; when the solver did not converge the measures are NaN
    and the numbers it produced are in ``measures_untrusted``.
    """

    STATUS: ClassVar[dict[int, str]] = {0: "converged", 1: "not converged", 2: "numerical failure"}

    params: GangParams
    states: int
    raw: dict[str, float]
    stats: dict[str, Any]
    status: int
    message: str
    seconds: float

    @property
    def measures(self) -> dict[str, float]:
        return {k: (v if self.success else math.nan) for k, v in self.raw.items()}

    @property
    def measures_untrusted(self) -> dict[str, float]:
        return {} if self.success else dict(self.raw)

    def __getitem__(self, key: str):
        d = {"policy": self.params.policy, "lambda": self.params.arrival_rate, "states": self.states,
             "stats": self.stats, "success": self.success, "params": asdict(self.params), **self.measures}
        try:
            return d[key]
        except KeyError:
            raise KeyError(f"{key!r}; known: {', '.join(d)}") from None

    def as_dict(self) -> dict[str, Any]:
        d = {"status": self.status, "success": self.success, "message": self.message, "seconds": self.seconds,
             "policy": self.params.policy, "lambda": self.params.arrival_rate, "states": self.states,
             **self.measures, "stats": self.stats, "params": asdict(self.params)}
        if not self.success:
            d["measures_untrusted"] = dict(self.raw)
        return jsonable(d)

    def _frame_rows(self):
        for k, v in self.raw.items():
            yield {"model": "gang", "policy": self.params.policy, "measure": k,
                   "value": v if self.success else math.nan, "value_untrusted": math.nan if self.success else v,
                   "lambda": self.params.arrival_rate}

    def _headline(self) -> str:
        m = self.measures
        return (f"gang SRN, policy {self.params.policy}, lambda = {self.params.arrival_rate:g}: {self.states} "
                f"tangible states; ST {fmt(m['ST'], 6)}, SRT {fmt(m['SRT'], 6)}, UoS {fmt(m['UoS'], 4)}, "
                f"GoS {fmt(m['GoS'], 6)}")


def solve_gang(p: GangParams | None = None, **kw) -> GangResult:
    """Build, solve and measure the gang model (eqs 1-4): a :class:`GangResult`."""
    from .analysis import solve

    p = p or GangParams(**kw)
    res = solve(gang_net(p))
    return GangResult(params=p, states=res.space.n_tangible, raw=gang_measures(res, p), stats=res.stats(),
                      status=res.status, message=res.message, seconds=res.seconds)
