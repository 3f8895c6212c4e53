"""``hetsched simulate``: the command-line contract of DESIGN.md."""

import importlib
import json

import pytest
from typer.testing import CliRunner

from hetsched.cli import app
from hetsched.sim import MODELS, Model, model_table, all_policies, model_for_policy

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_json_keys():
    r = invoke("simulate", "2.B", "--policy", "LPAS", "--reps", "3", "--horizon", "300", "--workers", "1", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    for key in ("policy", "metric", "mean", "ci", "per_class", "unstable", "events", "wall_seconds"):
        assert key in out
    assert out["policy"] == "lpas" and out["metric"] == "Q" and out["unstable"] is False
    assert out["ci"][0] <= out["mean"] <= out["ci"][1]
    assert len(out["per_class"]) == 2 and out["events"] > 0


def test_unstable_has_no_mean():
    r = invoke("simulate", "2.A", "--policy", "kpb", "--k", "1", "--reps", "2", "--horizon", "2000",
               "--workers", "1", "--json")
    out = json.loads(r.output)
    assert out["unstable"] is True and out["mean"] is None


def test_text_output_and_model_options():
    r = invoke("simulate", "2.C1", "--policy", "kpb", "--k", "15", "--reps", "2", "--horizon", "100",
               "--dist", "det", "--tie", "random", "--workers", "1")
    assert r.exit_code == 0, r.output
    assert "Qbar" in r.output and "95% CI" in r.output


@pytest.mark.parametrize("args, match", [
    (("--policy", "nope"), "unknown policy"),
    (("--policy", "kpb"), "needs --k"),
    (("--policy", "mct", "--dist", "pareto"), "dist"),
    (("--policy", "mct", "--backend", "mpi"), "backend"),
    (("--policy", "mct", "--backend", "dask"), "scheduler"),
])
def test_errors_are_one_line_exit_2(args, match):
    r = runner.invoke(app, ["simulate", "2.B", "--reps", "2", "--horizon", "10", "--workers", "1", *args])
    assert r.exit_code == 2
    assert match in r.output and "Traceback" not in r.output


def test_model_registry():
    assert model_for_policy("LPAS-2K").name == "mapping"
    assert set(MODELS["mapping"].policies) <= set(all_policies())
    # one literal table: every entry and warm-up names a function that exists
    for m in MODELS.values():
        for path in (m.entry, m.applies, m.warm):
            if path:
                mod, _, fn = path.partition(":")
                assert callable(getattr(importlib.import_module(mod), fn)), path
    assert {"mapping", "desktop-grid", "decentral", "coalloc"} <= set(MODELS)
    with pytest.raises(ValueError, match="already belong"):
        model_table(MODELS["mapping"], Model("dup", ("mct",), "Q", "x:y"))


def test_shared_policies_dispatch_by_system():
    from hetsched.scenarios import load

    assert model_for_policy("mct", load("4.A")).name == "decentral"  # per-machine arrival streams
    assert model_for_policy("mct", load("2.C1")).name == "mapping"
    assert model_for_policy("mct").name == "mapping"


def test_coalloc_policies_are_refused_on_a_scenario():
    r = runner.invoke(app, ["simulate", "2.B", "--policy", "local", "--reps", "2", "--horizon", "10"])
    assert r.exit_code == 2 and "co" in r.output and "not on a scenario" in r.output


# ---------------------------------------------------------------- every option has its effect (issue 14)
def run_json(scenario, *args, policy="lpas", reps=3, horizon=300, workers=1):
    r = invoke("simulate", scenario, "--policy", policy, "--reps", str(reps), "--horizon", str(horizon),
               "--workers", str(workers), "--json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def numbers(out):
    """What a run computes, without its timings."""
    return out["mean"], out["ci"], out["events"], [c["mean"] for c in out["per_class"]]


def test_seed_changes_numbers_and_the_same_seed_repeats_them():
    a, b, c = run_json("2.B", "--seed", "1"), run_json("2.B", "--seed", "1"), run_json("2.B", "--seed", "2")
    assert a["seed"] == 1 and c["seed"] == 2
    assert numbers(a) == numbers(b)
    assert a["mean"] != c["mean"] and a["events"] != c["events"]


def test_reps_is_the_number_of_replications():
    two, five = run_json("2.B", reps=2), run_json("2.B", reps=5)
    assert two["reps"] == 2 and five["reps"] == 5
    text = invoke("simulate", "2.B", "--policy", "lpas", "--reps", "2", "--horizon", "300", "--workers", "1")
    assert text.exit_code == 0 and "2 replications x 300.0 time units" in text.output
    assert five["events"] == pytest.approx(2.5 * two["events"], rel=0.1)  # 5 runs of the same length
    assert five["mean"] != two["mean"]


def test_horizon_scales_the_run():
    short, long_ = run_json("2.B", horizon=200), run_json("2.B", horizon=800)
    assert short["horizon"] == 200 and long_["horizon"] == 800
    # events are proportional to simulated time (Poisson arrivals, 2 events per task)
    assert long_["events"] == pytest.approx(4 * short["events"], rel=0.1)


def test_warmup_deletes_statistics_not_events():
    a, b = run_json("2.B"), run_json("2.B", "--warmup", "100")
    assert a["warmup"] == 0 and b["warmup"] == 100
    assert a["events"] == b["events"]  # the same sample paths ...
    assert a["mean"] != b["mean"]  # ... averaged over another window


def test_tie_rule_changes_mct_on_identical_machines():
    # 2.C1 has groups of identical machines: the tie rule decides where ties go
    lo, hi = run_json("2.C1", "--tie", "lowest", policy="mct"), run_json("2.C1", "--tie", "highest", policy="mct")
    assert lo["options"]["tie"] == "lowest" and hi["options"]["tie"] == "highest"
    assert lo["mean"] != hi["mean"]


def test_dist_changes_the_execution_times():
    exp, det = run_json("2.B", horizon=2000), run_json("2.B", "--dist", "det", horizon=2000)
    assert exp["options"]["dist"] == "exp" and det["options"]["dist"] == "det"
    assert det["mean"] < exp["mean"]  # P-K: deterministic service halves the queueing term


def test_k_is_the_number_of_machines_contacted():
    for k in (12, 20):
        out = run_json("2.C1", "--k", str(k), policy="kpb", reps=2, horizon=200)
        assert out["options"]["k"] == k and out["contacted"] == k and out["contacted_formula"] == k


def test_c_relaxes_guided_lpas_condition_iii():
    tight = run_json("2.B", "--c", "1", policy="guided-lpas")
    loose = run_json("2.B", "--c", "1e6", policy="guided-lpas")
    assert tight["binds"] > 0 and loose["binds"] == 0
    assert tight["mean"] != loose["mean"]


def test_arrivals_and_case_select_the_scenario_variant():
    base = run_json("3.A", policy="gcmu", reps=2, horizon=200)
    a2 = run_json("3.A", "--arrivals", "alpha2", policy="gcmu", reps=2, horizon=200)
    c3 = run_json("3.A", "--case", "3", policy="gcmu", reps=2, horizon=200)
    assert base["metric"] == "W"
    assert a2["events"] != base["events"] and a2["mean"] != base["mean"]
    assert c3["avail_events"] != base["avail_events"] and c3["mean"] != base["mean"]


def test_workers_do_not_change_numbers_on_the_command_line():
    one, two = run_json("2.B", reps=4, workers=1), run_json("2.B", reps=4, workers=2)
    assert numbers(one) == numbers(two)


def test_json_flag_switches_the_output_format():
    text = invoke("simulate", "2.B", "--policy", "lpas", "--reps", "3", "--horizon", "300", "--workers", "1")
    out = run_json("2.B")
    assert text.exit_code == 0
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.output)
    assert f"Qbar (time-average number in system): {out['mean']:.3f}" in text.output  # the same run, as text
    assert f"{out['events']:,} events" in text.output


def test_records_writes_one_row_per_finished_task(tmp_path):
    import pandas as pd

    path = tmp_path / "rec.parquet"
    out = run_json("2.B", "--records", str(path), reps=2, horizon=100)
    rec = pd.read_parquet(path)
    assert sorted(rec["rep"].unique()) == [0, 1]
    # every arrival and every completion is one event: finished tasks have both, unfinished only the first
    assert out["events"] == 2 * len(rec) + out["records_unfinished"]
    assert (rec["arrival"] <= rec["start"]).all() and (rec["start"] < rec["end"]).all()
    assert (rec["end"] <= 100).all()
    assert "records" not in run_json("2.B", reps=2, horizon=100)  # no --records, no file
