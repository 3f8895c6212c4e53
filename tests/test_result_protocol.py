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


FACTORIES = {
    "SimResult(stable)": _sim_stable,
    "SimResult(unstable)": _sim_unstable,
    "MDPResult(discounted)": _mdp_discounted,
    "MDPResult(average, multichain)": _mdp_average_multichain,
    "CoallocSolution": _coalloc_solution,
    "FileSolution": _file_solution,
    "ExperimentResult(exact)": _experiment_exact,
    "ExperimentResult(some unstable)": _experiment_some_unstable,
    "MuscleResult(feasible)": lambda: _muscle(0.6),
    "MuscleResult(overloaded)": lambda: _muscle(1.5),
    "GAResult": _ga_result,
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
