"""Issue 23, budgets and arithmetic edges: runs that cannot fit are refused up front with the estimate,
long ones announce it; the API raises the project's errors with the CLI's messages."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from hetsched.cli import app
from hetsched.errors import HetschedError, ModelError
from hetsched.traces import records_frame, write_records


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line_refusal(r, *words):
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "internal error" not in r.output
    for w in words:
        assert w in r.stderr, r.stderr


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    p = tmp_path_factory.mktemp("rec") / "r.parquet"
    n = 12
    t = np.arange(n, dtype=float)
    write_records(records_frame(np.arange(n), np.zeros(n, int), t, t + 0.5, t + 1.0, np.arange(n) % 2), p)
    return p


@pytest.mark.parametrize("bins", ["1000000000", "9223372036854775808"])
def test_plot_bins_memory_bomb_refused(tmp_path, records, bins):
    _one_line_refusal(_cli("plot", "utilisation", records, "--bins", bins, "-o", tmp_path / "u.png"),
                      "--bins", "100,000")
    from hetsched.plot import MAX_BINS, utilisation

    with pytest.raises(ModelError, match="bins: expected an integer in 1..100,000"):
        utilisation(records, bins=MAX_BINS + 1)
    assert not (tmp_path / "u.png").exists()


def test_plot_window_of_infinite_span_refused(tmp_path, records):
    _one_line_refusal(_cli("plot", "gantt", records, "--window", "-1e308", "1e308", "-o", tmp_path / "g.png"),
                      "window", "finite span")
    from hetsched.plot import gantt

    with pytest.raises(ModelError, match="finite span"):
        gantt(records, window=(-1e308, 1e308))


def test_max_in_system_bomb_refused(tmp_path):
    r = _cli("reproduce", "thesis-fig-4.1", "--set", "max_in_system=1000000000", "--outdir", tmp_path)
    _one_line_refusal(r, "max_in_system", "10,000,000")
    from hetsched.sim.core.instability import MAX_IN_SYSTEM, check_bound, default_bound

    with pytest.raises(ModelError, match="max_in_system: 1,000,000,000 tasks need about 40.0 GB"):
        check_bound(10**9, 4)
    # the documented largest system (1,000,000 machines) gets a bounded task pool, not 40 GB per replication
    assert default_bound(10**6) == MAX_IN_SYSTEM and default_bound(30) == 30_000
    import hetsched

    with pytest.raises(HetschedError, match="max_in_system"):  # the API: the same refusal, the project's error
        hetsched.simulate("4.A", "lpas-dg", reps=1, horizon=1.0, max_in_system=10**9)


def test_mgst_real_time_budget_refused(tmp_path):
    r = _cli("reproduce", "mgst", "--set", "duration=1e6", "--outdir", tmp_path)
    _one_line_refusal(r, "wall-clock", "h")
    assert not (tmp_path / "mgst" / "results.json").exists()


def test_policy_iteration_announces_its_estimate():
    """``--delta 300 --method policy-iteration`` ran 240 s+ with no estimate; the estimate comes before the
    model is built (here an overload refusal then stops the run at once)."""
    r = _cli("mdp", "coalloc", "--rho", "1.5", "--delta", "300", "--method", "policy-iteration")
    assert "estimate: --method policy-iteration at --delta 300 (1,085,406 states)" in r.stderr
    assert r.exit_code == 2


def test_muscle_announces_its_estimate(capsys):
    from hetsched.muscle import cli as mcli

    mcli._estimate(5_000_000, no_ga=False)
    err = capsys.readouterr().err
    assert "estimate: 5,000,000 jobs take about 42 min and 1,200 MB" in err
    mcli._estimate(1000, no_ga=False)
    assert capsys.readouterr().err == ""
