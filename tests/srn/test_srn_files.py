"""Net files in (PNML, GreatSPN .PNPRO): the expression parser, the readers' semantics against closed
forms, refusals by name, GreatSPN's own recorded results, token-flow balance, the shipped third-party
nets against Storm's exact sparse LU, and the unbounded example."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from hetsched.cli import app
from hetsched.errors import ModelError
from hetsched.srn import pages, read, solve
from hetsched.srn.expr import parse, parse_measure
from hetsched.srn.net import MarkingView
from helpers import DATA_DIR

NETS = DATA_DIR / "nets"


def mmck(lam, mu, c, K):
    p = np.array([(lam / mu) ** n / math.factorial(min(n, c)) / c ** max(n - c, 0) for n in range(K + 1)])
    return p / p.sum()


# ---------------------------------------------------------------- the expression language
@pytest.mark.parametrize("text,kind,want", [
    ("2*#P0", "real", [0, 4, 8]),
    ("Max[1,#P3]", "int", [3, 5, 1]),
    ("If[#P0>0, 1.5, 2]", "real", [2, 1.5, 1.5]),
    ("when #P0 == 0 : 1; ever 2;", "real", [1, 2, 2]),
    ("#P0/3", "int", [0, 0, 1]),           # integer division where the value is an integer
    ("#P0/4", "real", [0, 0.5, 1]),        # real division where it is a real
    ("#(P3) + N", "int", [7, 9, 5]),       # PIPE's #(place) and a constant
    ("Min(#P0, #P3) - -1", "int", [1, 3, 2]),
    ("!(#P0 > 1) && True || #P3 == 1", "bool", [True, False, True]),
    ("Pow[2, #P0] + Binomial[4, 2] + Fract[1, 4]", "real", [7.25, 10.25, 22.25]),
])
def test_expressions(text, kind, want):
    X = np.array([[0, 3], [2, 5], [4, 1]])
    e = parse(text, kind, what="t", consts={"N": 4}, places=["P0", "P3"])
    assert np.allclose(e.fn(MarkingView(X, {"P0": 0, "P3": 1})), want)


@pytest.mark.parametrize("text,match", [
    ("#Q", "unknown place 'Q' at position 2"),
    ("2 +", "unexpected"),
    ("foo", "unknown name 'foo'"),
    ("__import__('os')", "unexpected character"),   # never eval
    ("__import__(1)", "unknown name '__import__'"),
    ("Max[1]", "Max takes 2"),
    ("1/0", "cannot be evaluated"),
    ("(" * 300 + "1" + ")" * 300, "nested deeper"),
    ("#P0 > 1", "expected a number"),
])
def test_expression_errors_name_position_and_text(text, match):
    with pytest.raises(ModelError, match=match):
        parse(text, "real", what="delay of T", places=["P0"])


def test_measure_syntax():
    m = parse_measure("E{#P0} + 2 P{#P3>1} - X{T1 / #P0 > 0}", what="m", places=["P0", "P3"], transitions=["T1"])
    assert [(c, k) for c, k, _, _ in m.terms] == [(1.0, "E"), (2.0, "P"), (-1.0, "X")]
    with pytest.raises(ModelError, match="names no transition"):
        parse_measure("X{T9}", what="m", transitions=["T1"])


# ---------------------------------------------------------------- semantics against closed forms
PNPRO = """<?xml version="1.0" encoding="UTF-8"?>
<project name="queues" version="121">
  <gspn name="mmck md">
    <nodes>
      <place name="Q"/>
      <constant consttype="REAL" name="lam" value="2.0"/>
      <template name="mu" type="REAL" last-binding="1.0"/>
      <constant consttype="INTEGER" name="c" value="3"/>
      <template name="K" type="INTEGER" last-binding="10"/>
      <transition name="arr" type="EXP" delay="lam" nservers="1" guard="#Q &lt; K"/>
      <transition name="srv" type="EXP" delay="mu*Min[#Q, c]"/>
    </nodes>
    <edges>
      <arc head="Q" kind="OUTPUT" tail="arr"/>
      <arc head="srv" kind="INPUT" tail="Q"/>
    </edges>
  </gspn>
  <gspn name="mmck servers">
    <nodes>
      <place name="Free" marking="K"/>
      <place name="Q"/>
      <template name="K" type="INTEGER" last-binding="10"/>
      <transition name="arr" type="EXP" delay="2.0" nservers="1"/>
      <transition name="srv" type="EXP" delay="1.0" nservers="3"/>
    </nodes>
    <edges>
      <arc head="arr" kind="INPUT" tail="Free"/>
      <arc head="Q" kind="OUTPUT" tail="arr"/>
      <arc head="srv" kind="INPUT" tail="Q"/>
      <arc head="Free" kind="OUTPUT" tail="srv"/>
    </edges>
  </gspn>
  <gspn name="gen"><nodes><place name="P"/><transition name="D" type="GEN" delay="I[1.0]"/></nodes><edges/></gspn>
  <measures gspn-name="mmck md" name="M"><formulas>
    <formula language="PERFORMANCE_INDEX" expr="E{#Q}"/><formula language="PERFORMANCE_INDEX" expr="P{#Q == K}"/>
  </formulas></measures>
</project>
"""


@pytest.fixture
def project(tmp_path):
    f = tmp_path / "queues.PNPRO"
    f.write_text(PNPRO)
    return f


@pytest.mark.parametrize("page", ["mmck md", "mmck servers"])
def test_marking_dependent_rates_and_k_servers_give_mmck(project, page):
    """M/M/3/10 two ways: a marking-dependent delay mu*Min[#Q,c] with a guard, and a constant delay with
    nservers=3 (rate x min(3, enabling degree)); GreatSPN's infinite-server default would differ."""
    p = mmck(2.0, 1.0, 3, 10)
    n = np.arange(11)
    r = solve(read(project, page=page))
    assert r.tokens["Q"] == pytest.approx((n * p).sum(), rel=1e-12)
    assert r.throughputs["arr"] == pytest.approx(2.0 * (1 - p[-1]), rel=1e-12)
    assert r.throughputs["srv"] == pytest.approx(r.throughputs["arr"], rel=1e-12)
    if page == "mmck md":    # the measures page of the file, and a parameter changed from the command line
        assert r.measures == pytest.approx({"E{#Q}": (n * p).sum(), "P{#Q == K}": p[-1]}, rel=1e-12)
        q = mmck(2.0, 1.5, 3, 6)
        r2 = solve(read(project, page=page, params={"mu": 1.5, "K": 6}))
        assert r2.measures["P{#Q == K}"] == pytest.approx(q[-1], rel=1e-12)


def test_infinite_server_is_greatspns_default(project):
    text = PNPRO.replace(' nservers="3"', "")
    f = project.with_name("inf.PNPRO")
    f.write_text(text)
    # M/M/inf/10 (Erlang loss): Poisson(2) truncated at 10
    w = np.array([2.0 ** k / math.factorial(k) for k in range(11)])
    r = solve(read(f, page="mmck servers"))
    assert r.tokens["Q"] == pytest.approx((np.arange(11) * w).sum() / w.sum(), rel=1e-12)


PNML = """<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="q.1" type="http://www.pnml.org/version-2009/grammar/ptnet"><page id="pg">
  <place id="in-queue"><initialMarking><text>0</text></initialMarking><capacity><value>Default,6</value></capacity></place>
  <place id="idle servers"><initialMarking><value>Default,2</value></initialMarking></place>
  <place id="busy"/>
  <transition id="arrive"><rate><value>1.5</value></rate><timed><value>true</value></timed></transition>
  <transition id="start"><rate><value>1</value></rate><timed><value>false</value></timed></transition>
  <transition id="done"><rate><value>#(busy)*0.75</value></rate><timed><value>true</value></timed></transition>
  <arc id="a1" source="arrive" target="in-queue"><inscription><text>1</text></inscription></arc>
  <arc id="a2" source="in-queue" target="start"/>
  <arc id="a3" source="idle servers" target="start"/>
  <arc id="a4" source="start" target="busy"/>
  <arc id="a5" source="busy" target="done"/>
  <arc id="a6" source="done" target="idle servers"/>
 </page></net>
</pnml>
"""


def test_pnml_names_capacity_priority_zero_and_functional_rate(tmp_path):
    """PNML 2009 + PIPE/Storm elements: names with '.', '-' and spaces, a capacity that disables arrivals
    (an M/M/2/8 queue: 6 waiting + 2 in service), an immediate transition of the default priority 0 and
    a PIPE functional rate #(busy)*0.75."""
    f = tmp_path / "q.pnml"
    f.write_text(PNML)
    net = read(f)
    assert net.name == "q.1" and net.capacities == {"in-queue": 6}
    assert net.transition("start").priority == 0 and not net.transition("start").timed
    r = solve(net)
    assert r.space.n_vanishing > 0
    p = mmck(1.5, 0.75, 2, 8)
    n = np.arange(9)
    assert r.tokens["in-queue"] + r.tokens["busy"] == pytest.approx((n * p).sum(), rel=1e-12)
    assert r.throughputs["start"] == pytest.approx(1.5 * (1 - p[-1]), rel=1e-12)    # an immediate transition


@pytest.mark.parametrize("mutate,match", [
    (lambda t: t.replace('<rate><value>1.5</value></rate>', ''), "transition 'arrive' has no <rate>"),
    (lambda t: t.replace('<rate><value>1</value>', '<rate><value>0</value>'), "weight 0"),
    (lambda t: t.replace('#(busy)*0.75', '#(nowhere)'), "unknown place 'nowhere'"),
    (lambda t: t.replace('ptnet"', 'symmetricnet"'), "coloured"),
    (lambda t: t.replace('<text>0</text>', '<text>Red,2</text>'), "coloured token"),
    (lambda t: t.replace('source="busy" target="done"', 'source="busy" target="idle servers"'), "must join"),
    (lambda t: t.replace("</pnml>", ""), "not well-formed XML"),
])
def test_pnml_refusals_name_the_element(tmp_path, mutate, match):
    f = tmp_path / "bad.pnml"
    f.write_text(mutate(PNML))
    with pytest.raises(ModelError, match=match):
        read(f)


def test_pnpro_refusals_and_pages(project, tmp_path):
    assert [(p.name, p.kind) for p in pages(project)] == [("mmck md", "net"), ("mmck servers", "net"),
                                                          ("gen", "net"), ("M", "measures")]
    with pytest.raises(ModelError, match=r"transition 'D' is general \(GEN"):
        read(project, page="gen")
    with pytest.raises(ModelError, match="3 net pages"):
        read(project)
    with pytest.raises(ModelError, match="page 'M' .* is a measures page"):
        read(project, page="M")
    with pytest.raises(ModelError, match=r"--param nope: the net has no parameter"):
        read(project, page="mmck md", params={"nope": 1})
    f = tmp_path / "t.PNPRO"
    f.write_text(PNPRO.replace(' last-binding="10"', "", 1))
    with pytest.raises(ModelError, match=r"parameter 'K' has no value; give one with --param K=VALUE"):
        read(f, page="mmck md")


# ---------------------------------------------------------------- the shipped third-party nets
def test_vanishing_initial_marking_long_run_by_hand():
    """tiny01: from the vanishing initial marking t1 (weight 1) and t2 (weight 2) race; after t2 the net
    ends with tokens in p3 and p7; after t1, t2 (2/5) leads there too and t3 (3/5) leads to p6:
    P(p3 and p7) = 2/3 + 1/3 * 2/5 = 0.8, P(p6) = 0.2."""
    r = solve(read(NETS / "storm" / "tiny01.pnml"))
    assert r.steady.closed_classes == 2
    assert r.tokens["p3"] == pytest.approx(0.8, abs=1e-15) and r.tokens["p7"] == pytest.approx(0.8, abs=1e-15)
    assert r.tokens["p6"] == pytest.approx(0.2, abs=1e-15)


def test_greatspn_recorded_results_fork_join():
    """GreatSPN's own steady-state results stored in the project (n = 1..10): every mean token count and
    throughput within GreatSPN's solver tolerance (its log shows an error bound 1e-7 per iteration)."""
    net = read(NETS / "greatspn" / "x.PNPRO", page="Fork-Join")
    recs = net.meta["recorded"]
    assert len(recs) == 10
    worst = 0.0
    for rec in recs:
        r = solve(read(NETS / "greatspn" / "x.PNPRO", page="Fork-Join", params={"n": int(rec["bindings"]["n"])}))
        for p, v in rec["tokens"].items():
            worst = max(worst, abs(r.tokens[p] - v) / abs(v))
        for t, v in rec["throughput"].items():
            worst = max(worst, abs(r.throughputs[t] - v) / abs(v))
    assert worst < 1e-5


@pytest.mark.parametrize("file,page", [("greatspn/FlexibleManufacturingSystem.PNPRO", None),
                                       ("greatspn/ReaderWriter.PNPRO", None),
                                       ("greatspn/TestFiringTimes.PNPRO", "GSPN 2"),
                                       ("storm/workflow_cluster.pnml", None)])
def test_token_flow_balances_with_immediate_throughputs(file, page):
    """In steady state every place gains as many tokens as it loses: sum_t X(t) (out - in) = 0, with the
    throughputs of immediate transitions from the visit rates of vanishing markings."""
    net = read(NETS / file, page=page)
    r = solve(net)
    assert r.success and r.steady.closed_classes == 1
    flow = {p: 0.0 for p in net.place_names}
    for t in net.transitions:
        X = r.throughputs[t.name]
        for p, m in t.outputs:
            flow[p] += X * m
        for p, m in t.inputs:
            flow[p] -= X * m
    scale = max(r.throughputs.values())
    assert max(abs(v) for v in flow.values()) < 1e-12 * scale


def test_unbounded_example_is_reported_within_seconds():
    """stormpy's gspn_simple.pnpro: tt_1 moves the token of place_1 to place_2, it_1 puts it back - place_2
    grows forever (Storm itself runs until it runs out of memory)."""
    r = CliRunner().invoke(app, ["srn", "solve", str(NETS / "stormpy" / "gspn_simple.pnpro")])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "is unbounded: place 'place_2' grows without limit" in lines[0]
    assert float(lines[0].rsplit(" in ", 1)[1].split()[0]) < 5.0


def test_cli_solve_every_page_json_and_refusals():
    r = CliRunner().invoke(app, ["srn", "solve", str(NETS / "greatspn" / "TestFiringTimes.PNPRO"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    by = {p["page"]: p for p in out["pages"]}
    assert set(by) == {f"GSPN {i}" for i in range(1, 8)}
    assert by["GSPN 3"]["refused"] and "general (GEN" in by["GSPN 3"]["message"]
    assert by["GSPN 1"]["success"] and by["GSPN 1"]["states"] == 6
    r = CliRunner().invoke(app, ["srn", "solve", str(NETS / "greatspn" / "TestFiringTimes.PNPRO"), "--page", "GSPN 5"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "transition 'T0' is general" in r.stderr
    r = CliRunner().invoke(app, ["srn", "solve", str(NETS / "greatspn" / "x.PNPRO"), "--page", "Fork-Join",
                                 "--param", "n=2", "--measure", "q=E{#Queue}", "--measure", "P{#Queue > 0}"])
    assert r.exit_code == 0 and "E{#Queue}" in r.stdout and " q " in r.stdout and "P{#Queue > 0}" in r.stdout


# ---------------------------------------------------------------- Storm, exact sparse LU
STORM_CASES = [("stormpy/philosophers_4.pnpro", None, "file"), ("stormpy/philosophers_4.pnpro", None, "export"),
               ("storm/workflow_cluster.pnml", None, "export"), ("stormpy/gspn_simple.pnml", None, "export"),
               ("greatspn/ReaderWriter.PNPRO", None, "file"), ("greatspn/TestFiringTimes.PNPRO", "GSPN 7", "export")]


@pytest.mark.storm
@pytest.mark.parametrize("file,page,route", STORM_CASES)
def test_shipped_nets_agree_with_storm(file, page, route):
    """Expected tokens of every place and throughput of every timed transition within 1e-8 (relative;
    absolute below 1e-12) of Storm's steady state with its exact sparse LU, Storm reading the file itself
    or hetsched's GSPN export of it."""
    pytest.importorskip("stormpy")
    from hetsched.srn.storm import storm_net_steady_state

    net = read(NETS / file, page=page)
    r = solve(net, method="direct")
    s = storm_net_steady_state(net, path=NETS / file, route=route, space=r.space)
    assert s["route"] == route and s["states"] == r.space.n_tangible

    def rel(a, b):
        return abs(a - b) if abs(b) < 1e-12 else abs(a - b) / abs(b)
    assert max(rel(r.tokens[p], v) for p, v in s["tokens"].items()) <= 1e-8
    assert max(rel(r.throughputs[t], v) for t, v in s["throughput"].items()) <= 1e-8


@pytest.mark.storm
def test_storm_reads_capacities_as_bit_fields():
    """Storm's own reading of gspn_simple.pnml: a firing that exceeds a capacity of 1 overflows Storm's
    bit-packed counter into the next place, so Storm reaches states no semantics allows (2 tangible states
    instead of 3); hetsched's export states the capacities as inhibitor arcs and Storm then agrees (the
    test above)."""
    pytest.importorskip("stormpy")
    from hetsched.srn.storm import storm_net_steady_state

    net = read(NETS / "stormpy" / "gspn_simple.pnml")
    r = solve(net)
    s = storm_net_steady_state(net, path=NETS / "stormpy" / "gspn_simple.pnml", route="file", space=r.space)
    assert (r.space.n_tangible, s["states"]) == (3, 2)
