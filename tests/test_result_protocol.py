"""Every public result type follows one protocol (:mod:`hetsched.results`).

Each factory below builds one small real result of a public type; the same
checks run over all of them: ``status`` an integer with a documented meaning
in ``STATUS`` (0 = success), ``success``, a non-empty ``message``, ``seconds``,
``as_dict()`` JSON-ready and carrying the same status/success/message/seconds,
``to_frame()`` in long format (``measure`` and ``value`` columns, identifiers
first), a short ``repr`` and an ``_repr_html_`` that escapes what it shows.

A new public result type adds a factory here.
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

import hetsched as hs
from hetsched.results import FRAME_KEYS, FRAME_VALUES, Result


def _sim_stable():
    sys_ = hs.System.from_arrays(alpha=[0.5], mu=[[1.0]])
    return hs.simulate(sys_, "mct", reps=3, horizon=2_000, seed=1, workers=1)


def _sim_unstable():
    sys_ = hs.System.from_arrays(alpha=[1.5], mu=[[1.0]])
    return hs.simulate(sys_, "mct", reps=2, horizon=2_000, seed=1, workers=1)


@functools.lru_cache(maxsize=None)
def _dispatch(unstable: bool = False):
    """A real dispatch run on an in-process cluster of 2 workers, 8 emulated tasks of ~2 ms."""
    pytest.importorskip("distributed")
    from hetsched.dispatch import Dispatcher, Emulation, local_cluster
    from hetsched.dispatch.worker import KIND_EMULATE

    cluster, client = local_cluster(2)
    try:
        rates = {"0": [2.0, 1.0], "1": [1.0, 2.0]}
        d = Dispatcher(client, ["small", "big"], rates, policy="lpas-dg", alpha=[3.0, 3.0] if unstable else [1.0, 1.0],
                       allow_unstable=unstable, time_unit=0.002, emulation=Emulation(rates, {}, 0.002),
                       adapt_arrivals=False, adapt_rates=False)
        d.add_many([("small" if k % 2 else "big", KIND_EMULATE, 1.0) for k in range(8)])
        res = d.run(timeout=60)
        d.close()
    finally:
        client.close()
        cluster.close()
    return res


def _compare():
    sys_ = hs.System.from_arrays(alpha=[0.5, 0.3], mu=[[1.0, 0.5], [0.5, 1.0]], class_names=["a", "b"])
    return hs.compare(sys_, ["mct", "met"], reps=3, horizon=500, seed=1, workers=1)


def _compare_unstable():
    sys_ = hs.System.from_arrays(alpha=[1.2], mu=[[1.0, 0.9]])  # MET overloads the fast machine
    return hs.compare(sys_, ["mct", "met"], reps=2, horizon=2_000, seed=1, workers=1)


def _lp_named():
    sys_ = hs.System.from_arrays(alpha=[2.45, 2.45], mu=[[9.0, 5.0], [2.0, 1.0]], class_names=["a", "b"])
    return hs.solve_allocation(sys_)


def _lp_no_capacity():
    return hs.solve_allocation([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0])  # status 2: class 2 cannot run


def _mdp_discounted():
    import scipy.sparse as sp

    R = sp.csr_matrix(np.array([[0, 1.0], [2.0, 0], [0, 0]]))
    m = hs.CTMDP.from_pairs([0, 1, 1], [0, 0, 1], R, [1.0, 2.0, 5.0], 2)
    return hs.value_iteration(m, 0.1)


def _mdp_average_multichain():
    import scipy.sparse as sp

    from hetsched.mdp.ctmdp import average_policy_iteration

    R = sp.csr_matrix(np.array([[0, 0, 0], [0, 0, 0], [1.0, 0, 0], [0, 1.0, 0]]))
    return average_policy_iteration(hs.CTMDP.from_pairs([0, 1, 2, 2], [0, 0, 0, 1], R, [1.0, 3.0, 10.0, 0.0], 3))


def _coalloc_solution():
    return hs.solve_coalloc(hs.CoallocParams.from_loads(rho=0.8, delta=4))


def _file_solution():
    from pathlib import Path

    return hs.mdp.solve(Path(__file__).parent / "data" / "mdp" / "polling2.drn", "average", reward="served")


def _experiment(exp_id, **extra):
    import tempfile
    from pathlib import Path

    from hetsched.experiments import RunOptions, get

    with tempfile.TemporaryDirectory() as d:
        return get(exp_id).run(RunOptions(quick=True, seed=1, workers=1, outdir=Path(d), progress=False,
                                          extra=extra))


def _experiment_exact():
    return _experiment("thesis-4.3.1")


def _experiment_some_unstable():  # MCT is unstable on the system of §2.1
    return _experiment("thesis-2.1-mct", reps=2, horizon=300.0)


def _muscle(load):
    from hetsched.muscle import TABLE1, WorkloadParams, generate_workload, simulate

    wl = generate_workload(WorkloadParams(n_jobs=120, load=load), TABLE1, seed=2)
    return simulate(wl, TABLE1, "muscle", ga=None, seed=1)


def _ga_result():
    from hetsched.muscle import GAOptions, titan_improve

    rng = np.random.default_rng(4)
    pref = rng.integers(1, 4, 6)
    return titan_improve(np.zeros(4), 0.0, np.arange(6), pref, rng.uniform(1, 5, 6), rng.uniform(5, 20, 6),
                         options=GAOptions(max_gen=20), seed=3)


def _window_estimate(ok: bool):
    from hetsched.traces.estimate import window_estimate

    rng = np.random.default_rng(3)
    y = rng.exponential(1.0, 3000)
    if not ok:
        y[1500:1800] *= 200.0  # one window dominates: no interval
    return window_estimate(y, 10)


def _sim_trace_no_ci():
    from hetsched.lp import allocation_lp
    from hetsched.traces import TraceWorkload

    sys_ = hs.System.from_arrays(alpha=[0.5], mu=[[1.0, 1.0]])
    arr = np.arange(200.0)
    size = np.ones(200)
    lp = allocation_lp(sys_.with_(alpha=(1.0,)))
    tw = TraceWorkload(arrival=arr, size=size, klass=np.zeros(200, np.int64), job_id=np.arange(200), rule="given",
                       rule_detail="", alpha=np.array([200 / 199]), lp_lambda=float(lp.lam), load=1 / float(lp.lam),
                       time_scale=1.0, target_load=None, dropped={"run_time_zero": 1}, lp=lp)
    return hs.simulate(sys_, "mct", trace=tw, reps=5, workers=1)  # 5 windows: too few for an interval


def _srn_net():
    from hetsched.srn import Net

    net = Net("mm2k <b>")   # a name to escape in HTML
    net.places(F=4, W=0, S=2, B=0)
    net.timed("arrive", 2.0, inputs={"F": 1}, outputs={"W": 1})
    net.immediate("start", inputs={"W": 1, "S": 1}, outputs={"B": 1})
    net.timed("done", 1.0, inputs={"B": 1}, outputs={"S": 1, "F": 1}, servers=2)
    return net


def _srn_result():
    from hetsched.srn import solve

    return solve(_srn_net(), measures={"busy": "E{#B}"})


def _srn_not_converged():
    from hetsched.srn import solve

    return solve(_srn_net(), method="sor", maxiter=1, tol=1e-15)


def _steady_state():
    return _srn_result().steady


def _gang_result():
    return hs.solve_gang(policy="LC2", arrival_rate=1.5, capacity=4, forward=(0, 2), reverse=(0, 1),
                         servers=(3, 3), gang_size=2, local_capacity=(1, 1))


def _optimal(**kw):
    return hs.optimal_routing(hs.System.from_arrays(alpha=[1.2], mu=[[1.0, 1.0]]), **kw)


FACTORIES = {
    "SimResult(stable)": _sim_stable,
    "SimResult(unstable)": _sim_unstable,
    "DispatchResult(ok)": _dispatch,
    "DispatchResult(unstable)": lambda: _dispatch(unstable=True),
    "CompareResult(stable)": _compare,
    "CompareResult(unstable)": _compare_unstable,
    "AllocationResult(certified)": _lp_named,
    "AllocationResult(no capacity)": _lp_no_capacity,
    "MDPResult(discounted)": _mdp_discounted,
    "MDPResult(average, multichain)": _mdp_average_multichain,
    "CoallocSolution": _coalloc_solution,
    "FileSolution": _file_solution,
    "ExperimentResult(exact)": _experiment_exact,
    "ExperimentResult(some unstable)": _experiment_some_unstable,
    "MuscleResult(feasible)": lambda: _muscle(0.6),
    "MuscleResult(overloaded)": lambda: _muscle(1.5),
    "GAResult": _ga_result,
    "WindowEstimate(ok)": lambda: _window_estimate(True),
    "WindowEstimate(no CI)": lambda: _window_estimate(False),
    "SimResult(trace, no CI)": _sim_trace_no_ci,
    "SRNResult": _srn_result,
    "SRNResult(not converged)": _srn_not_converged,
    "SteadyState": _steady_state,
    "GangResult": _gang_result,
    "OptimalRouting(ok)": lambda: _optimal(load=0.5),
    "OptimalRouting(unstable)": lambda: _optimal(load=1.2),
    "OptimalRouting(truncation)": lambda: _optimal(buffer=3),
}


@pytest.fixture(scope="module", params=sorted(FACTORIES))
def result(request):
    return FACTORIES[request.param]()


def test_protocol_fields(result):
    assert isinstance(result, Result)
    assert isinstance(result.status, int) and not isinstance(result.status, bool)
    assert 0 in type(result).STATUS and int(result.status) in type(result).STATUS
    assert result.success == (result.status == 0)
    assert isinstance(result.message, str) and result.message
    assert isinstance(result.seconds, float) and result.seconds >= 0


def test_as_dict_is_json_and_agrees(result):
    d = result.as_dict()
    text = json.dumps(d, allow_nan=False)  # JSON-ready: no NaN, no numpy scalars
    back = json.loads(text)
    for key in ("status", "success", "message", "seconds"):
        assert key in back, key
    assert back["status"] == result.status and back["success"] == result.success
    assert back["message"] == result.message


def test_to_frame_long_format(result):
    df = result.to_frame()
    assert {"measure", "value"} <= set(df.columns)
    cols = list(df.columns)
    keys = [c for c in cols if c in FRAME_KEYS]
    assert cols[: len(keys)] == keys, "identifier columns come first"
    assert cols.index("measure") == len(keys)
    vals = [c for c in cols if c in FRAME_VALUES]
    assert cols[len(keys) + 1: len(keys) + 1 + len(vals)] == vals
    assert len(df) >= 1 and df["measure"].map(lambda m: isinstance(m, str) and bool(m)).all()
    if "class" in df:  # classes are numbered from 1
        c = df["class"].dropna()
        assert (c >= 1).all()


def test_repr_short_and_html_escaped(result):
    r = repr(result)
    assert len(r.splitlines()) <= 6 and type(result).__name__ in r
    h = result._repr_html_()
    assert h.startswith("<") and "<script" not in h.lower()


def test_unstable_mean_is_never_the_untrusted_number():
    res = _sim_unstable()
    assert res.status == hs.results.UNSTABLE if hasattr(hs, "results") else res.status == 1
    assert math.isnan(res.mean) and all(math.isnan(x) for x in res.ci)
    assert math.isfinite(res.mean_untrusted) and res.mean_untrusted > 0
    d = res.as_dict()
    assert d["mean"] is None and d["ci"] == [None, None] and d["mean_untrusted"] == pytest.approx(res.mean_untrusted)
    assert all(pc["mean"] is None for pc in res.per_class)
    df = res.to_frame()
    assert df["value"].isna().all() and np.isfinite(df["value_untrusted"]).all()


def test_dispatch_unstable_keeps_the_number_out_of_the_first_field():
    res = FACTORIES["DispatchResult(unstable)"]()
    assert res.status == 1 and not res.success and res.completed == 8 and res.lost == 0
    assert math.isnan(res.mean_response) and res.mean_response_untrusted > 0
    d = res.as_dict()
    assert d["mean_response"] is None and d["mean_response_untrusted"] > 0
    assert all(pc["mean_response"] is None for pc in d["per_class"])
    df = res.to_frame()
    mr = df[df["measure"] == "mean_response"]
    assert mr["value"].isna().all() and (mr["value_untrusted"] > 0).all()


def test_experiment_status_follows_its_rows():
    ok, some = _experiment_exact(), _experiment_some_unstable()
    assert ok.status == 0 and all(r["stable"] for r in ok.rows)
    assert some.status == 1 and not some.success and "unstable" in some.message
    bad = [r for r in some.rows if not r["stable"]]
    assert bad and all(r["Qbar"] is None and r["value"] is None and r["value_untrusted"] > 0 for r in bad)
    df = some.to_frame()
    assert df.loc[df["stable"] == False, "value"].isna().all()  # noqa: E712 - a pandas mask


def test_overloaded_muscle_run_has_no_trusted_mcp():
    res = _muscle(1.5)
    assert res.status == 1 and math.isnan(res.MCP) and res.MCP_untrusted > 0 and res.offered_load >= 1
    d = res.as_dict()
    assert d["MCP"] is None and d["MCP_untrusted"] == pytest.approx(res.MCP_untrusted)
    ok = _muscle(0.6)
    assert ok.status == 0 and ok.MCP > 0 and ok.offered_load < 1


def test_srn_untrusted_numbers_are_not_the_values():
    res = _srn_not_converged()
    assert res.status == 1 and not res.success
    assert all(math.isnan(v) for v in res.tokens.values())
    d = res.as_dict()
    assert d["tokens"]["B"] is None and d["tokens_untrusted"]["B"] == pytest.approx(res.raw_tokens["B"])
    df = res.to_frame()
    assert df["value"].isna().all() and np.isfinite(df["value_untrusted"]).all()
