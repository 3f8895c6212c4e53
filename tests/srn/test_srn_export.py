"""Exports that other tools load: each file is read by Storm and gives hetsched's steady state.

Truths: the M/M/c/K closed form; Storm building its own chain from our GSPN
PNML, explicit and DRN files (an independent state-space generator and solver);
the chain of the unfolded GSPN re-explored by hetsched.
"""

from __future__ import annotations

import math
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.srn import Net, mark, rate, solve
from hetsched.srn.export import gspn_form, srn_features, to_gspn_pnml, to_storm_explicit

stormpy = pytest.importorskip("stormpy")
import stormpy.gspn  # noqa: E402

from hetsched.srn.storm import GangGSPN, gang_gspn, storm_gspn_steady_state  # noqa: E402

pytestmark = pytest.mark.storm

NS = "{http://www.pnml.org/version-2009/grammar/pnml}"


def mmck_net(lam, mu, c, K):
    """M/M/c/K: free slots, waiting jobs, idle and busy servers; service rate mu * #Busy (marking-dependent)."""
    net = Net("mmck")
    net.places(Free=K, Wait=0, Idle=c, Busy=0)
    net.timed("arrive", lam, inputs={"Free": 1}, outputs={"Wait": 1})
    net.immediate("start", inputs={"Wait": 1, "Idle": 1}, outputs={"Busy": 1})
    net.timed("done", lambda m: mu * m["Busy"], inputs={"Busy": 1}, outputs={"Idle": 1, "Free": 1})
    return net


def mmck_closed_form(lam, mu, c, K):
    """p_n of M/M/c/K (textbook), and L, throughput."""
    a = lam / mu
    w = np.array([a**n / math.factorial(n) if n <= c else a**n / (math.factorial(c) * c ** (n - c))
                  for n in range(K + 1)])
    p = w / w.sum()
    n = np.arange(K + 1)
    return p, float(p @ n), lam * (1 - p[K])


MMCK = [(2.0, 1.0, 3, 10), (5.0, 2.0, 4, 12)]


@pytest.mark.parametrize("lam,mu,c,K", MMCK)
def test_mmck_pnml_in_storm_matches_closed_form(tmp_path, lam, mu, c, K):
    net = mmck_net(lam, mu, c, K)
    path = tmp_path / "mmck.pnml"
    form = gspn_form(net)
    assert form.unfolded == {"done": c}          # one copy per number of busy servers
    to_gspn_pnml(form, path)
    p, L, X = mmck_closed_form(lam, mu, c, K)
    out = storm_gspn_steady_state(path, form.bounds, ["Wait", "Busy", "Free"], solver="dense")
    assert out["states"] == K + 1
    assert out["eliminated"] > 0                  # 'start' makes vanishing markings, removed by Storm
    assert out["mark"]["Wait"] + out["mark"]["Busy"] == pytest.approx(L, rel=1e-10)
    assert out["dist"]["Free"][0] == pytest.approx(p[K], rel=1e-10)
    r = solve(net, method="direct")
    assert r.expect(mark("Wait") + mark("Busy")) == pytest.approx(L, rel=1e-10)
    assert r.expect(rate("arrive")) == pytest.approx(X, rel=1e-10)
    # Storm's own solver, within its stopping precision
    d = storm_gspn_steady_state(path, form.bounds, ["Wait", "Busy"], solver="default")
    assert d["mark"]["Wait"] + d["mark"]["Busy"] == pytest.approx(L, rel=1e-5)


def test_pnml_is_ptnet_pnml_with_storm_gspn_elements(tmp_path):
    text = to_gspn_pnml(mmck_net(2.0, 1.0, 2, 4), tmp_path / "m.pnml")
    root = ET.fromstring(text.split("?>", 1)[1])
    net = root.find(f"{NS}net")
    assert net.get("type") == "http://www.pnml.org/version-2009/grammar/ptnet"
    places = root.findall(f".//{NS}place")
    assert {p.get("id"): int(p.find(f"{NS}initialMarking/{NS}text").text) for p in places} == \
        {"Free": 4, "Wait": 0, "Idle": 2, "Busy": 0}
    for t in root.findall(f".//{NS}transition"):
        assert t.find(f"{NS}timed/{NS}value").text in ("true", "false")
        float(t.find(f"{NS}rate/{NS}value").text)
    for a in root.findall(f".//{NS}arc"):
        k = a.find(f"{NS}inscription/{NS}text").text
        assert a.find(f"{NS}inscription/{NS}value").text == f"Default,{k}"
    g = stormpy.gspn.load_gspn_file(str(tmp_path / "m.pnml"))
    assert g.get_number_of_places() == 4
    assert g.get_number_of_immediate_transitions() == 1
    assert g.get_number_of_timed_transitions() == 1 + 2     # arrive + done for 1 and 2 busy servers


GANG_GSPNS = [
    GangGSPN(servers=8, capacity=10, gang_size=3, arrival=1.5, dispatch=(2.0, 1.0), local=(0.5, 1.0)),
    GangGSPN(servers=5, capacity=6, gang_size=2, arrival=2.5, dispatch=(1.0, 3.0), local=(1.0, 0.2), mu=1.3,
             immediate_start=True),
]


@pytest.mark.parametrize("g", GANG_GSPNS)
def test_gang_gspn_pnml_in_storm(tmp_path, g):
    """The two-site gang GSPN: our PNML read by Storm gives our chain and our token counts."""
    net = gang_gspn(g)
    form = gspn_form(net)
    assert set(form.unfolded) == {"t1", "t2"}     # infinite-server completions: one copy per #LQ_i
    path = tmp_path / "gang.pnml"
    to_gspn_pnml(form, path)
    places = list(g.places())
    ref = storm_gspn_steady_state(path, form.bounds, places, solver="dense")
    r = solve(net, method="direct")
    assert r.space.n_tangible == ref["states"]
    for p, v in ref["mark"].items():
        assert r.expect(mark(p)) == pytest.approx(v, rel=1e-10, abs=1e-12), p


def small_gang(policy, **kw):
    from hetsched.srn.gang import GangParams

    base = dict(policy=policy, arrival_rate=2.0, capacity=12, forward=(0, 3, 6), reverse=(0, 2, 4),
                servers=(6, 6), gang_size=3, local_capacity=(1, 1))
    base.update(kw)
    return GangParams(**base)


@pytest.mark.parametrize("policy", ["LS", "LC1", "LC2"])
def test_gang_srn_unfolded_in_storm(tmp_path, policy):
    """The full gang SRN (guards, marking-dependent rates and arcs) unfolded to a GSPN: Storm's chain
    has our tangible states and our token counts."""
    from hetsched.srn.gang import gang_net

    p = small_gang(policy)
    net = gang_net(p)
    assert {"T", "GS1", "t1"} <= set(srn_features(net))
    form = gspn_form(net)                      # check=True: hetsched re-explores the GSPN, same chain
    path = tmp_path / "g.pnml"
    to_gspn_pnml(form, path)
    places = ["GQ", "PCONT", "LQ1", "LQ2", "pl1", "pl2"]
    ref = storm_gspn_steady_state(path, form.bounds, places, solver="dense")
    r = solve(net, method="direct")
    assert r.space.n_tangible == ref["states"]
    for q, v in ref["mark"].items():
        assert r.expect(mark(q)) == pytest.approx(v, rel=1e-9, abs=1e-12), q


def test_not_a_gspn_names_the_features():
    from hetsched.srn.gang import gang_net

    with pytest.raises(ModelError, match=r"not a GSPN.*GS11: .*marking-dependent rate.*guard.*"
                                         r"marking-dependent input arc\(s\) N1"):
        gspn_form(gang_net(small_gang("LS")), unfold=False)


def test_unfolding_check_catches_an_impure_function():
    calls = {"n": 0}

    def drifting(m):                     # not a function of the marking: changes between calls
        calls["n"] += 1
        return 1.0 + calls["n"] * 1e-3 + 0 * m["Q"]

    net = Net("impure")
    net.places(Q=0)
    net.timed("a", 1.0, outputs={"Q": 1}, inhibitors={"Q": 3})
    net.timed("s", drifting, inputs={"Q": 1})
    with pytest.raises(ModelError, match="changed the generator"):
        gspn_form(net)


@pytest.mark.parametrize("lam,mu,c,K", MMCK[:1])
def test_storm_explicit_and_drn_mmck(tmp_path, lam, mu, c, K):
    from hetsched.srn.export import to_drn

    net = mmck_net(lam, mu, c, K)
    r = solve(net, method="direct")
    _, L, X = mmck_closed_form(lam, mu, c, K)
    rewards = {"jobs": mark("Wait") + mark("Busy"), "thru": rate("arrive")}
    files = to_storm_explicit(r.ctmc, tmp_path / "m", rewards=rewards)
    assert files[0].read_text().splitlines()[0] == "ctmc"
    for name, truth in (("jobs", L), ("thru", X)):
        model = stormpy.build_model_from_explicit(str(tmp_path / "m.tra"), str(tmp_path / "m.lab"),
                                                  state_rewards=str(tmp_path / f"m.{name}.rew"))
        assert model.nr_states == r.ctmc.n == K + 1
        assert str(model.model_type).endswith("CTMC")
        res = stormpy.model_checking(model, stormpy.parse_properties("R=? [ LRA ]")[0])
        assert res.get_value(model.initial_states[0]) == pytest.approx(truth, rel=1e-6)
    drn = to_drn(r.ctmc, tmp_path / "m.drn", rewards=rewards)
    model = stormpy.build_model_from_drn(str(drn))
    res = stormpy.model_checking(model, stormpy.parse_properties('R{"jobs"}=? [ LRA ]')[0])
    assert res.get_value(model.initial_states[0]) == pytest.approx(L, rel=1e-6)


def test_explicit_refuses_negative_rewards(tmp_path):
    r = solve(mmck_net(2.0, 1.0, 2, 4))
    with pytest.raises(ModelError, match="reward 'neg'.*>= 0"):
        to_storm_explicit(r.ctmc, tmp_path / "m", rewards={"neg": -1 * mark("Busy")})


def _cli(*args, cwd):
    """Run ``hetsched ARGS`` in-process in ``cwd``; returns (exit code, stdout, stderr)."""
    import os

    from typer.testing import CliRunner

    from hetsched.cli import app

    old = os.getcwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(app, list(args))
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


SMALL = ["--servers", "6", "--gang-size", "3", "--capacity", "12", "--local-capacity", "1", "--arrival-rate", "2"]


def test_cli_export_gang_all_formats_load_in_storm(tmp_path):
    """`hetsched srn export gang`: each format loads in Storm with the state count and SRT of `srn gang`."""
    import json

    ref = json.loads(_cli("srn", "gang", "--policy", "LC1", *SMALL, "--json", cwd=tmp_path).stdout)
    for fmt, out in (("pnml", "g.pnml"), ("prism-explicit", "g"), ("drn", "g.drn")):
        r = _cli("srn", "export", "gang", "--policy", "LC1", *SMALL, "--format", fmt, "-o", out, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "load with" in r.stdout
    g = stormpy.gspn.load_gspn_file(str(tmp_path / "g.pnml"))
    assert g.get_number_of_places() == 8
    model = stormpy.build_model_from_explicit(str(tmp_path / "g.tra"), str(tmp_path / "g.lab"),
                                              state_rewards=str(tmp_path / "g.queue.rew"))
    assert model.nr_states == ref["states"]
    q = stormpy.model_checking(model, stormpy.parse_properties("R=? [ LRA ]")[0])
    drn = stormpy.build_model_from_drn(str(tmp_path / "g.drn"))
    assert drn.nr_states == ref["states"]
    x = stormpy.model_checking(drn, stormpy.parse_properties('R{"gangs"}=? [ LRA ]')[0])
    srt = q.get_value(model.initial_states[0]) / x.get_value(drn.initial_states[0])
    assert srt == pytest.approx(ref["SRT"], rel=1e-5)      # Storm's LRA solver stops at 1e-6


def test_cli_export_never_overwrites(tmp_path):
    (tmp_path / "g.pnml").write_text("keep")
    r = _cli("srn", "export", "gang", *SMALL, "--format", "pnml", "-o", "g.pnml", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "exists" in r.stderr
    assert (tmp_path / "g.pnml").read_text() == "keep"
    r = _cli("srn", "export", "gang", *SMALL, "--format", "pnml", "-o", "g.pnml", "--force", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "g.pnml").read_text().startswith("<?xml")


def test_pnpro_for_greatspn_reloads_with_the_same_chain(tmp_path):
    """GreatSPN's project format, written by Storm from our PNML: read back, same states and token counts."""
    from hetsched.srn.export import to_pnpro
    from hetsched.srn.gang import gang_net

    net = gang_net(small_gang("LC2"))
    form = gspn_form(net)
    path = to_pnpro(form, tmp_path / "g.pnpro")
    text = path.read_text()
    assert text.startswith("<project") and 'type="IMM"' in text and 'type="EXP"' in text
    places = ["GQ", "PCONT", "LQ1", "LQ2"]
    ref = storm_gspn_steady_state(path, form.bounds, places, solver="dense")
    r = solve(net, method="direct")
    assert r.space.n_tangible == ref["states"]
    for q, v in ref["mark"].items():
        assert r.expect(mark(q)) == pytest.approx(v, rel=1e-9, abs=1e-12), q


@pytest.mark.parametrize("fmt", ["pnml", "pnpro"])
def test_round_trip_export_then_solve(tmp_path, fmt):
    """What `srn export gang` writes, `srn solve` reads back to the same numbers: the expected tokens of
    every place, and the throughput of every transition (an unfolded transition's copies summed)."""
    import json

    tiny = ["--servers", "4", "--gang-size", "2", "--capacity", "6", "--local-capacity", "1", "--arrival-rate", "2"]
    ref = json.loads(_cli("srn", "gang", "--policy", "LC2", *tiny, "--json", cwd=tmp_path).stdout)
    r = _cli("srn", "export", "gang", "--policy", "LC2", *tiny, "--format", fmt, "-o", f"g.{fmt}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    back = _cli("srn", "solve", f"g.{fmt}", "--json", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    page = json.loads(back.stdout)["pages"][0]
    assert page["states"] == ref["states"]
    from hetsched.srn.gang import GangParams, gang_net

    p = GangParams(**{k: tuple(v) if isinstance(v, list) else v for k, v in ref["params"].items()})
    res = solve(gang_net(p))
    for place, v in res.tokens.items():
        assert page["tokens"][place] == pytest.approx(v, rel=1e-10, abs=1e-13), place
    summed = {}
    for name, x in page["throughput"].items():
        orig = name.split("__")[0]
        summed[orig] = summed.get(orig, 0.0) + x
    for t, v in res.throughputs.items():
        assert summed.get(t, 0.0) == pytest.approx(v, rel=1e-10, abs=1e-13), t
