"""Cross-checks with Storm (optional dependency ``stormpy``).

:func:`gang_gspn` builds one *GSPN* (no guards, no marking-dependent arcs) two
ways - as a :class:`~hetsched.srn.Net` and as a Storm ``GspnBuilder`` model - so
that state-space generation and steady-state solution can be compared on the
same net: a two-site grid where gangs of ``np`` tasks wait in ``GQ``
(capacity ``C``, inhibitor arc), are dispatched to a site with ``np`` free
servers, local jobs take one free server, every busy server completes its task
at rate ``mu`` (infinite-server semantics). Storm solves it through
GSPN -> JANI -> Markov automaton with the maximal-progress assumption, as in
``storm --gspn``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np

from .net import Net

__all__ = ["GangGSPN", "gang_gspn", "storm_steady_state"]


@dataclass(frozen=True)
class GangGSPN:
    servers: int = 16
    capacity: int = 64
    gang_size: int = 5
    arrival: float = 3.0
    dispatch: tuple[float, float] = (2.0, 2.0)
    local: tuple[float, float] = (1.0, 1.0)
    mu: float = 1.0
    immediate_start: bool = False   # local jobs wait in pl_i and start by an immediate transition

    def places(self) -> dict[str, int]:
        d = {"GQ": 0, "N1": self.servers, "LQ1": 0, "N2": self.servers, "LQ2": 0}
        if self.immediate_start:
            d.update(pl1=0, pl2=0)
        return d


def gang_gspn(g: GangGSPN) -> Net:
    """The hetsched net of :class:`GangGSPN`."""
    net = Net("gang_gspn")
    net.places(**g.places())
    net.timed("T", g.arrival, outputs={"GQ": 1}, inhibitors={"GQ": g.capacity})
    for i in (1, 2):
        net.timed(f"GS{i}", g.dispatch[i - 1], inputs={"GQ": 1, f"N{i}": g.gang_size},
                  outputs={f"LQ{i}": g.gang_size})
        if g.immediate_start:
            net.timed(f"LT{i}", g.local[i - 1], outputs={f"pl{i}": 1}, inhibitors={f"pl{i}": 2})
            net.immediate(f"it{i}", inputs={f"pl{i}": 1, f"N{i}": 1}, outputs={f"LQ{i}": 1})
        else:
            net.timed(f"LT{i}", g.local[i - 1], inputs={f"N{i}": 1}, outputs={f"LQ{i}": 1})
        net.timed(f"t{i}", (lambda m, i=i: g.mu * m[f"LQ{i}"]), inputs={f"LQ{i}": 1}, outputs={f"N{i}": 1})
    return net


def _storm_builder(g: GangGSPN):
    import stormpy.gspn as sg

    b = sg.GspnBuilder()
    for p, init in g.places().items():
        b.add_place(capacity=None, initial_tokens=init, name=p)
    b.add_timed_transition(0, g.arrival, "T")
    b.add_output_arc("T", "GQ", 1)
    b.add_inhibition_arc("GQ", "T", g.capacity)
    for i in (1, 2):
        b.add_timed_transition(0, g.dispatch[i - 1], f"GS{i}")
        b.add_input_arc("GQ", f"GS{i}", 1)
        b.add_input_arc(f"N{i}", f"GS{i}", g.gang_size)
        b.add_output_arc(f"GS{i}", f"LQ{i}", g.gang_size)
        b.add_timed_transition(0, g.local[i - 1], f"LT{i}")
        if g.immediate_start:
            b.add_output_arc(f"LT{i}", f"pl{i}", 1)
            b.add_inhibition_arc(f"pl{i}", f"LT{i}", 2)
            b.add_immediate_transition(1, 1.0, f"it{i}")
            b.add_input_arc(f"pl{i}", f"it{i}", 1)
            b.add_input_arc(f"N{i}", f"it{i}", 1)
            b.add_output_arc(f"it{i}", f"LQ{i}", 1)
        else:
            b.add_input_arc(f"N{i}", f"LT{i}", 1)
            b.add_output_arc(f"LT{i}", f"LQ{i}", 1)
        b.add_timed_transition(0, g.mu, g.servers, f"t{i}")   # k-server with k = servers: infinite
        b.add_input_arc(f"LQ{i}", f"t{i}", 1)
        b.add_output_arc(f"t{i}", f"N{i}", 1)
    return b.build_gspn()


def storm_steady_state(g: GangGSPN, places=("GQ", "LQ1", "LQ2", "N1", "N2"), solver: str = "default") -> dict:
    """Storm: build the model and the expected token counts in steady state.

    Returns ``{"states", "build_seconds", "solve_seconds", "mark": {place: E[#place]}}``.
    ``solver="eigen"`` switches Storm to its Eigen equation solver; ``solver="dense"``
    takes Storm's generator and solves it exactly with NumPy (small nets), which
    separates Storm's model construction from its solver's precision.
    For nets with immediate transitions Storm builds a Markov automaton; its
    vanishing states are removed with ``eliminate_non_markovian_chains`` first.
    """
    import stormpy
    import stormpy.developer as d
    import stormpy.gspn as sg

    t0 = time.perf_counter()
    jani, _ = sg.build_jani_model(_storm_builder(g))
    opts = stormpy.BuilderOptions(build_full=True)
    opts.set_build_state_valuations(True)
    opts.set_apply_maximal_progress_assumption(True)
    model = stormpy.build_model(jani, options=opts)
    t1 = time.perf_counter()
    vals = model.state_valuations
    n = model.nr_states
    X = np.array([[json.loads(str(vals.to_json(s)))[p] for p in places] for s in range(n)], float)
    if not str(model.model_type).endswith("CTMC"):
        raise NotImplementedError("Storm built a Markov automaton: use nets without immediate transitions here")
    t2 = time.perf_counter()
    env = d.Environment()
    if solver == "dense":  # Storm's chain, solved exactly here (small nets): isolates Storm's solver error
        R = np.zeros((n, n))
        for s in range(n):
            for e in model.transition_matrix.get_row(s):
                R[s, e.column] += e.value
        A = (R - np.diag(R.sum(1))).T
        A[-1, :] = 1.0
        b = np.zeros(n)
        b[-1] = 1.0
        pi = np.linalg.solve(A, b)
        t3 = time.perf_counter()
        return {"states": n, "build_seconds": t1 - t0, "solve_seconds": t3 - t2,
                "mark": {p: float(pi @ X[:, j]) for j, p in enumerate(places)}, "pi_sum": float(pi.sum())}
    if solver == "eigen":  # Storm's sparse LU (tight), instead of its default iterative solver at 1e-6
        env.solver().set_linear_equation_solver_type(d.EquationSolverType.EIGEN)
    r = d.compute_steady_state_distribution_with_sparse_engine(env, model)
    pi = np.array([r.get_value(s) for s in range(n)])
    t3 = time.perf_counter()
    return {"states": n, "build_seconds": t1 - t0, "solve_seconds": t3 - t2,
            "mark": {p: float(pi @ X[:, j]) for j, p in enumerate(places)}, "pi_sum": float(pi.sum())}
