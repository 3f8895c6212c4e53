"""The result type: the CLI JSON contract, unstable results, DataFrame, short repr."""

import json

import numpy as np

from hetsched.sim.core.result import STATUS_UNSTABLE, from_replications, per_class_entry

CONTRACT = {"policy", "metric", "mean", "ci", "per_class", "unstable", "events", "wall_seconds", "status",
            "success", "message"}


def make(unstable=False):
    runs = [{"Q": q, "events": 100, "Q_class": [q / 2, q / 2], "segments": list(range(10))}
            for q in (1.0, 2.0, 3.0)]
    pcs = [per_class_entry(i, [r["Q_class"][i] for r in runs]) for i in range(2)]
    return from_replications(runs, model="m", policy="p", metric="Q", key="Q", per_class=pcs, wall_seconds=0.5,
                             unstable=unstable, message="unstable: test" if unstable else "ok", scenario="S",
                             horizon=10.0, seed=1, extra={"messages": 4.0})


def test_contract_and_statistics():
    r = make()
    d = r.as_dict()
    assert CONTRACT <= set(d)
    json.dumps(d)
    assert d["mean"] == 2.0 and d["events"] == 300 and d["success"] and d["status"] == 0
    # Student-t 95% interval of (1, 2, 3): 2 +- t_{0.975,2} * 1/sqrt(3)
    hw = 4.302652729911275 / np.sqrt(3)
    assert np.allclose(d["ci"], [2 - hw, 2 + hw])
    assert r.messages == 4.0 and d["messages"] == 4.0
    assert d["per_class"][0]["mean"] == 1.0


def test_unstable_has_no_number():
    r = make(unstable=True)
    assert r.status == STATUS_UNSTABLE and not r.success and r.unstable
    d = r.as_dict()
    assert d["mean"] is None and d["ci"] == [None, None] and d["mean_untrusted"] == 2.0
    assert d["per_class"][0]["mean"] is None


def test_frame_and_repr():
    r = make()
    f = r.replications_frame()
    assert list(f["Q"]) == [1.0, 2.0, 3.0] and "Q_class_2" in f and "segments_10" in f
    long = r.to_frame()  # tidy: the metric, then one row per class, each with its CI
    assert list(long["measure"]) == ["Q", "Q", "Q"] and long["value"].tolist() == [2.0, 1.0, 1.0]
    assert long["class"].isna().tolist() == [True, False, False] and long["class"].dropna().tolist() == [1, 2]
    text = repr(r)
    assert text.count("\n") <= 4 and "[" in text and "0, 1, 2" not in text
    assert "<table>" in r._repr_html_()
