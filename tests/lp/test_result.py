"""The allocation LP's result: names in every output, the JSON forms, the long frame, the display.

Truths used: the names the user wrote (in a scenario file and in
``System.from_arrays``) must come back in the LP's text table, its ``--json``,
``AllocationResult.to_frame()`` and the Jupyter display; the sparse JSON form
of ``delta`` must rebuild exactly the dense matrix; the long frame must hold
exactly the entries of ``delta`` and ``w``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import hetsched as hs
from hetsched.lp import allocation_lp, solve_allocation
from hetsched.errors import ModelError

NAMED = """id = "named"
title = "two named classes on two named machines"
source = "test"
alpha = [1.0, 1.5]
class_names = ["web", "batch"]
mu = [[9, 5], [2, 1]]
machine_names = ["fast", "slow"]
"""

GROUPS = """id = "named-groups"
title = "named classes, named groups"
source = "test"
alpha = [3.0, 4.0, 2.0]
class_names = ["render", "encode", "index"]
[[groups]]
name = "gpu"
count = 3
mu = [8, 1, 4]
[[groups]]
name = "cpu"
count = 2
mu = [2, 5, 3]
"""


def _cli(*args):
    from typer.testing import CliRunner

    from hetsched.cli import app

    from types import SimpleNamespace

    r = CliRunner().invoke(app, list(args))
    return SimpleNamespace(returncode=r.exit_code, stdout=r.output, output=r.output)


def _check_names_everywhere(res, classes, machines):
    assert res.class_names == tuple(classes) and res.machine_names == tuple(machines)
    df = res.to_frame()
    d = df[df.measure == "delta"]
    assert list(d["class_name"].astype(str).unique()) == list(classes)
    assert list(d["machine_name"].astype(str).unique()) == list(machines)
    w = df[df.measure == "w"]
    assert list(w["class_name"].astype(str)) == list(classes)
    js = json.loads(res.to_json())
    assert js["class_names"] == list(classes) and js["machine_names"] == list(machines)
    html = res._repr_html_()  # per group of interchangeable machines where grouped: its first member
    for n in [*classes, machines[0], *(machines[:12] if res.delta_groups is None else [])]:
        assert n in html


def test_names_from_a_scenario_file_appear_in_every_lp_output(tmp_path):
    f = tmp_path / "named.toml"
    f.write_text(NAMED)
    s = hs.load(str(f))
    assert s.class_names == ("web", "batch") and s.machine_names == ("fast", "slow") and s.class_names_given
    _check_names_everywhere(allocation_lp(s), ["web", "batch"], ["fast", "slow"])
    text = _cli("lp", str(f))
    assert text.returncode == 0, text.output
    for n in ("web", "batch", "fast", "slow"):
        assert n in text.stdout
    out = json.loads(_cli("lp", str(f), "--json").stdout)
    assert out["class_names"] == ["web", "batch"] and out["machine_names"] == ["fast", "slow"]
    # groups: machines are numbered within their group, the table shows group names
    g = tmp_path / "groups.toml"
    g.write_text(GROUPS)
    sg = hs.load(str(g))
    assert sg.machine_names == ("gpu1", "gpu2", "gpu3", "cpu1", "cpu2")
    _check_names_everywhere(allocation_lp(sg), ["render", "encode", "index"], sg.machine_names)
    text = _cli("lp", str(g)).stdout
    for n in ("render", "encode", "index", "gpu x3", "cpu x2"):
        assert n in text
    flat = _cli("lp", str(g), "--ungrouped").stdout
    for n in ("gpu1", "gpu3", "cpu2"):
        assert n in flat


def test_names_from_arrays_appear_in_every_lp_output():
    s = hs.System.from_arrays(alpha=[1.0, 2.0], mu=[[3.0, 1.0, 2.0], [2.0, 4.0, 1.0]],
                              class_names=["a-class", "b-class"], machine_names=["x", "y", "z"])
    res = hs.solve_allocation(s)
    _check_names_everywhere(res, ["a-class", "b-class"], ["x", "y", "z"])
    from rich.console import Console

    from hetsched.report.tables import print_lp

    con = Console(width=200, record=True)
    print_lp(s, res, console=con)
    text = con.export_text()
    for n in ("a-class", "b-class", "x", "y", "z"):
        assert n in text
    # on arrays: the names go straight to solve_allocation
    r2 = solve_allocation(s.mu, s.alpha_array, class_names=["p", "q"], machine_names=["u", "v", "w"])
    _check_names_everywhere(r2, ["p", "q"], ["u", "v", "w"])
    assert r2.lam == res.lam


def test_default_names_and_bad_names():
    s = hs.System.from_arrays(alpha=[1.0, 2.0], mu=[[3.0, 1.0], [2.0, 4.0]])
    assert s.class_names == ("c1", "c2") and s.machine_names == ("m1", "m2") and not s.class_names_given
    assert s.with_(alpha=[1.0, 2.0, 3.0], groups=tuple(
        hs.MachineGroup(g.name, 1, (*g.mu, 1.0)) for g in s.groups)).class_names == ("c1", "c2", "c3")
    with pytest.raises(ModelError, match="field 'class_names': expected 2 names \\(one per class\\), got 3"):
        hs.System.from_arrays(alpha=[1.0, 2.0], mu=[[3.0, 1.0], [2.0, 4.0]], class_names=["a", "b", "c"])
    with pytest.raises(ModelError, match="field 'class_names\\[1\\]': class names must be unique, got 'a' twice"):
        hs.System.from_arrays(alpha=[1.0, 2.0], mu=[[3.0, 1.0], [2.0, 4.0]], class_names=["a", "a"])
    with pytest.raises(ModelError, match="field 'machine_names\\[1\\]': machine names must be unique"):
        hs.System.from_arrays(alpha=[1.0], mu=[[3.0, 1.0]], machine_names=["u", "u"])
    with pytest.raises(ModelError, match="machine_names: expected 2 names \\(one per machine"):
        solve_allocation([[1.0, 2.0]], [1.0], machine_names=["u"])
    with pytest.raises(ModelError, match="class_names\\[0\\]: expected a non-empty string, got 3"):
        solve_allocation([[1.0, 2.0]], [1.0], class_names=[3])
    with pytest.warns(DeprecationWarning, match="machine_names"):
        assert s.machine_labels() == ["m1", "m2"]


def test_display_is_brief():
    s = hs.load("3.F")
    r = repr(s)
    assert len(r.splitlines()) <= 5 and "3,000 machines" in r and "MachineGroup(" not in r
    html = s._repr_html_()
    assert html.startswith("<div>") and "more groups" in html and len(html) < 20_000
    res = allocation_lp(s)
    r = repr(res)
    assert len(r.splitlines()) <= 3 and "lambda* = " in r and "array(" not in r
    assert "<table>" in res._repr_html_() and len(res._repr_html_()) < 20_000
    bad = solve_allocation([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0])  # class 2 cannot run
    assert bad.status == 2 and "cannot run" in repr(bad)


def test_long_frame_holds_exactly_delta_and_w():
    res = allocation_lp(hs.load("2.D"))
    df = res.to_frame()
    assert list(df.columns[:5]) == ["class", "class_name", "machine", "machine_name", "measure"]
    lam = df[df.measure == "lambda"]
    assert len(lam) == 1 and lam.value.iloc[0] == res.lam
    d = df[df.measure == "delta"]
    assert len(d) == res.N * res.M
    back = np.zeros((res.N, res.M))
    back[d["class"].to_numpy(int) - 1, d["machine"].to_numpy(int) - 1] = d.value.to_numpy()
    np.testing.assert_array_equal(back, res.delta)
    w = df[df.measure == "w"]
    np.testing.assert_array_equal(w.value.to_numpy(), res.w)
    assert res.seconds == res.wall_seconds > 0


def _rebuild(form, delta_form=None):
    """The dense matrix of a JSON ``delta``/``p_static`` in any of its forms (as ``as_dict`` documents)."""
    if isinstance(form, list):
        return np.array(form, dtype=float)
    N, M = form["shape"]
    if form["format"] == "grouped":
        mg = form["machine_group"] if form["machine_group"] != "as in delta" else delta_form["machine_group"]
        return np.array(form["groups"], dtype=float)[:, np.array(mg) - 1]
    assert form["format"] == "sparse"
    ci = form["class"] if form["class"] != "as in delta" else delta_form["class"]
    mi = form["machine"] if form["machine"] != "as in delta" else delta_form["machine"]
    assert min(ci) >= 1 and min(mi) >= 1  # numbered from 1
    out = np.zeros((N, M))
    out[np.array(ci) - 1, np.array(mi) - 1] = form["value"]
    return out


@pytest.mark.parametrize("case", ["dense random", "grouped 3.F"])
def test_compact_json_forms_rebuild_the_dense_matrices(case):
    if case == "dense random":
        rng = np.random.default_rng(3)
        mu, alpha = rng.uniform(0.1, 10, (5, 400)), rng.uniform(1, 5, 5) * 40
        res, fmt = solve_allocation(mu, alpha), "sparse"
    else:
        res, fmt = allocation_lp(hs.load("3.F")), "grouped"
    dense, compact = json.loads(res.to_json(dense=True)), json.loads(res.to_json(dense=False))
    assert compact["delta"]["format"] == fmt and compact["delta"]["shape"] == [res.N, res.M]
    np.testing.assert_array_equal(np.array(dense["delta"]), res.delta)
    np.testing.assert_array_equal(_rebuild(compact["delta"]), res.delta)
    p_dense = np.array([[np.nan if v is None else v for v in r] for r in dense["p_static"]])
    np.testing.assert_allclose(p_dense.sum(axis=1), 1.0)
    if fmt == "grouped":
        assert compact["p_static"]["format"] == "grouped"
        np.testing.assert_allclose(_rebuild(compact["p_static"], compact["delta"]), p_dense, rtol=1e-12, atol=0)
    else:  # left out beside a sparse delta; it is delta * mu / row sums
        assert compact["p_static"] is None
        cap = res.delta * res.mu
        np.testing.assert_allclose(cap / cap.sum(axis=1, keepdims=True), p_dense, rtol=1e-12, atol=0)
    assert dense["S"] == [(np.flatnonzero(r) + 1).tolist() for r in res.support] and compact["S"] is None
    assert compact["S_sizes"] == [len(x) for x in dense["S"]] == res.support.sum(axis=1).tolist()
    for key in ("lambda", "zeros", "target_zeros", "stabilizable", "status", "success", "message", "Ns",
                "discount_percent", "w", "class_names", "machine_names"):
        assert dense[key] == compact[key], key
    # the default switches at DENSE_JSON_CELLS entries
    from hetsched.lp._result import DENSE_JSON_CELLS

    assert isinstance(json.loads(res.to_json())["delta"], list) and res.delta.size <= DENSE_JSON_CELLS


def test_json_of_a_failed_lp_has_no_nan():
    res = solve_allocation([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0])  # status 2: p_static is 0/0
    out = json.loads(res.to_json())
    assert out["status"] == 2 and out["lambda"] == 0.0 and out["p_static"][1] == [None, None]
