"""``hetsched simulate``: the command-line contract of DESIGN.md."""

import json

import pytest
from typer.testing import CliRunner

from hetsched.cli import app
from hetsched.sim import MODELS, Model, all_policies, model_for_policy, register_model

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
    with pytest.raises(ValueError):
        register_model(Model("dup", ("mct",), "Q", "x:y"))


def has_two_classes(system):
    return system.N == 2


def test_shared_policies_dispatch_by_system():
    from hetsched.scenarios import load

    m = Model("test-shared", ("test-only-policy",), "W", "x:y", shared_policies=("mct",),
              applies="test_sim_cli:has_two_classes")
    register_model(m)
    try:
        assert model_for_policy("mct", load("2.B")).name == "test-shared"
        assert model_for_policy("mct", load("2.C1")).name == "mapping"
        assert model_for_policy("mct").name == "mapping"
    finally:
        MODELS.pop("test-shared")
