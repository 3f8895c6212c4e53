"""Scenario files: every shipped scenario loads; every validation branch names file, field and value."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hetsched.errors import ModelError, ScenarioError
from hetsched.scenarios import list_scenarios, load, scenario_ids
from hetsched.system import CpuChain, Failures, MachineGroup, System

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
    ('id = "x"\nalpha = [1]\nmu = [[1]]\nmuu = 3\n', "bad.toml: unknown field 'muu' \\(allowed here: id, "),
    ('id = "x"\nalpha = [1, 2]\nmu = [[1, 2]]\n', "field 'alpha': expected 1 arrival rates \\(one per class; 'mu' has 1 row\\), got 2"),
    ('id = "x"\nalpha = [1]\nmu = [[1, -2]]\n', "field 'mu\\[0\\]\\[1\\]': must be >= 0, got -2"),
    ('id = "x"\nalpha = [1]\nmu = [[1, "fast"]]\n', "field 'mu\\[0\\]\\[1\\]': expected a number, got 'fast'"),
    ('id = "x"\nalpha = [1, 1]\nmu = [[1, 2], [0, 0]]\n', "class 2 cannot run on any machine"),
    ('id = "x"\nalpha = [0]\nmu = [[1]]\n', "field 'alpha\\[0\\]': must be > 0, got 0"),
    ('id = "x"\nalpha = [1, -3]\nmu = [[1], [1]]\n', "field 'alpha\\[1\\]': must be > 0, got -3"),
    ('id = "x"\nalpha = ["a"]\nmu = [[1]]\n', "field 'alpha\\[0\\]': expected a number, got 'a'"),
    ('id = "x"\nalpha = [1]\nmu = [[1, 1], [2]]\n', "field 'mu\\[1\\]': expected 2 columns like row 0, got 1"),
    ('id = "x"\nalpha = [1]\nmu = [[1, 1]]\navailability = [{machines = [2], a = 1.5}]\n',
     "field 'availability\\[0\\].a': must be <= 1, got 1.5"),
    ('id = "x"\nalpha = [1]\nmu = [[1, 1]]\navailability = [{machines = [3], a = 0.5}]\n',
     "field 'availability\\[0\\].machines\\[0\\]': machine numbers run 1..2, got 3"),
    ('id = "x"\nalpha = [1]\n[[groups]]\nname = "P"\ncount = 0\nmu = [1]\n', "field 'groups\\[0\\].count': must be >= 1, got 0"),
    ('id = "x"\nalpha = [1]\n[[groups]]\nname = "P"\ncount = 2\n', "field 'groups\\[0\\]': give exactly one of 'mu'"),
    ('id = "x"\nalpha = [1]\nmu = [[1]]\n[failures]\nrate = -1\nmean_down = 2\n', "field 'failures.rate': must be >= 0, got -1"),
    ('id = "x"\nalpha = [1]\nmu = [[1]\n', "bad.toml: not valid TOML"),
    ('id = "x"\nalpha = [1]\nmu = [[1]]\nexec_dist = "gamma"\n', "field 'exec_dist': expected one of 'exp', 'det' or 'hyperexp', got 'gamma'"),
]


def _shipped(sid: str) -> str:
    from importlib import resources

    return (resources.files("hetsched.scenarios") / f"{sid}.toml").read_text()


# The bad inputs of the issue-15 campaign, each a mutation of a shipped file:
# (scenario, old text, new text, expected message).
_G1_BIRD = "[[0.998, 0.001, 0.001], [0.015, 0.970, 0.015], [0.000, 0.0197, 0.9803]]"
CAMPAIGN = [
    ("3.A", 'id = "3.A"', 'meta = 5\nid = "3.A"', "field 'meta': expected a table, got 5"),
    ("3.A", None, "\n[[cases]]\n", "missing field 'cases\\[8\\].case'"),
    ("3.A", 'default = "alpha1"\nalpha1 = [11.25, 22.5, 36, 63]\nalpha2 = [17.5, 35, 56, 98]\n', "",
     "field 'arrivals': no arrival variant given"),
    ("3.G1", _G1_BIRD, "[[0.998, 0.001, 0.001], [0.015, 0.970], [0.000, 0.0197, 0.9803]]",
     "field 'groups\\[0\\].cpu_chain\\[1\\]': expected at least 3 entries, got 2"),
    ("3.G1", _G1_BIRD, "[[nan, 0.001, 0.001], [0.015, 0.970, 0.015], [0.000, 0.0197, 0.9803]]",
     "field 'groups\\[0\\].cpu_chain\\[0\\]\\[0\\]': expected a finite number, got nan"),
    ("3.G1", _G1_BIRD, "[[0.5, 0.001, 0.001], [0.015, 0.970, 0.015], [0.000, 0.0197, 0.9803]]",
     "field 'groups\\[0\\].cpu_chain\\[0\\]': row must sum to 1 \\(or be all 0\\), sums to 0.502"),
    ("3.A", "count = 3", "count = 100000000", "field 'groups\\[0\\].count': must be <= 1,000,000, got 100000000"),
    ("3.F", "replicate = 100", "replicate = 40000",
     "field 'replicate': 1,200,000 machines in all exceed the limit of 1,000,000"),
    ("3.A", "count = 3", "count = 123456789012345678901234567890",
     "field 'groups\\[0\\].count': must be <= 1,000,000, got 123456789012345678901234567890"),
    ("3.A", "mu = [2, 1, 1, 1]", "mu = [" + "9" * 400 + ", 1, 1, 1]",
     "field 'groups\\[0\\].mu\\[0\\]': number too large, got an integer of 400 digits"),
    ("3.A", "mu = [2, 1, 1, 1]", "mu = [2e300, 1, 1, 1]", "field 'groups\\[0\\].mu\\[0\\]': must be <= 1e\\+09, got 2e\\+300"),
    ("3.A", "mu = [2, 1, 1, 1]", "mu = [inf, 1, 1, 1]", "field 'groups\\[0\\].mu\\[0\\]': expected a finite number, got inf"),
    ("3.G1", "power = 1.125", 'power = "fast"', "field 'groups\\[1\\].power': expected a number, got 'fast'"),
    ("3.G1", "power = 1.125", "power = 1e-8",
     "field 'groups\\[1\\].power': power / base_time = 1e-08 / base_time\\[1\\] = 5.71429e-13 is outside"),
    ("3.G1", "weibull_shape = 0.568664\n", "",
     "field 'groups\\[0\\]': give 'weibull_shape' and 'weibull_scale' together, or neither"),
    ("3.A", 'arrivals = "alpha1"\ncase = 2', 'arrivals = "alpha9"\ncase = 2',
     "field 'cases\\[1\\].arrivals': names no arrival variant, got 'alpha9'; variants: alpha1, alpha2"),
    ("3.A", 'arrivals = "alpha1"\ncase = 3', 'arrivals = "alpha1"\ncase = 2',
     "field 'cases\\[2\\].case': case 2 given twice \\(also cases\\[1\\]\\)"),
    ("3.A", "case = 2\nfailure_rate = 0.02\nmean_fault = 2", "case = 2\nfailure_rate = 0.02",
     "field 'cases\\[1\\]': 'failure_rate' > 0 needs 'mean_fault'"),
    ("4.A", "alpha_levels = [1.0, 1.1, 1.2]", "alpha_levels = [1.0, 1.1]",
     "field 'meta.alpha_levels': expected at least 3 entries, got 2"),
    ("4.A", "rate_change_rate = 0.035", 'rate_change_rate = "often"', "field 'meta.rate_change_rate': expected a number"),
    ("4.A", "[1.35, 1.5, 2.4, 1.55, 2.9, 0.75, 1.55]", "[1.35, 1.5, 2.4, 1.55, 2.9, 0.75]",
     "field 'alpha_matrix\\[1\\]': expected 7 per-machine rates, got 6"),
    ("4.2-ex", "changed = [[1, 0.5],", "changed = [[0, 0],", "field 'arrivals.changed\\[0\\]': class 1 gets no arrivals"),
    ("3.G2", "seed = 2009", "seed = -1", "field 'power_random.seed': must be >= 0, got -1"),
    ("3.G1", 'up_dist = "weibull"', 'up_dist = "lognormal"',
     "field 'failures.up_dist': expected one of 'exp', 'hyperexp' or 'weibull', got 'lognormal'"),
    ("3.A", 'id = "3.A"', 'id = 1979-05-27', "field 'id': expected a string, got datetime.date\\(1979, 5, 27\\)"),
    ("2.A", 'id = "2.A"', 'id = "' + "x" * 5000 + '"', "field 'id': at most 200 characters, got 5,000"),
]


@pytest.mark.parametrize("sid,old,new,msg", CAMPAIGN, ids=[f"{c[0]}:{c[3][:30]}" for c in CAMPAIGN])
def test_campaign_inputs_get_one_line_naming_file_field_value(tmp_path, sid, old, new, msg):
    text = _shipped(sid)
    if old is None:
        text += new
    else:
        assert old in text
        text = text.replace(old, new, 1)
    with pytest.raises(ScenarioError, match="^" + str(tmp_path / "bad.toml").replace(".", "\\.") + ": " + msg) as ei:
        load(_write(tmp_path, text))
    assert "\n" not in str(ei.value)


def test_files_that_are_not_scenarios(tmp_path):
    p = tmp_path / "deep.toml"
    p.write_text('id = "x"\nalpha = ' + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(ScenarioError, match="deep.toml: not valid TOML: arrays or tables nested too deeply"):
        load(str(p))
    p = tmp_path / "bin.toml"
    p.write_bytes(b"id = \"x\"\n\xff\xfe\x00garbage")
    with pytest.raises(ScenarioError, match="bin.toml: not a text file \\(UTF-8\\): byte 9"):
        load(str(p))
    with pytest.raises(ScenarioError, match="is a folder, not a scenario file"):
        load(str(tmp_path))
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load(str(tmp_path / "missing.toml"))
    with pytest.raises(ScenarioError, match="not a regular file"):
        load("/dev/null")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match="fifo.toml: not a regular file"):
        load(str(fifo))  # never opened: reading a FIFO would hang
    with pytest.raises(ScenarioError, match="not a scenario id or a file path"):
        load("x" * 5000)
    with pytest.raises(ScenarioError, match="cannot open: File name too long"):
        load(str(tmp_path / ("y" * 300 + ".toml")))
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * 4_000_000 + b"\n")
    with pytest.raises(ScenarioError, match="big.toml: file too large \\(4,000,003 bytes"):
        load(str(big))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    p = tmp_path / "secret.toml"
    p.write_text(_shipped("2.A"))
    p.chmod(0)
    with pytest.raises(ScenarioError, match="secret.toml: cannot read: Permission denied"):
        load(str(p))


def test_system_api_validates_like_the_loader():
    """``System(...)`` and ``System.from_arrays`` refuse what a scenario file may not hold."""
    ok = System.from_arrays(alpha=[1.0, 2.0], mu=np.array([[3.0, 0.0], [1.0, 4.0]]))
    assert ok.N == 2 and ok.M == 2 and ok.mu[1, 1] == 4.0
    bad = [
        (dict(alpha=[1.0], mu=[[float("nan"), 1.0]]), "field 'mu\\[0\\]\\[0\\]': expected a finite number, got nan"),
        (dict(alpha=[1.0], mu=np.array([[1.0, np.inf]])), "field 'mu\\[0\\]\\[1\\]': expected a finite number, got inf"),
        (dict(alpha=[1.0], mu=[[1e300, 1.0]]), "field 'mu\\[0\\]\\[0\\]': execution rate must be >= 1e-12 and <= 1e\\+09"),
        (dict(alpha=[1.0], mu=[[1.0, 2.0], [3.0]]), "field 'mu\\[1\\]': expected 2 columns like row 0, got 1"),
        (dict(alpha=[float("nan")], mu=[[1.0]]), "field 'alpha\\[0\\]': expected a finite number, got nan"),
        (dict(alpha=[-1.0], mu=[[1.0]]), "field 'alpha\\[0\\]': arrival rate must be > 0, got -1.0"),
        (dict(alpha=[1.0], mu=[[1.0]], availability=[2.0]), "field 'availability\\[0\\]' \\(machine 1\\): must lie in"),
        (dict(alpha=[1.0] * 2, mu=np.ones((2, 10_000_001))), "field 'mu': 2 x 10,000,001 exceeds the limits"),
        (dict(alpha=[1.0], mu=[[1.0]], id="x" * 5000), "field 'id': at most 200 characters, got 5,000"),
        (dict(alpha="fast", mu=[[1.0]]), "field 'alpha': expected a list of numbers, got 'fast'"),
        (dict(alpha=[10**400], mu=[[1.0]]), "field 'alpha\\[0\\]': number too large, got an integer of 401 digits"),
    ]
    for kw, msg in bad:
        with pytest.raises(ModelError, match=msg):
            System.from_arrays(**kw)
    with pytest.raises(ModelError, match="cpu_chain field 'P\\[0\\]\\[0\\]': expected a finite number, got nan"):
        CpuChain(P=((float("nan"), 0, 0), (0, 1, 0), (0, 0, 1)))
    with pytest.raises(ModelError, match="cpu_chain field 'P\\[1\\]': expected 3 probabilities, got 2"):
        CpuChain(P=((1, 0, 0), (0, 1), (0, 0, 1)))
    with pytest.raises(ModelError, match="group 'g' field 'count': must lie in \\[1, 1,000,000\\]"):
        MachineGroup("g", 10**7, (1.0,))
    with pytest.raises(ModelError, match="failures field 'mean_down': must be >= 1e-09 and <= 1e\\+15, got 1e\\+300"):
        Failures(rate=0.1, mean_down=1e300)
    with pytest.raises(ModelError, match="field 'groups': N x M = 40 x 1,000,000 = 40,000,000 rates exceed"):
        System(id="big", alpha=(1.0,) * 40, groups=(MachineGroup("g", 1_000_000, (1.0,) * 40),))


def test_schema_json_is_current_and_accepts_every_shipped_file():
    """``schema.json`` is what the pydantic models generate, and an independent JSON
    Schema validator (jsonschema) accepts every shipped scenario and rejects type errors."""
    import json
    import tomllib
    from importlib import resources

    import jsonschema

    from hetsched.scenarios import schema

    shipped = resources.files("hetsched.scenarios") / "schema.json"
    assert json.loads(shipped.read_text()) == json.loads(schema.json_schema_text()), "run `make schema`"
    v = jsonschema.Draft202012Validator(json.loads(shipped.read_text()))
    for sid in scenario_ids():
        data = tomllib.loads(_shipped(sid))
        assert not list(v.iter_errors(data)), sid
    for sid, old, new, _ in [CAMPAIGN[k] for k in (0, 1, 3, 6, 8, 10, 12)]:
        text = _shipped(sid)
        text = text + new if old is None else text.replace(old, new, 1)
        assert list(v.iter_errors(tomllib.loads(text))), (sid, new[:40])


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
