"""Trace replay through the compiled mapping kernel, and per-task records (issue 13).

Truths: the independent pure-Python replay ``tests/reference_replay.py``
(exact, for MET/MCT with lowest-index ties); the Poisson simulation of the
same system and the M/M/1 closed form (a trace of Poisson arrivals with
exponential sizes); the records certificate ``check_records`` (every task
once, ``end >= start >= arrival``, no overlap per machine, Little's law with
the kernel's own time-average accumulator).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hetsched as hs
from hetsched.errors import ModelError
from hetsched.system import System, groups_from_matrix
from hetsched.traces import TraceWorkload, check_records, read_records, read_swf, workload

from helpers import SHARED_DIR
from reference_replay import replay  # tests/reference_replay.py

TRACES = SHARED_DIR / "traces"
GAIA = TRACES / "UniLu-Gaia-2014-2.swf.gz"
needs_logs = pytest.mark.skipif(not GAIA.is_file(), reason="../shared/traces is not next to this repository")


@pytest.fixture(scope="module")
def c1():
    return hs.load("2.C1")


@pytest.fixture(scope="module")
def gaia_head():
    if not GAIA.is_file():
        pytest.skip("../shared/traces is not next to this repository")
    return read_swf(GAIA).iloc[:3000]


def _synthetic(arrival, size, klass, system) -> TraceWorkload:
    """A TraceWorkload from arrays (LP of its work arrival vector, as :func:`workload` computes it)."""
    from hetsched.lp import allocation_lp

    N = system.N
    alpha = np.bincount(klass, weights=size, minlength=N) / (arrival[-1] - arrival[0])
    lp = allocation_lp(system.with_(alpha=tuple(alpha)))
    return TraceWorkload(arrival=arrival, size=size, klass=klass, job_id=np.arange(len(arrival)), rule="given",
                         rule_detail="", alpha=alpha, lp_lambda=float(lp.lam), load=1 / float(lp.lam),
                         time_scale=1.0, target_load=None, dropped=0, lp=lp)


def _write_swf(df: pd.DataFrame, path: Path) -> Path:
    with open(path, "w") as f:
        f.write("; Version: 2.2\n")
        np.savetxt(f, df.to_numpy(dtype=float), fmt=["%d", "%.6f", "%.6f", "%.6f"] + ["%d"] * 14)
    return path


# ----------------------------------------------------------------------------- exactness
@needs_logs
@pytest.mark.parametrize("policy", ["met", "mct"])
def test_compiled_replay_equals_reference(c1, gaia_head, policy):
    """Every start, end and machine of 3,000 Gaia jobs on 2.C1 at load 0.8 equals the pure-Python replay."""
    w = workload(gaia_head, c1, load=0.8)
    res = hs.simulate(c1, policy, trace=w, reps=1, tie="lowest", records=True, workers=1)
    rec = res.records.sort_values("task").reset_index(drop=True)
    ref, L = replay(w.arrival, w.size, w.klass, c1.mu, policy)
    for col in ("task", "class", "arrival", "start", "end", "machine"):
        np.testing.assert_array_equal(rec[col].to_numpy(), ref[col].to_numpy(), err_msg=col)
    assert res.metric == "W" and res.jobs == len(w) == 3000
    # the replay's own mean (reported whatever the status: on this prefix the backlog grows through the log)
    assert res.W_log == pytest.approx(float((ref["end"] - ref["arrival"]).mean()), rel=1e-12)
    assert res.load == pytest.approx(0.8, rel=1e-9) and res.lp_lambda == pytest.approx(1.25, rel=1e-9)
    # Little's law: the kernel's own time average against the records
    chk = check_records(rec.drop(columns="rep"), tasks=3000, L=res.replications[0]["Q"], little_rtol=1e-9)
    assert chk.ok, chk.violations
    assert res.replications[0]["Q"] == pytest.approx(L, rel=1e-9)


@needs_logs
def test_same_seed_same_records_and_windows(c1, gaia_head):
    """A randomised policy (LPAS-2/k, random ties): same trace + seed -> identical records; another
    seed -> other records; independent windows are replications covering every job once."""
    w = workload(gaia_head, c1, load=0.9)
    kw = dict(trace=w, reps=3, records=True, workers=1, windows="independent")
    a = hs.simulate(c1, "lpas-2k", seed=7, **kw)
    b = hs.simulate(c1, "lpas-2k", seed=7, **kw)
    c = hs.simulate(c1, "lpas-2k", seed=8, **kw)
    pd.testing.assert_frame_equal(a.records, b.records)
    assert not a.records["machine"].equals(c.records["machine"])
    assert a.reps == 3 and a.jobs == 3000
    assert sorted(a.records["task"]) == list(range(3000))
    for r, g in a.records.groupby("rep"):
        chk = check_records(g.drop(columns="rep"), L=a.replications[r]["Q"], little_rtol=1e-9)
        assert chk.ok, (r, chk.violations)
    # plots of records with several replications draw one
    from hetsched.plot import gantt, utilisation

    fig = gantt(a.records, rep=2, max_tasks=5000)
    assert fig.hetsched_bars == (a.records["rep"] == 2).sum() == 1000
    fig2 = utilisation(a.records, rep=1, machines=30)
    assert fig2.hetsched_series["mean_in_system"] == pytest.approx(a.replications[1]["Q"], rel=0.05)
    # the windows' means are the replications of the CI
    means = [float((g["end"] - g["arrival"]).mean()) for _, g in a.records.groupby("rep")]
    assert a.mean == pytest.approx(np.mean(means), rel=1e-12)


@needs_logs
def test_batch_windows_are_one_replay_of_the_whole_log(c1, gaia_head):
    """Default windows: one replay of the whole log (records = the reps=1 replay), batch means over
    equal-count windows of its jobs (as many as the tests allow, at most the requested 20); the mean is
    the log's mean response time."""
    w = workload(gaia_head, c1, load=0.9)
    one = hs.simulate(c1, "lpas-2k", trace=w, reps=1, seed=7, records=True, workers=1)
    many = hs.simulate(c1, "lpas-2k", trace=w, reps=20, seed=7, records=True, workers=1)
    pd.testing.assert_frame_equal(one.records, many.records)
    resp = (one.records.sort_values("task")["end"] - one.records.sort_values("task")["arrival"]).to_numpy()
    k = many.windows
    assert k in (20, 14, 10) and many.reps == k and many.windows_requested == 20
    batches = [resp[p].mean() for p in np.array_split(np.arange(resp.size), k)]
    assert many.W_windows == pytest.approx(batches, rel=1e-12)
    assert many.W_log == pytest.approx(resp.mean(), rel=1e-12)
    assert many.status in (0, 1, 3)
    if many.status == 0:
        assert many.mean == pytest.approx(resp.mean(), rel=1e-12) and many.ci[0] < many.mean < many.ci[1]
    # one window is no interval: said so in the status, never a number with an infinite or negative CI
    assert one.status in (1, 3) and not np.isfinite(one.ci[0])
    assert check_records(one.records.drop(columns="rep"),
                         tasks=3000, L=one.replications[0]["Q"], little_rtol=1e-9).ok


# ----------------------------------------------------------------------------- Poisson traces
def test_poisson_trace_equals_poisson_simulation():
    """A trace of Poisson arrivals (rates alpha) with exponential sizes, replayed under MCT, gives the
    mean response time of the Poisson simulation of the same system within their confidence intervals."""
    sysm = System.from_arrays(alpha=[0.9, 0.6], mu=[[1.0, 2.0, 1.0], [2.0, 0.5, 1.0]])
    rng = np.random.default_rng(11)
    n = 150_000
    lam = sum(sysm.alpha)
    arrival = np.cumsum(rng.exponential(1 / lam, n))
    arrival -= arrival[0]
    klass = (rng.random(n) < sysm.alpha[1] / lam).astype(np.int64)
    size = rng.exponential(1.0, n)
    w = _synthetic(arrival, size, klass, sysm)
    tr = hs.simulate(sysm, "mct", trace=w, reps=10, tie="lowest", workers=1)
    horizon = arrival[-1] / 10
    po = hs.simulate(sysm, "mct", reps=10, horizon=horizon, tie="lowest", seed=3, workers=1)
    Wpo = [r["W"] for r in po.replications]
    from hetsched.stats import t_interval

    e = t_interval(Wpo)
    h_tr = (tr.ci[1] - tr.ci[0]) / 2
    h_po = (e.high - e.low) / 2
    assert h_tr < 0.05 * tr.mean and h_po < 0.05 * e.mean, (tr.ci, e)
    assert abs(tr.mean - e.mean) <= h_tr + h_po, (tr.mean, tr.ci, e.mean, (e.low, e.high))


def test_poisson_trace_on_one_machine_is_mm1():
    """Closed form: one machine, load 0.7 -> W = 1 / (1 - 0.7) (sizes exp(1), rate 1)."""
    sysm = System.from_arrays(alpha=[0.7], mu=[[1.0]])
    rng = np.random.default_rng(5)
    n = 200_000
    arrival = np.cumsum(rng.exponential(1 / 0.7, n))
    w = _synthetic(arrival - arrival[0], rng.exponential(1.0, n), np.zeros(n, np.int64), sysm)
    res = hs.simulate(sysm, "mct", trace=w, reps=20, workers=1)
    assert (res.ci[1] - res.ci[0]) / 2 < 0.06 * res.mean
    assert res.ci[0] <= 1 / 0.3 <= res.ci[1], res.ci


# ----------------------------------------------------------------------------- records of Poisson runs
def test_poisson_run_records_pass_the_certificate():
    """Records of a Poisson run: every finished task once, order of times, no overlap per machine, and
    Little's law against the kernel's accumulator (edge effects of unfinished tasks: within 2 %)."""
    sysm = System.from_arrays(alpha=[1.0, 0.8], mu=[[2.0, 1.0, 1.0], [1.0, 1.0, 2.0]])
    res = hs.simulate(sysm, "lpas", reps=2, horizon=4000.0, seed=1, records=True, workers=1)
    plain = hs.simulate(sysm, "lpas", reps=2, horizon=4000.0, seed=1, workers=1)
    assert res.mean == plain.mean  # records change nothing
    rec = res.records
    assert set(rec["rep"]) == {0, 1}
    for r, g in rec.groupby("rep"):
        run = res.replications[r]
        assert len(g) == run["completions"] and run["completions"] + 0 <= run["arrivals"]
        chk = check_records(g.drop(columns="rep"), L=run["Q"], little_rtol=0.02)
        assert chk.ok, chk.violations
        assert chk.W == pytest.approx(run["W"], rel=0.02)


# ----------------------------------------------------------------------------- errors
def test_trace_errors_are_clear(c1, gaia_head):
    w = workload(gaia_head, c1, load=0.8)
    with pytest.raises(ModelError, match="windows"):
        hs.simulate(c1, "mct", trace=w, reps=0, workers=1)
    with pytest.raises(ModelError, match="load applies to a trace"):
        hs.simulate(c1, "mct", load=0.8, reps=1, workers=1)
    with pytest.raises(ModelError, match="classes"):
        hs.simulate(hs.load("2.A"), "mct", trace=w, reps=1, workers=1)


# ----------------------------------------------------------------------------- command line
@needs_logs
def test_cli_trace_records_and_plots(tmp_path, gaia_head):
    from typer.testing import CliRunner

    from hetsched.cli import app

    swf = _write_swf(gaia_head.iloc[:1500], tmp_path / "gaia-head.swf")
    out = tmp_path / "rec.parquet"
    r = CliRunner().invoke(app, ["simulate", "2.C1", "--policy", "lpas", "--trace", str(swf), "--load", "0.8",
                                 "--reps", "3", "--records", str(out), "--json", "--workers", "1"])
    assert r.exit_code == 0, r.output
    js = json.loads(r.output)
    assert js["metric"] == "W" and js["jobs"] == 1500 and js["load"] == pytest.approx(0.8)
    assert js["lp_lambda"] == pytest.approx(1.25) and js["W_log"] > 0
    # 3 windows are too few for an interval: the status says so (or the replay is unstable), no CI printed
    assert js["status"] in (1, 3) and js["ci"] == [None, None] and not js["success"]
    assert js["jobs"] + sum(js["dropped"].values()) == js["jobs_in_log"] == 1500
    rec = read_records(out)
    assert len(rec) == 1500 and rec.attrs["meta"]["policy"] == "lpas" and js["windows"] == 3
    assert check_records(rec.drop(columns="rep"), tasks=1500).ok
    # without --load: the LP's verdict for the trace's own time axis is printed
    r = CliRunner().invoke(app, ["simulate", "2.C1", "--policy", "mct", "--trace", str(swf), "--reps", "2",
                                 "--workers", "1", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "allocation LP for the trace's class mix" in r.output and "W (mean completion time)" in r.output
    for kind in ("gantt", "utilisation"):
        png = tmp_path / f"{kind}.png"
        r = CliRunner().invoke(app, ["plot", kind, str(out), "-o", str(png), "--rep", "0"])
        assert r.exit_code == 0, r.output
        assert png.stat().st_size > 1000
    r = CliRunner().invoke(app, ["plot", "gantt", str(out), "--rep", "7"])
    assert r.exit_code == 2 and "replication 7" in r.output
    r = CliRunner().invoke(app, ["simulate", "2.C1", "--policy", "mct", "--load", "0.8"])
    assert r.exit_code == 2 and "--trace" in r.output


# ----------------------------------------------------------------------------- experiment
@needs_logs
def test_reproduce_traces_quick(tmp_path):
    """``hetsched reproduce traces --quick``: every log x load x policy and a plot; every job replayed or
    dropped with its reason; a CI only where the windows support one, never below 0, and the reason where
    not; paired differences are the differences of the two means (same jobs, same windows); MET (which
    ignores the queues) is unstable or worse than MCT."""
    from typer.testing import CliRunner

    from hetsched.cli import app

    r = CliRunner().invoke(app, ["reproduce", "traces", "--quick", "--json", "--workers", "1",
                                 "--outdir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    js = json.loads(r.output)
    rows = [r for r in js["rows"] if not r.get("paired")]
    paired = [r for r in js["rows"] if r.get("paired")]
    assert len(rows) == 3 * 3 * 6 and {r["log"] for r in rows} == {"NASA", "Gaia", "LCG"}
    assert len(paired) == 3 * 3 * 5
    assert (tmp_path / "traces" / "traces.png").stat().st_size > 1000
    for row in rows + paired:
        if row["ci_low"] is not None:
            assert row["ci_low"] < row["W"] < row["ci_high"] and row["status"] == 0
            assert row.get("paired") or row["ci_low"] >= 0
        elif row["stable"]:
            assert row["status"] == 3 and row["ci_note"].startswith("no CI")
        else:
            assert row["W"] is None and row["status"] == 1
    for row in rows:
        assert 2500 < row["jobs"] <= 3000 and row["jobs"] + sum(row["dropped"].values()) == row["jobs_in_log"]
        assert row["windows_requested"] == 10 and row["windows"] <= 10
    for d in paired:  # the paired difference is the difference of the two means (same jobs)
        a = next(r for r in rows if r["log"] == d["log"] and r["load"] == d["load"] and r["policy"] == "LPAS")
        b = next(r for r in rows if r["log"] == d["log"] and r["load"] == d["load"]
                 and r["policy"] == d["policy"].removeprefix("LPAS - "))
        if a["stable"] and b["stable"]:
            assert d["W"] == pytest.approx(a["W"] - b["W"], rel=1e-9, abs=1e-12)
        else:
            assert d["W"] is None
    for log in ("NASA", "Gaia", "LCG"):
        for rho in (0.7, 0.8, 0.9):
            cell = {row["policy"]: row for row in rows if row["log"] == log and row["load"] == rho}
            assert len({row["jobs"] for row in rows if row["log"] == log}) == 1  # same jobs for every policy
            assert not cell["MET"]["stable"] or cell["MCT"]["W"] < cell["MET"]["W"], (log, rho)


# ----------------------------------------------------------------------------- user-written policies
@hs.mapping_policy
def trace_mct(i, mu, n, work, u):
    """MCT written by a user: least work[j] + 1/mu[i, j], lowest index on ties."""
    best, best_v = -1, 0.0
    for j in range(mu.shape[1]):
        if mu[i, j] > 0.0:
            v = work[j] + 1.0 / mu[i, j]
            if best < 0 or v < best_v:
                best, best_v = j, v
    return best


@pytest.mark.slow  # compiles a kernel for the user's policy (not cached on disk)
@needs_logs
def test_user_policy_replays_a_trace(c1, gaia_head):
    """A user-written MCT replays the trace exactly as the pure-Python reference MCT does."""
    w = workload(gaia_head, c1, load=0.8)
    res = hs.simulate(c1, trace_mct, trace=w, reps=1, records=True, workers=1)
    rec = res.records.sort_values("task").reset_index(drop=True)
    ref, _ = replay(w.arrival, w.size, w.klass, c1.mu, "mct")
    for col in ("start", "end", "machine"):
        np.testing.assert_array_equal(rec[col].to_numpy(), ref[col].to_numpy(), err_msg=col)
    assert res.policy == "trace_mct" and res.metric == "W"
