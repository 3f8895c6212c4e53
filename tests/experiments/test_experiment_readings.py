"""The readings offered as experiment options (issue 26): each changes what it should and nothing else.

Short runs only (a few replications of short horizons, a few hundred jobs); what the options
do to the papers' numbers is in ``docs/_parts/assumptions-papers.md`` and ``docs/muscle.md``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hetsched.experiments import RunOptions, get, parse_sets
from hetsched.errors import HetschedError


def _run(exp_id, tmp_path, *sets, seed=7):
    exp = get(exp_id)
    extra = parse_sets(exp, list(sets))
    return exp.run(RunOptions(quick=True, seed=seed, workers=1, outdir=tmp_path, progress=False, extra=extra))


# --------------------------------------------------------------------------- §4.3.1 loads (26.5, 26.6)
def test_thesis_4_3_1_loads_and_the_printed_error(tmp_path):
    from hetsched.lp import allocation_lp
    from hetsched.scenarios import load

    res = _run("thesis-4.3.1", tmp_path)
    lam1 = allocation_lp(load("4.A")).lam
    assert len(res.rows) == 9 and res.status == 0
    for r in res.rows:  # each scaled system's own LP agrees with lambda* homogeneity: load = a / (m lambda1)
        assert r["load"] == pytest.approx(r["alpha_scale"] / (r["mu_scale"] * lam1), rel=1e-9)
        assert r["load_closed_form"] == pytest.approx(r["load"], rel=1e-9)
    cell = {(r["alpha_scale"], r["mu_scale"]): r for r in res.rows}
    assert cell[1.2, 1.0]["load"] == pytest.approx(0.8923, abs=5e-5)  # printed right
    assert cell[1.2, 1.15]["load"] == pytest.approx(0.7759, abs=5e-5)  # the printed "lowest" is this cell
    low = cell[1.0, 1.15]
    assert low["load"] == pytest.approx(0.6466, abs=5e-5) and low["printed"] == 0.7759
    assert low["rel_error"] == pytest.approx((low["load"] - 0.7759) / 0.7759)
    assert min(r["load"] for r in res.rows) == low["load"]


# --------------------------------------------------------------------------- Table 2.1: k-bar and capacities (26.6)
def test_table_21_kbar_changes_only_the_kpb_rows_and_gives_its_capacity(tmp_path):
    from hetsched.experiments.thesis_ch2 import kpb_capacity
    from hetsched.scenarios import load

    base = _run("thesis-table-2.1", tmp_path / "a", "systems=2.H", "reps=2", "horizon=100")
    k4 = _run("thesis-table-2.1", tmp_path / "b", "systems=2.H", "reps=2", "horizon=100", "kbar=4")
    by = {r["heuristic"]: r for r in base.rows}
    by4 = {r["heuristic"]: r for r in k4.rows}
    for h in ("MCT", "LPAS"):  # same seed, same cells: identical
        assert {k: v for k, v in by[h].items() if k != "wall_seconds"} == \
            {k: v for k, v in by4[h].items() if k != "wall_seconds"}
    assert by["KPB"]["k"] == 5 and by4["KPB"]["k"] == 4
    s = load("2.H")
    assert by4["KPB"]["lambda_kpb"] == pytest.approx(0.9507, abs=1e-4)  # < 1: KPB with k=4 cannot be stable
    assert by["KPB"]["lambda_star"] == pytest.approx(1.0092, abs=1e-4)
    assert kpb_capacity(s, s.M) == pytest.approx(by["KPB"]["lambda_star"], rel=1e-9)  # all machines: the LP itself
    with pytest.raises(HetschedError, match="--set kbar: 9 exceeds the 7 machines"):
        _run("thesis-table-2.1", tmp_path / "c", "systems=2.H", "kbar=9")


# --------------------------------------------------------------------------- Table 3.11's hyperexponential (26.7)
@pytest.mark.parametrize("form, p", [("gamma", None), ("fixed-p", 0.1), ("fixed-p", 0.01)])
def test_h2_forms_change_the_third_moment_only(form, p):
    from hetsched.sim.core.variates import h2_phases, variate

    def moments(par):
        m, p1, a, b = par
        return (p1 * a + (1 - p1) * b, 2 * (p1 * a * a + (1 - p1) * b * b), 6 * (p1 * a ** 3 + (1 - p1) * b ** 3))

    mean = 4.0
    base = moments(variate("hyperexp", mean, scv=5.0).par)
    other = moments(variate("hyperexp", mean, scv=5.0, form=form, p=p or 0.1).par)
    assert other[0] == pytest.approx(mean) == pytest.approx(base[0])
    assert other[1] / other[0] ** 2 - 1 == pytest.approx(5.0) == pytest.approx(base[1] / base[0] ** 2 - 1)
    assert base[2] == pytest.approx(90 * mean ** 3)  # balanced means: E[X^3] = 90 m^3 at SCV 5
    assert abs(other[2] - base[2]) > 1.0
    if form == "gamma":  # the gamma's third moment m^3 (1 + c^2)(1 + 2 c^2)
        assert other[2] == pytest.approx(mean ** 3 * 6 * 11)
    p1, _, _ = h2_phases(5.0, form, p or 0.1)
    assert 0 < p1 < 1
    with pytest.raises(Exception, match="p must lie in"):
        h2_phases(5.0, "fixed-p", 0.4)


def test_table_311_h2_option_changes_only_the_cases_with_failures(tmp_path):
    sets = ("reps=2", "horizon=150", "cases=1,2", "dists=exp")
    bal = _run("thesis-table-3.11", tmp_path / "a", *sets)
    gam = _run("thesis-table-3.11", tmp_path / "b", *sets, "h2=gamma")
    key = lambda r: (r["case"], r["policy"])  # noqa: E731
    b, g = {key(r): r for r in bal.rows}, {key(r): r for r in gam.rows}
    assert b.keys() == g.keys()
    for k in b:
        if k[0] == 1:  # case 1 has no failures: the up/down law does not enter
            assert b[k] == g[k]
    assert any(b[k]["value"] != g[k]["value"] or b[k]["value_untrusted"] != g[k]["value_untrusted"]
               for k in b if k[0] == 2)
    assert gam.meta["h2_form"] == "gamma" and any("h2=gamma" in n for n in gam.notes)


# --------------------------------------------------------------------------- MUSCLE readings (26.4)
def test_muscle_level_rule_load_keeps_every_level_below_capacity(tmp_path):
    from hetsched.experiments.muscle import FIG2_LEVELS, level_load

    assert [round(level_load(L), 12) for L in FIG2_LEVELS] == [0.5, 0.6, 0.7, 0.8, 0.9]
    res = _run("muscle-fig2", tmp_path / "a", "n_jobs=80", "no_ga=true")
    assert {r["level"]: r["load"] for r in res.rows} == {L: pytest.approx(level_load(L)) for L in FIG2_LEVELS}
    assert all(r["offered"] < 1 and r["stable"] and r["MCP"] == r["value"] for r in res.rows)
    cal = _run("muscle-fig2", tmp_path / "b", "n_jobs=80", "no_ga=true", "level_rule=calibrated")
    assert [r["load"] for r in cal.rows] != [r["load"] for r in res.rows]
    over = [r for r in cal.rows if r["offered"] >= 1]
    assert all(not r["stable"] and r["MCP"] is None and r["value_untrusted"] > 0 for r in over)


def test_muscle_cp_pairing_changes_the_cp_not_the_schedule(tmp_path):
    from hetsched.muscle import CPWeights, comprehensive_performance

    lit = CPWeights(pairing="literal")
    assert list(lit.as_array()) == [1.0, 3.0, 4.0] and list(CPWeights().as_array()) == [3.0, 1.0, 4.0]
    assert comprehensive_performance(10.0, 20.0, 30.0, lit) == pytest.approx((1 * 10 + 3 * 20 + 4 * 30) / 8)
    sets = ("n_jobs=60", "no_ga=true", "load=0.7")
    a = _run("muscle-fig2-batch", tmp_path / "a", *sets)
    b = _run("muscle-fig2-batch", tmp_path / "b", *sets, "cp_pairing=literal")
    for ra, rb in zip(a.rows, b.rows):  # without the GA the schedules are the same; only CP is weighed differently
        for k in ("makespan", "idle", "over_deadline", "late_jobs", "queue", "jobs"):
            assert ra[k] == rb[k], k
    assert any(ra["MCP"] != rb["MCP"] for ra, rb in zip(a.rows, b.rows))


def test_muscle_ga_options_reach_the_ga(tmp_path):
    from hetsched.muscle import GAOptions, titan_improve

    rng = np.random.default_rng(5)
    n = 12
    pref = rng.integers(1, 4, n)
    args = (np.zeros(6), 0.0, np.arange(n), pref, rng.uniform(1, 9, n), rng.uniform(5, 25, n))
    runs = {kw: titan_improve(*args, options=GAOptions(max_gen=40, **dict(kw)), seed=2)
            for kw in ((), (("elitism", 0),), (("tournament", 1),), (("elitism", 3), ("tournament", 4)))}
    for r in runs.values():  # whatever the options: never worse than the seed, the trace never rises
        assert r.cp <= r.seed_cp + 1e-9 and r.checked
    assert len({tuple(r.trace) for r in runs.values()}) > 1  # the options change the search
    with pytest.raises(Exception, match="elitism"):
        GAOptions(pop_size=4, elitism=5)
    sets = ("n_jobs=60", "load=0.7", "max_gen=5")
    a = _run("muscle-fig2-batch", tmp_path / "a", *sets)
    b = _run("muscle-fig2-batch", tmp_path / "b", *sets, "tournament=1", "elitism=0")
    assert [r["jobs"] for r in a.rows] == [r["jobs"] for r in b.rows]
    assert [r["MCP"] for r in a.rows] != [r["MCP"] for r in b.rows]


def test_bad_reading_values_are_refused_by_name(tmp_path):
    for exp_id, item, match in (("muscle-fig2", "level_rule=x", "--set level_rule"),
                                ("muscle-fig2", "load_hi=1.5", "--set load_hi"),
                                ("thesis-table-3.11", "h2=x", "--set h2"),
                                ("muscle-fig3", "cp_pairing=eq", "--set cp_pairing")):
        with pytest.raises(HetschedError, match=match):
            parse_sets(get(exp_id), [item])


def test_reproduce_help_lists_every_experiment_id():
    from typer.testing import CliRunner

    from hetsched.cli import app
    from hetsched.experiments import registry

    r = CliRunner().invoke(app, ["reproduce", "--help"])
    text = " ".join(r.output.split())
    assert r.exit_code == 0 and "thesis-4.3.1" in text
    assert all(eid in text for eid in registry())
