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

:func:`storm_gspn_steady_state` does the same for any GSPN Storm holds, e.g.
one read from the PNML of :func:`hetsched.srn.export.to_gspn_pnml`. A net with
immediate transitions becomes a Markov automaton; its vanishing states are
eliminated by Storm (``eliminate_non_markovian_chains``), which yields the
tangible CTMC. That transformation drops state valuations, so the markings of
the remaining states are read back from labels ``(P = k)`` that Storm keeps.

What runs as the reference (:data:`SOLVERS`): ``"sparselu"`` (the default) is
Storm's Eigen solver with its sparse LU method - Storm picks it when exact solving
is forced, which on a double model is a sparse LU factorisation in double
precision; ``"eigen"`` is Storm's Eigen solver with its *default* method, GMRES
with an ILU preconditioner stopping at a relative change of 1e-6 (what this module
ran, under the name of a sparse LU, before issue 25); ``"default"`` is Storm's
default (topological, then gmm++ GMRES+ILU at 1e-6). stormpy 2.0 accepts
``set_from_exploded_string(["--eigen:method", "sparselu"])`` but the setting has no
effect on the environments it creates afterwards (measured: identical results).

:func:`storm_net_steady_state` compares any hetsched net with Storm, Storm reading
the net's file itself or hetsched's GSPN export of it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .net import Net

__all__ = ["GangGSPN", "gang_gspn", "storm_steady_state", "storm_gspn_steady_state", "storm_net_steady_state",
           "SOLVERS"]

#: Storm's steady-state solvers (see :func:`storm_gspn_steady_state`)
SOLVERS = ("sparselu", "eigen", "default", "dense")


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


def storm_steady_state(g: GangGSPN, places=("GQ", "LQ1", "LQ2", "N1", "N2"), solver: str = "sparselu") -> dict:
    """Storm on the net of :class:`GangGSPN`: see :func:`storm_gspn_steady_state`."""
    bounds = {p: (g.capacity if p == "GQ" else 2 if p.startswith("pl") else g.servers) for p in g.places()}
    return storm_gspn_steady_state(_storm_builder(g), bounds, places, solver)


def storm_gspn_steady_state(gspn, bounds: dict[str, int], places, solver: str = "sparselu",
                            constants: str = "") -> dict:
    """Storm: build the GSPN's model and the expected token counts in steady state.

    Parameters
    ----------
    gspn : path or stormpy.gspn.GSPN
        A ``.pnml``/``.pnpro`` file, or a GSPN (Storm can turn one GSPN object
        into a model only once: pass a fresh one per call).
    bounds : dict
        Largest token count of each place in ``places`` (labels ``(P = k)`` are
        built for ``k = 0..bound`` when vanishing states must be eliminated).
    places : sequence of str
    solver : str
        One of :data:`SOLVERS`: ``"sparselu"`` (Storm's Eigen solver with its sparse LU
        method, an exact factorisation: the reference); ``"eigen"``: Storm's Eigen solver
        with its default method, GMRES with an ILU preconditioner stopping at a relative
        change of 1e-6; ``"default"``: Storm's default (topological, then gmm++ GMRES with
        ILU at 1e-6); ``"dense"``: Storm's generator solved exactly with NumPy (small
        nets), which separates Storm's model construction from its solver.

    Returns ``{"states", "build_seconds", "solve_seconds", "mark": {place: E[#place]},
    "dist": {place: [P(#place = k) for k = 0..]}, "pi_sum", "eliminated", "pi",
    "markings"}`` (``eliminated``: vanishing states Storm removed; ``markings``: the
    token counts of ``places`` in each of Storm's states).
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    import stormpy
    import stormpy.developer as d
    import stormpy.gspn as sg
    import stormpy.transformations as tr

    places = list(places)
    t0 = time.perf_counter()
    if isinstance(gspn, (str, Path)):
        gspn = sg.load_gspn_file(str(gspn), constant_definitions=constants)
    jani, _ = sg.build_jani_model(gspn)
    has_immediate = gspn.get_number_of_immediate_transitions() > 0
    if has_immediate:
        # labels "(P = k)" survive the elimination of vanishing states; valuations do not
        text = "; ".join(f"LRA=? [ {p}={k} ]" for p in places for k in range(int(bounds[p]) + 1))
        try:
            props = stormpy.parse_properties(text, jani)
        except RuntimeError:
            from ..errors import ModelError

            raise ModelError(f"Storm cannot parse properties over the places {places}: a place named like an "
                             f"operator of its property language (F, G, U, W, X, ...) must be renamed") from None
        opts = stormpy.BuilderOptions([q.raw_formula for q in props]) if hasattr(props[0], "raw_formula") \
            else stormpy.BuilderOptions([q.get_raw_formula() for q in props])
    else:
        opts = stormpy.BuilderOptions(build_full=True)
        opts.set_build_state_valuations(True)
    opts.set_apply_maximal_progress_assumption(True)
    model = stormpy.build_model(jani, options=opts)
    n_built = model.nr_states
    if has_immediate:
        if not str(model.model_type).endswith("MA"):
            raise RuntimeError(f"Storm built a {model.model_type} for a GSPN with immediate transitions")
        model, _ = tr.eliminate_non_markovian_chains(model, [], d.EliminationLabelBehavior.DELETE_LABELS)
        if not str(model.model_type).endswith("CTMC"):
            raise RuntimeError("Storm's elimination of vanishing states left a Markov automaton "
                               "(non-deterministic choices between immediate transitions?)")
    t1 = time.perf_counter()   # build (and elimination) time; reading the markings back is not counted
    if has_immediate:
        n = model.nr_states
        X = np.full((n, len(places)), -1.0)
        lab = model.labeling
        for j, p in enumerate(places):
            for k in range(int(bounds[p]) + 1):
                name = f"({p} = {k})"
                if lab.contains_label(name):
                    for s in lab.get_states(name):
                        X[s, j] = k
        if (X < 0).any():
            raise RuntimeError("a Storm state has no (P = k) label: bounds too small?")
    else:
        if not str(model.model_type).endswith("CTMC"):
            raise RuntimeError(f"Storm built a {model.model_type} for a GSPN without immediate transitions")
        vals = model.state_valuations
        n = model.nr_states
        # a place no transition changes may be left out of the valuations: it keeps its initial tokens
        init = {pl.get_name(): pl.get_number_of_initial_tokens() for pl in gspn.get_places()}
        X = np.array([[json.loads(str(vals.to_json(s))).get(p, init[p]) for p in places] for s in range(n)], float)
    env = d.Environment()
    t_solve = time.perf_counter()
    if solver == "dense":
        R = np.zeros((n, n))
        for s in range(n):
            for e in model.transition_matrix.get_row(s):
                R[s, e.column] += e.value
        A = (R - np.diag(R.sum(1))).T
        A[-1, :] = 1.0
        b = np.zeros(n)
        b[-1] = 1.0
        pi = np.linalg.solve(A, b)
    else:
        if solver in ("eigen", "sparselu"):
            env.solver().set_linear_equation_solver_type(d.EquationSolverType.EIGEN)
        if solver == "sparselu":
            # Storm picks Eigen's SparseLU (instead of its default GMRES+ILU at 1e-6) when exact
            # solving is forced (EigenLinearEquationSolver::getMethod); on a double model that is a
            # sparse LU in double precision. stormpy 2.0 offers no other way to select the method:
            # set_from_exploded_string(["--eigen:method", "sparselu"]) is accepted and ignored.
            env.solver().force_exact = True
        r = d.compute_steady_state_distribution_with_sparse_engine(env, model)
        pi = np.array([r.get_value(s) for s in range(n)])
    t2 = time.perf_counter()
    return {"states": n, "build_seconds": t1 - t0, "solve_seconds": t2 - t_solve,
            "mark": {p: float(pi @ X[:, j]) for j, p in enumerate(places)}, "pi_sum": float(pi.sum()),
            "dist": {p: np.bincount(X[:, j].astype(np.int64), weights=pi).tolist() for j, p in enumerate(places)},
            "eliminated": n_built - n, "pi": pi, "markings": X.astype(np.int64)}


def _constants(net: Net) -> str:
    return ",".join(f"{k}={v!r}" for k, v in net.meta.get("constants", {}).items())


def _storm_reads_the_same(path, net: Net) -> bool:
    """True if Storm parses ``path`` into a GSPN with the net's place and transition names, all of
    them names Storm's property language accepts (the labels ``(P = k)`` are built from them)."""
    import re

    import stormpy.gspn as sg

    try:
        c = _constants(net)
        g = sg.load_gspn_file(str(path), constant_definitions=c)
    except Exception:  # noqa: BLE001 - Storm cannot read it: use the export
        return False
    places = {p.get_name() for p in g.get_places()}
    trans = {t.get_name() for t in g.get_timed_transitions()} | {t.get_name() for t in g.get_immediate_transitions()}
    ok = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
    return (places == set(net.place_names) and trans == set(net.transition_names)
            and all(ok.match(p) and len(p) > 1 for p in places))


def storm_net_steady_state(net: Net, *, path=None, route: str = "auto", solver: str = "sparselu",
                           space=None) -> dict:
    """Storm's steady state of a hetsched net: expected tokens of every place and the throughput of
    every timed transition, for comparison with :func:`hetsched.srn.solve`.

    Routes: ``"file"`` - Storm reads ``path`` itself (its own PNML/PNPRO parser, so the
    file's reading is checked too); ``"export"`` - Storm reads hetsched's GSPN export
    of the net (:func:`hetsched.srn.export.to_gspn_pnml`, with places and transitions
    renamed ``p0, p1, ...`` so that any name works in Storm's property language, and
    SRN features unfolded); ``"auto"`` - the file when Storm reads it with the same
    names, else the export. Throughputs are formed from Storm's distribution with the
    net's own rate in each of Storm's markings.

    Returns ``{"route", "states", "eliminated", "tokens": {place: E}, "throughput":
    {timed transition: X}, "build_seconds", "solve_seconds"}``.
    """
    import tempfile

    from .firing import _Evaluator, _fire
    from .reach import explore
    from .unfold import GSPNForm, GSPNTransition, gspn_form

    if route not in ("auto", "file", "export"):
        raise ValueError(route)
    space = space if space is not None else explore(net)
    names = net.place_names
    bounds = {p: int(b) for p, b in zip(names, space.markings.max(axis=0))}
    use_file = path is not None and route != "export" and (route == "file" or _storm_reads_the_same(path, net))
    with tempfile.TemporaryDirectory() as tmp:
        if use_file:
            out = storm_gspn_steady_state(path, bounds, names, solver, _constants(net))
        else:
            from .export import to_gspn_pnml

            form = gspn_form(net, space=space)
            if not form.transitions:   # nothing ever fires: the initial marking is the whole answer
                m0 = net.initial_marking
                return {"route": "none (no transition can fire)", "states": 1, "eliminated": 0,
                        "tokens": {p: float(v) for p, v in zip(names, m0)},
                        "throughput": {t.name: 0.0 for t in net.transitions if t.timed},
                        "build_seconds": 0.0, "solve_seconds": 0.0}
            pn = {p: f"p{i}" for i, p in enumerate(form.places)}
            tn = {t.name: f"t{i}" for i, t in enumerate(form.transitions)}
            renamed = GSPNForm(form.name if form.name.isidentifier() else "net",
                               {pn[p]: v for p, v in form.places.items()}, {pn[p]: b for p, b in form.bounds.items()},
                               [GSPNTransition(tn[t.name], t.timed, t.value, t.priority,
                                               {pn[p]: k for p, k in t.inputs.items()},
                                               {pn[p]: k for p, k in t.outputs.items()},
                                               {pn[p]: k for p, k in t.inhibitors.items()}, t.origin)
                                for t in form.transitions])
            f = f"{tmp}/net.pnml"
            to_gspn_pnml(renamed, f)
            out = storm_gspn_steady_state(f, {pn[p]: b for p, b in bounds.items()}, [pn[p] for p in names], solver)
    pi, X = out["pi"], out["markings"]
    pidx = {p: j for j, p in enumerate(names)}
    ev = _Evaluator(pidx)
    caps = tuple((pidx[p], c) for p, c in net.capacities.items())
    thr = {}
    for t in net.transitions:
        if t.timed:
            rows, _, val = _fire(ev, t, X, pidx, caps)
            thr[t.name] = float(pi[rows] @ val) if rows.size else 0.0
    return {"route": "file" if use_file else "export", "states": out["states"], "eliminated": out["eliminated"],
            "tokens": {p: float(pi @ X[:, j]) for j, p in enumerate(names)}, "throughput": thr,
            "build_seconds": out["build_seconds"], "solve_seconds": out["solve_seconds"]}
