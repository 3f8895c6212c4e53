"""Scenario files: every shipped scenario loads; every validation branch names file, field and value."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hetsched.errors import ScenarioError
from hetsched.scenarios import list_scenarios, load, scenario_ids

REQUIRED = ["2.A", "2.B", "2.C1", "2.C2", "2.D", "2.E", "2.F1", "2.F2", "2.G", "2.H", "2.I1", "2.I2",
            "2.1-mct", "3.3-ex1", "3.3-ex2", "3.A", "3.B", "3.C", "3.D", "3.E", "3.F", "3.H",
            "3.G1", "3.G2", "4.A", "4.B1", "4.B2", "4.2-ex"]


def test_every_thesis_system_ships_with_a_source():
    ids = scenario_ids()
    for sid in REQUIRED:
        assert sid in ids
    for info in list_scenarios():
        assert info.source and "thesis" in info.source


@pytest.mark.parametrize("sid", ["3.A", "3.B", "3.C", "3.D", "3.E"])
def test_all_variants_and_cases_load(sid):
    s_default = load(sid)
    for arr in ("alpha1", "alpha2"):
        cases = [1, 2, 3, 4, 5] if (sid == "3.A" and arr == "alpha1") else ([1, 2, 3] if sid == "3.A" else [1, 2])
        for c in cases:
            s = load(sid, arrivals=arr, case=c)
            assert s.M == s_default.M
            assert (s.failures is None) == (c == 1)


def test_case_details_match_the_text():
    s = load("3.A", arrivals="alpha1", case=4)
    assert s.failures.rate == 0.02 and s.failures.mean_down == 2
    a = s.a
    assert a[[12, 18, 24]].tolist() == [0.5] * 3 and a[[0, 3, 13, 25]].tolist() == [0.75] * 4
    assert a.sum() == pytest.approx(30 - 3 * 0.5 - 4 * 0.25)
    s = load("3.A", arrivals="alpha2", case=3)
    assert s.alpha == (17.5, 35, 56, 98) and s.failures.rate == 0.01
    f = load("3.F", case=2)
    assert f.M == 3000 and f.alpha == (1125, 2250, 3600, 6300)
    assert f.a[30 + 12] == 0.5  # machine 13 of the second copy
    d = load("3.A-dist", case=2)
    assert d.failures.up_dist == "hyperexp" and d.failures.scv == 5


def test_table_3_13_systems():
    g1 = load("3.G1")
    assert g1.M == 300 and len(g1.groups) == 15
    # mu' = P / BaseTime; bird has P = 1, chocolate 1.4375
    assert g1.mu[0, 0] == pytest.approx(1 / 8750)
    assert g1.mu[3, 3 * 20] == pytest.approx(1.4375 / 50000)
    # steady-state CPU availability solves pi P = pi (a = P_a + 0.5 P_b + 0.33 P_c)
    for grp in g1.groups:
        ch = grp.cpu_chain
        pi = ch.stationary()
        assert pi.sum() == pytest.approx(1) and np.all(pi >= 0)
        P = ch.matrix()
        live = np.asarray(ch.P).sum(axis=1) > 0
        np.testing.assert_allclose((pi @ P)[live], pi[live], atol=1e-9)
        assert 0.33 <= ch.mean_availability() <= 1
    assert g1.failures.up_dist == "weibull" and g1.failures.down_dist == "const" and g1.failures.mean_down == 120
    g2 = load("3.G2")
    assert g2.M == 300
    assert set(np.round(g2.mu[0] * 8750, 6)) <= {1.0, 1.125, 1.4375}
    assert np.array_equal(g2.mu, load("3.G2").mu)  # seeded: the same every load
    b1 = load("4.B1")
    np.testing.assert_allclose(np.asarray(b1.alpha_matrix).sum(axis=1), b1.alpha)


def test_per_machine_arrivals_4a():
    s = load("4.A")
    assert np.asarray(s.alpha_matrix).shape == (4, 7)
    assert s.alpha[0] == pytest.approx(2 + 1.5 + 1.75 + 1 + 3 + 1.9 + 1.35)


def _write(tmp_path, body: str):
    p = tmp_path / "bad.toml"
    p.write_text(textwrap.dedent(body))
    return str(p)


BAD = [
    ('id = "x"\nalpha = [1]\n', "bad.toml: give exactly one of 'mu'"),
    ('alpha = [1]\nmu = [[1]]\n', "bad.toml: missing field 'id'"),
    ('id = "x"\nalpha = [1]\nmu = [[1]]\nmuu = 3\n', "bad.toml: unknown field 'muu'"),
    ('id = "x"\nalpha = [1, 2]\nmu = [[1, 2]]\n', "expected 2 rates \\(one per class\\), got 1"),
    ('id = "x"\nalpha = [1]\nmu = [[1, -2]]\n', "field 'mu\\[0\\]\\[1\\]': execution rate must be >= 0, got -2"),
    ('id = "x"\nalpha = [1]\nmu = [[1, "fast"]]\n', "field 'mu\\[0\\]\\[1\\]': expected a number, got 'fast'"),
    ('id = "x"\nalpha = [1, 1]\nmu = [[1, 2], [0, 0]]\n', "class 2 cannot run on any machine"),
    ('id = "x"\nalpha = [0]\nmu = [[1]]\n', "field 'alpha\\[0\\]': arrival rate must be > 0, got 0"),
    ('id = "x"\nalpha = [1, -3]\nmu = [[1], [1]]\n', "field 'alpha\\[1\\]': arrival rate must be > 0, got -3"),
    ('id = "x"\nalpha = ["a"]\nmu = [[1]]\n', "field 'alpha\\[0\\]': expected a number, got 'a'"),
    ('id = "x"\nalpha = [1]\nmu = [[1, 1], [2]]\n', "field 'mu\\[1\\]': expected 2 columns"),
    ('id = "x"\nalpha = [1]\nmu = [[1, 1]]\navailability = [{machines = [2], a = 1.5}]\n',
     "availability\\[0\\].a': availability must lie in \\[0, 1\\], got 1.5"),
    ('id = "x"\nalpha = [1]\nmu = [[1, 1]]\navailability = [{machines = [3], a = 0.5}]\n',
     "machine numbers run 1..2, got 3"),
    ('id = "x"\nalpha = [1]\n[[groups]]\nname = "P"\ncount = 0\nmu = [1]\n', "field 'count': expected a positive integer, got 0"),
    ('id = "x"\nalpha = [1]\n[[groups]]\nname = "P"\ncount = 2\n', "missing field groups\\[0\\].'mu'"),
    ('id = "x"\nalpha = [1]\nmu = [[1]]\n[failures]\nrate = -1\nmean_down = 2\n', "failures field 'rate': must be > 0, got -1"),
    ('id = "x"\nalpha = [1]\nmu = [[1]\n', "bad.toml: not valid TOML"),
    ('id = "x"\nalpha = [1]\nmu = [[1]]\nexec_dist = "gamma"\n', "field 'exec_dist': expected one of"),
]


@pytest.mark.parametrize("body,msg", BAD, ids=[m[:40] for _, m in BAD])
def test_validation_messages(tmp_path, body, msg):
    with pytest.raises(ScenarioError, match=msg):
        load(_write(tmp_path, body))


def test_unknown_ids_variants_and_cases():
    with pytest.raises(ScenarioError, match="unknown scenario id '9.Z'"):
        load("9.Z")
    with pytest.raises(ScenarioError, match="unknown arrivals variant 'alpha3'; available: alpha1, alpha2"):
        load("3.A", arrivals="alpha3")
    with pytest.raises(ScenarioError, match="no case 9 for arrivals 'alpha2'; available cases: \\[1, 2, 3\\]"):
        load("3.A", arrivals="alpha2", case=9)
    with pytest.raises(ScenarioError, match="has no arrival variants"):
        load("2.A", arrivals="alpha2")
    assert load("2.c1").id == "2.C1"  # ids are case-insensitive


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hetsched.cli", *args], capture_output=True, text=True, timeout=120)


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = _write(tmp_path, 'id = "x"\nalpha = [1]\nmu = [[1, -2]]\n')
    for args in (["lp", bad], ["lp", "9.Z"], ["lp", "3.A", "--case", "9"], ["lp", "2.A", "--solution", "x"]):
        r = _cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
        assert "Traceback" not in r.stderr
    r = _cli("lp", bad)
    assert "bad.toml" in r.stderr and "mu[0][1]" in r.stderr and "-2" in r.stderr


def test_cli_lp_json_contract():
    import json

    r = _cli("lp", "2.D", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("lambda", "delta", "zeros", "target_zeros", "stabilizable"):
        assert key in out
    assert out["lambda"] == pytest.approx(1.3449, abs=5e-5)
    assert len(out["delta"]) == 4 and len(out["delta"][0]) == 7
    assert out["zeros"] == out["target_zeros"] == 18 and out["stabilizable"] is True
