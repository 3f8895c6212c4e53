"""Whole experiments as one batch: identical to per-cell runs, locally and on a Dask cluster.

The independent truth for a batched experiment is the model's own ``simulate``
run cell by cell in-process (the path every experiment used before batches):
each row must carry exactly its numbers. A Dask ``LocalCluster`` (started
here, reached at its ``tcp://`` address) must give the same rows again.
Backend options an experiment cannot use are refused in one line, exit 2.
"""

from __future__ import annotations

import time

import pytest

from hetsched import experiments as E
from hetsched.scenarios import load

distributed = pytest.importorskip("distributed")

NUMBERS = {  # row columns that depend on the seed only (timings left out)
    "thesis-table-2.1": ("system", "heuristic", "k", "Qbar", "value", "ci_low", "ci_high", "stable", "value_untrusted",
                         "Ns", "events", "reps"),
    "thesis-table-3.3": ("arrivals", "case", "policy", "W", "value", "value_untrusted", "acc", "Delta", "W_1", "W_2",
                         "stable", "reps"),
    "thesis-table-4.1": ("policy", "k", "W", "accuracy", "W1", "W2", "X", "Delta", "stable", "events"),
    "coalloc-fig5": ("rho", "policy", "cost", "ci_low", "ci_high", "unstable", "L1", "L2", "reps"),
}

SETS = {  # --quick shapes, trimmed to seconds
    "thesis-table-2.1": {"systems": ["2.B", "2.D"]},
    "thesis-table-3.3": {"reps": 2, "horizon": 300.0},
    "thesis-table-4.1": {"ks": [2], "reps": 2, "horizon": 2_000.0},
    "coalloc-fig5": {"reps": 2, "completions": 4_000},
}


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as c:
        yield c


def _run(exp_id, tmp_path, **kw):
    opts = E.RunOptions(quick=True, outdir=tmp_path / exp_id / kw.get("backend", "local"), progress=False,
                        extra=dict(SETS[exp_id]), tracker=E.Tracker(enabled=False), **kw)
    res = E.run_experiment(E.get(exp_id), opts)
    return res, opts.tracker


def _numbers(exp_id, rows):
    return [{k: r.get(k) for k in NUMBERS[exp_id]} for r in rows]


def _same(a, b):
    """Equal, NaN equal to NaN (an undefined Delta is NaN in both)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def _assert_rows_equal(exp_id, a, b):
    na, nb = _numbers(exp_id, a), _numbers(exp_id, b)
    assert len(na) == len(nb) > 0
    for x, y in zip(na, nb):
        assert all(_same(x[k], y[k]) for k in x), (x, y)


# ----------------------------------------------------------------------------- per-cell truth
def _cells_21(extra):
    from hetsched.experiments.thesis_ch2 import KPB_KBAR
    from hetsched.sim.mapping import simulate

    out = []
    for sid in extra["systems"]:
        s = load(sid)
        for pol, name, k in (("mct", "MCT", None), ("kpb", "KPB", KPB_KBAR[sid]), ("lpas", "LPAS", None)):
            r = simulate(s, pol, reps=5, horizon=2_000.0, seed=2009, workers=1, k=k)
            v = None if r.unstable else r.mean  # the row convention, written out independently
            out.append({"system": sid, "heuristic": name, "k": k, "Qbar": v, "value": v,
                        "ci_low": None if r.unstable else r.ci[0], "ci_high": None if r.unstable else r.ci[1],
                        "stable": not r.unstable, "value_untrusted": r.mean_untrusted if r.unstable else None,
                        "Ns": r.contacted, "events": r.events, "reps": 5})
    return out


def test_table_21_batch_equals_per_cell_runs(tmp_path):
    res, tracker = _run("thesis-table-2.1", tmp_path, workers=2)
    _assert_rows_equal("thesis-table-2.1", res.rows, _cells_21(SETS["thesis-table-2.1"]))
    # the experiment-wide progress: one tick per cell (2 systems x 3 heuristics)
    assert tracker.n_total == tracker.n_done == 6 and len(tracker.rows) == 6


def test_table_41_batch_equals_per_cell_runs(tmp_path):
    from hetsched.sim.decentral import simulate

    res, tracker = _run("thesis-table-4.1", tmp_path, workers=2)
    s = load("4.A")
    for row, (pol, k) in zip(res.rows, (("mct", None), ("kpb", 2), ("lpas-dec", None))):
        r = simulate(s, pol, reps=2, horizon=2_000.0, seed=2009, k=k, workers=1)
        assert row["W"] == (None if r.unstable else r.mean) and row["X"] == r.messages and row["events"] == r.events
    assert tracker.n_total == tracker.n_done == 3


def test_table_33_batch_equals_per_cell_runs(tmp_path):
    from hetsched.sim.desktop import simulate

    res, tracker = _run("thesis-table-3.3", tmp_path, workers=2)
    by = {(r["arrivals"], r["case"], r["policy"]): r for r in res.rows}
    for arr, case in (("alpha1", 1), ("alpha2", 2)):
        s = load("3.B", arrivals=arr, case=case)
        for pol in ("gcmu", "lpas-dg"):
            r = simulate(s, pol, reps=2, horizon=300.0, seed=2009, workers=1)
            assert by[arr, case, r.policy]["W"] == r.mean
    assert tracker.n_total == tracker.n_done == 12  # 4 configurations x 3 policies


def test_coalloc_batch_equals_per_cell_run(tmp_path):
    from hetsched.experiments.coalloc import FIGS, POLICY_NAMES, _plan_point, _point, _settings
    from hetsched.runner import Batch

    res, tracker = _run("coalloc-fig5", tmp_path, workers=2)
    fig = FIGS["coalloc-fig5"]
    x0 = fig["values"][0]
    opts = E.RunOptions(quick=True, extra=dict(SETS["coalloc-fig5"]))
    point = _plan_point(_point(fig, x0), _settings(opts), opts, 2009)
    for name in POLICY_NAMES.values():  # each policy of the first point alone, in-process
        b = Batch(workers=1)
        cell = b.add(point["plans"][name])
        b.run()
        row = next(r for r in res.rows if r[fig["x"]] == x0 and r["policy"] == name)
        r = cell.result
        assert row["cost"] == (None if r.unstable else r.mean) and row["L1"] == r.L1, name
    assert tracker.n_total == tracker.n_done == 3 * len(fig["values"])


# ----------------------------------------------------------------------------- Dask = local
@pytest.mark.parametrize("exp_id", ["thesis-table-2.1", "thesis-table-4.1", "thesis-table-3.3", "coalloc-fig5"])
def test_dask_cluster_gives_the_local_rows(exp_id, tmp_path, cluster):
    local, _ = _run(exp_id, tmp_path, workers=1)
    dask, tracker = _run(exp_id, tmp_path, backend="dask", scheduler=cluster.scheduler_address)
    _assert_rows_equal(exp_id, dask.rows, local.rows)
    assert tracker.n_done == tracker.n_total


def test_dask_without_scheduler_starts_a_local_cluster(tmp_path):
    """--backend dask alone: a LocalCluster of --workers processes for the run, same rows."""
    opts = dict(quick=True, progress=False, extra={"systems": ["2.B"], "reps": 3, "horizon": 500.0})
    exp = E.get("thesis-table-2.1")
    local = exp.run(E.RunOptions(workers=1, outdir=tmp_path / "l", **opts))
    dask = E.run_experiment(exp, E.RunOptions(workers=2, backend="dask", outdir=tmp_path / "d", **opts))
    assert len(dask.rows) == 3
    _assert_rows_equal("thesis-table-2.1", dask.rows, local.rows)


# ----------------------------------------------------------------------------- options refused or honoured
def _cli(args):
    from typer.testing import CliRunner

    from hetsched.cli import app

    t0 = time.perf_counter()
    r = CliRunner().invoke(app, args)
    return r, time.perf_counter() - t0


@pytest.mark.parametrize("exp_id", ["muscle-fig2", "muscle-swf", "gang-srn", "mgst", "thesis-table-2.1",
                                    "coalloc-fig5"])
def test_unreachable_scheduler_exits_2_at_once(exp_id, tmp_path):
    r, dt = _cli(["reproduce", exp_id, "--quick", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9",
                  "--outdir", str(tmp_path)])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.output
    assert dt < 10.0
    assert not (tmp_path / exp_id).exists()  # refused before anything was written


def test_gang_srn_refuses_dask_even_without_scheduler(tmp_path):
    r, _ = _cli(["reproduce", "gang-srn", "--quick", "--backend", "dask", "--outdir", str(tmp_path)])
    assert r.exit_code == 2 and "does not apply to gang-srn" in r.output


def test_scheduler_without_dask_backend_refused(tmp_path):
    r, _ = _cli(["reproduce", "muscle-fig2", "--quick", "--scheduler", "tcp://127.0.0.1:9", "--outdir",
                 str(tmp_path)])
    assert r.exit_code == 2 and "applies only with --backend dask" in r.output


def test_muscle_runs_on_the_cluster(tmp_path, cluster):
    """muscle-* honours --backend dask: its points run on the cluster, with the local numbers."""
    exp = E.get("muscle-fig2")
    opts = dict(quick=True, progress=False, extra={"n_jobs": 60, "no_ga": True})
    local = exp.run(E.RunOptions(workers=1, outdir=tmp_path / "l", **opts))
    dask = E.run_experiment(exp, E.RunOptions(backend="dask", scheduler=cluster.scheduler_address,
                                              outdir=tmp_path / "d", **opts))
    assert [(r["level"], r["policy"], r["MCP"], r["LBF"]) for r in dask.rows] == \
        [(r["level"], r["policy"], r["MCP"], r["LBF"]) for r in local.rows]
    assert "run_point" in cluster.scheduler.task_prefixes  # the points ran there (prefix of _run_point-...)
