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


FACTORIES = {
    "SimResult(stable)": _sim_stable,
    "SimResult(unstable)": _sim_unstable,
    "SRNResult": _srn_result,
    "SRNResult(not converged)": _srn_not_converged,
    "SteadyState": _steady_state,
    "GangResult": _gang_result,
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


def test_srn_untrusted_numbers_are_not_the_values():
    res = _srn_not_converged()
    assert res.status == 1 and not res.success
    assert all(math.isnan(v) for v in res.tokens.values())
    d = res.as_dict()
    assert d["tokens"]["B"] is None and d["tokens_untrusted"]["B"] == pytest.approx(res.raw_tokens["B"])
    df = res.to_frame()
    assert df["value"].isna().all() and np.isfinite(df["value_untrusted"]).all()
