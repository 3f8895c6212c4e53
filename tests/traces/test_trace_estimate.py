"""Sound statistics of trace replays (issue 22.2-22.3): the window estimate, every job accounted for,
HPC workload metrics, paired differences on the same windows.

Truths: ``scipy.stats.shapiro`` (another implementation of the normality test); the null distribution of
von Neumann's ratio on i.i.d. normal values; the coverage of the interval on series whose mean is known
(i.i.d. exponential, M/M/1 response times by Lindley's recursion: ``1 / (1 - rho)``); hand-computed
waiting times, bounded slowdowns and utilisation of a small replay; the shipped logs' own job counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hetsched as hs
from hetsched.errors import ModelError
from hetsched.traces import TraceWorkload, read_swf, workload
from hetsched.traces.estimate import (K_MIN, NO_CI, candidate_windows, effective_windows, paired_estimate,
                                      shapiro_wilk, von_neumann, window_estimate, window_means)
from helpers import SHARED_DIR

TRACES = SHARED_DIR / "traces"
NASA = TRACES / "NASA-iPSC-1993-3.1-cln.swf.gz"
LCG = TRACES / "LCG.swf.gz"
needs_logs = pytest.mark.skipif(not LCG.is_file(), reason="../shared/traces is not next to this repository")


def _mm1_response(n: int, rho: float, rng) -> np.ndarray:
    """Response times of an M/M/1 queue (service rate 1) from empty, by Lindley's recursion (vectorised:
    the waiting time is the running sum of S_k - A_{k+1} minus its running minimum)."""
    A = rng.exponential(1 / rho, n)
    S = rng.exponential(1.0, n)
    X = np.concatenate([[0.0], np.cumsum(S[:-1] - A[1:])])
    return X - np.minimum.accumulate(np.minimum(X, 0.0)) + S


# ----------------------------------------------------------------------------- the tests inside the estimator
@pytest.mark.parametrize("n", [4, 5, 7, 11, 12, 20, 30, 64, 300])
def test_shapiro_wilk_equals_scipy(n):
    from scipy import stats

    rng = np.random.default_rng(n)
    for x in (rng.normal(size=n), rng.exponential(size=n), rng.uniform(size=n), rng.lognormal(0, 2, n)):
        W, p = shapiro_wilk(x)
        ref = stats.shapiro(x)
        assert W == pytest.approx(ref.statistic, abs=2e-6) and p == pytest.approx(ref.pvalue, abs=2e-5), n


def test_von_neumann_statistic_and_its_level():
    x = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    ss = np.sum((x - x.mean()) ** 2)
    C, _ = von_neumann(x)
    assert C == pytest.approx(1 - np.sum(np.diff(x) ** 2) / (2 * ss))
    assert von_neumann(np.ones(10)) == (0.0, 1.0)
    rng = np.random.default_rng(3)
    # i.i.d. normal: rejected at level 0.10 about 10% of the time; AR(1) with phi = 0.5 nearly always
    iid = np.mean([von_neumann(rng.normal(size=30))[1] < 0.10 for _ in range(3000)])
    assert 0.07 < iid < 0.13, iid

    def ar1(phi, k):
        e = rng.normal(size=k)
        for i in range(1, k):
            e[i] += phi * e[i - 1]
        return e

    assert np.mean([von_neumann(ar1(0.5, 30))[1] < 0.10 for _ in range(500)]) > 0.7


def test_candidate_windows_and_effective_windows():
    assert candidate_windows(30) == [30, 21, 15, 10]
    assert candidate_windows(10) == [10] and candidate_windows(9) == []
    assert candidate_windows(100)[0] == 100 and candidate_windows(100)[-1] == K_MIN
    assert effective_windows([2.0] * 12) == pytest.approx(12.0)
    assert effective_windows([0.0] * 9 + [5.0]) == pytest.approx(1.0)
    y = np.arange(10.0)
    np.testing.assert_allclose(window_means(y, 3), [np.mean(p) for p in np.array_split(y, 3)])


# ----------------------------------------------------------------------------- coverage (the truth: known means)
@pytest.mark.parametrize("kind", ["iid", "mm1"])
def test_coverage_on_series_with_a_known_mean(kind):
    """Over 200 series whose mean is known, the reported 95% intervals cover it 90-99% of the time, and an
    interval is reported for most series (i.i.d. exponential; M/M/1 at load 0.7 from empty, 20,000 jobs)."""
    rng = np.random.default_rng(2009)
    truth = 1.0 if kind == "iid" else 1 / (1 - 0.7)
    covered = given = 0
    R = 200
    for _ in range(R):
        y = rng.exponential(1.0, 20_000) if kind == "iid" else _mm1_response(20_000, 0.7, rng)
        e = window_estimate(y, 30)
        assert e.mean == pytest.approx(y.mean())
        if e.status == 0:
            given += 1
            covered += e.low <= truth <= e.high
            assert e.low >= 0 and e.windows in (30, 21, 15, 10)
    assert given >= 0.85 * R, given
    assert 0.90 <= covered / given <= 0.99, (covered, given)


def test_a_slow_cycle_gets_no_interval():
    """A log whose level follows one slow cycle over its span (a daily pattern, say) has correlated windows
    at every window count from 30 down to 10: no interval is reported, and the message says so."""
    rng = np.random.default_rng(5)
    t = np.arange(20_000) / 20_000
    for _ in range(40):
        y = 100 + 20 * np.sin(2 * np.pi * t + rng.uniform(0, 2 * np.pi)) + rng.exponential(10.0, t.size)
        est = window_estimate(y, 30)
        assert est.status == NO_CI and "correlated" in est.message, est.message
        assert [r["windows"] for r in est.tried] == [30, 21, 15, 10]


def test_one_dominating_window_gets_no_interval_and_none_is_negative():
    rng = np.random.default_rng(8)
    y = rng.exponential(1.0, 10_000)
    y[6000:7000] *= 100.0  # one window of ten holds most of the total
    e = window_estimate(y, 10)
    assert e.status == NO_CI and not e.success and np.isnan(e.low) and np.isnan(e.high)
    assert e.mean == pytest.approx(y.mean()) and e.message.startswith("no CI")
    assert "window 7 of 10 dominates" in e.message or "not normal" in e.message
    # heavy tails: an interval is either not reported or never below 0
    for seed in range(100):
        z = np.random.default_rng(seed).lognormal(0.0, 3.0, 2_000)
        est = window_estimate(z, 20)
        assert est.status == NO_CI or est.low >= 0.0
    assert window_estimate(y, 5).status == NO_CI  # fewer than 10 windows: said so
    assert "too few" in window_estimate(y, 5).message


def test_paired_estimate_cuts_both_at_the_same_windows():
    rng = np.random.default_rng(1)
    a = rng.exponential(2.0, 9_001)
    b = a * 0.9 + rng.exponential(0.1, 9_001)
    ea, eb = window_estimate(a, 20), window_estimate(b, 20)
    d = paired_estimate(ea, eb)
    assert d.mean == pytest.approx(a.mean() - b.mean())
    np.testing.assert_allclose(d.window_means, window_means(a, d.windows) - window_means(b, d.windows))
    if d.status == 0:
        assert d.low < d.mean < d.high
    with pytest.raises(ModelError, match="same jobs"):
        paired_estimate(ea, window_estimate(b[:-1], 20))
    with pytest.raises(ModelError, match="keep their per-job values"):
        paired_estimate(ea, window_estimate(b, 20, keep_values=False))
    for bad in (0, 2.5, True):
        with pytest.raises(ModelError, match="windows"):
            window_estimate(a, bad)
    with pytest.raises(ModelError, match="finite"):
        window_estimate([1.0, np.nan, 2.0], 10)


# ----------------------------------------------------------------------------- replays end to end
def _synthetic(arrival, size, klass, system, time_scale=1.0) -> TraceWorkload:
    from hetsched.lp import allocation_lp

    alpha = np.bincount(klass, weights=size, minlength=system.N) / (arrival[-1] - arrival[0])
    lp = allocation_lp(system.with_(alpha=tuple(alpha)))
    return TraceWorkload(arrival=arrival, size=size, klass=klass, job_id=np.arange(1, len(arrival) + 1),
                         rule="given", rule_detail="", alpha=alpha, lp_lambda=float(lp.lam), load=1 / float(lp.lam),
                         time_scale=time_scale, target_load=None, dropped={"run_time_zero": 2},
                         dropped_ids={"run_time_zero": np.array([90, 91])}, lp=lp)


def test_hpc_metrics_by_hand():
    """One machine, three jobs: waits, responses, bounded slowdowns (tau = 10 s; 1 model unit = 1 s) and the
    utilisation computed by hand; the records carry them with the SWF job numbers."""
    sysm = hs.System.from_arrays(alpha=[1.0], mu=[[1.0]])
    arr, size = np.array([0.0, 1.0, 2.0, 100.0]), np.array([20.0, 5.0, 30.0, 1.0])
    w = _synthetic(arr, size, np.zeros(4, np.int64), sysm)
    res = hs.simulate(sysm, "mct", trace=w, reps=1, records=True, workers=1)
    wait = np.array([0.0, 19.0, 23.0, 0.0])
    resp = np.array([20.0, 24.0, 53.0, 1.0])
    bsld = np.array([1.0, 24.0 / 10.0, 53.0 / 30.0, 1.0])
    assert res.wait == pytest.approx(wait.mean()) and res.W_log == pytest.approx(resp.mean())
    assert res.bsld == pytest.approx(bsld.mean()) and res.bsld_tau_seconds == 10.0 and res.bsld_tau == 10.0
    assert res.utilisation == pytest.approx([56.0 / 101.0])
    rec = res.records.sort_values("task")
    np.testing.assert_allclose(rec["wait"], wait)
    np.testing.assert_allclose(rec["response"], resp)
    np.testing.assert_allclose(rec["bounded_slowdown"], bsld)
    assert rec["job_id"].tolist() == [1, 2, 3, 4]
    # every job accounted for: 4 replayed + 2 dropped (by reason, with their numbers) = 6 in the log
    assert res.jobs == 4 and res.jobs_in_log == 6 and res.dropped == {"run_time_zero": 2}
    assert res.dropped_job_ids == {"run_time_zero": [90, 91]}
    # one window: no interval, and the status says so
    assert res.status == NO_CI and not res.success and "too few" in res.message
    assert res.mean == pytest.approx(resp.mean()) and np.isnan(res.ci[0])
    # tau is 10 seconds of the log: on a time axis of 0.5 model units per second it is 5 model units
    r2 = hs.simulate(sysm, "mct", trace=_synthetic(arr, size, np.zeros(4, np.int64), sysm, time_scale=0.5),
                     reps=1, workers=1)
    assert r2.bsld_tau == 5.0 and r2.bsld == pytest.approx(np.mean([1.0, 24.0 / 5.0, 53.0 / 30.0, 1.0]))


def test_utilisation_is_the_work_over_the_span():
    """Several machines: sum over machines of utilisation x span = the total run time of the jobs
    (every job's run time X / mu on the machine it ran on)."""
    sysm = hs.System.from_arrays(alpha=[0.6, 0.5], mu=[[1.0, 2.0, 0.5], [2.0, 0.5, 1.0]])
    rng = np.random.default_rng(4)
    n = 3000
    arr = np.cumsum(rng.exponential(1 / 1.1, n))
    w = _synthetic(arr - arr[0], rng.exponential(1.0, n), (rng.random(n) < 0.45).astype(np.int64), sysm)
    res = hs.simulate(sysm, "lpas", trace=w, reps=10, records=True, workers=1)
    rec = res.records
    run = (rec["end"] - rec["start"]).to_numpy()
    span = rec["end"].max() - rec["arrival"].min()
    assert sum(res.utilisation) * span == pytest.approx(run.sum(), rel=1e-9)
    mu = np.asarray(sysm.mu)
    np.testing.assert_allclose(run, w.size[rec["task"]] / mu[rec["class"], rec["machine"]], rtol=1e-9,
                               atol=1e-12 * rec["end"].max())


def _burst_log(path: Path, n: int = 6000, burst: int = 800, seed: int = 3) -> Path:
    """An SWF log of Poisson arrivals with exponential run times, plus ``burst`` jobs submitted in the
    same minute in the middle (one window dominates), and 3 jobs with run time 0 (dropped)."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(60.0, n))
    submit[n // 2: n // 2 + burst] = submit[n // 2] + rng.uniform(0, 60, burst)
    body = np.full((n, 18), -1.0)
    body[:, 0], body[:, 1], body[:, 3] = np.arange(1, n + 1), np.sort(submit), rng.exponential(100.0, n)
    body[:, 4] = body[:, 7] = 1
    body[[5, 6, 7], 3] = 0
    with open(path, "w") as f:
        f.write("; Version: 2.2\n; Computer: a bursty test log\n")
        np.savetxt(f, body, fmt=["%d", "%.3f", "%d", "%.3f"] + ["%d"] * 14)
    return path


def test_a_log_dominated_by_one_burst_is_flagged_not_printed_as_ok(tmp_path):
    """Issue 22: a bursty log gave W = 7.16 [-2.97, 17.29] with status ok. Now: no interval, status 3,
    the reason in the message, in the JSON and in the text; every job accounted for."""
    from typer.testing import CliRunner

    from hetsched.cli import app

    log = _burst_log(tmp_path / "burst.swf")
    sysm = hs.System.from_arrays(alpha=[1.0, 1.0], mu=[[1.0, 2.0, 1.0], [2.0, 1.0, 1.0]])
    res = hs.simulate(sysm, "mct", trace=log, load=0.8, reps=30, workers=1)
    assert res.status == NO_CI and not res.success and res.message.startswith("no CI")
    assert np.isnan(res.ci[0]) and np.isnan(res.ci[1]) and res.mean == pytest.approx(res.W_log)
    burst = np.array(res.W_windows)
    assert burst.max() > 5 * np.median(burst)  # the burst's window dominates
    assert res.jobs == 5997 and res.jobs_in_log == 6000 and res.dropped == {"run_time_zero": 3}
    r = CliRunner().invoke(app, ["simulate", "2.C1", "--policy", "mct", "--trace", str(log), "--load", "0.8",
                                 "--reps", "30", "--workers", "1", "--json"])
    assert r.exit_code == 0, r.output
    js = json.loads(r.output)
    assert js["status"] == 3 and js["success"] is False and js["ci"] == [None, None]
    assert js["message"].startswith("no CI") and js["jobs"] + js["dropped"]["run_time_zero"] == js["jobs_in_log"]
    r = CliRunner().invoke(app, ["simulate", "2.C1", "--policy", "mct", "--trace", str(log), "--load", "0.8",
                                 "--reps", "30", "--workers", "1", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "NO CI:" in r.output and "no confidence interval" in r.output and "95% CI" not in r.output
    assert "jobs: 5,997 replayed of 6,000 in the log; 3 dropped: run time 0 (3)" in r.output


def test_compare_on_a_trace_pairs_per_job_differences_with_every_metric(tmp_path):
    """``hs.compare`` on a log: the difference of each metric is the difference of the two means, estimated
    on the same windows for both policies (window means of the per-job differences); a policy that
    overloads a machine and whose backlog grows through the log is unstable and ranked last."""
    rng = np.random.default_rng(6)
    n = 8000
    sysm = hs.System.from_arrays(alpha=[0.5, 0.5], mu=[[1.0, 0.9], [1.0, 0.9]])  # MET sends all to machine 1
    arr = np.cumsum(rng.exponential(1.0, n))
    w = _synthetic(arr - arr[0], rng.exponential(1.3, n), (rng.random(n) < 0.5).astype(np.int64), sysm)
    r = hs.compare(sysm, ["mct", "lpas", "met"], trace=w, reps=20, metrics=["W", "wait", "bsld"], workers=1)
    assert r.policy("met").stable is False and r.policy("met").rank == 3
    a, b = r.policy("mct").sim, r.policy("lpas").sim
    for m in ("W", "wait", "bsld"):
        d = r.difference("mct", "lpas", m)
        ea, eb = a.estimates[m], b.estimates[m]
        assert d.diff.mean == pytest.approx(ea.mean - eb.mean, rel=1e-9, abs=1e-12)
        k = d.diff.n
        assert k in candidate_windows(20)
        pe = paired_estimate(ea, eb)
        assert pe.windows == k
        np.testing.assert_allclose(pe.window_means, window_means(ea.values, k) - window_means(eb.values, k))
        if d.note:
            assert d.note.startswith("no CI") and not d.significant
    js = r.as_dict()
    assert js["jobs"] == n and js["jobs_in_log"] == n + 2 and js["dropped"] == {"run_time_zero": 2}
    with pytest.raises(ModelError, match="not measured by a trace replay"):
        hs.compare(sysm, ["mct", "lpas"], trace=w, reps=20, metrics=["Q"], workers=1)


@needs_logs
def test_lcg_has_no_negative_interval():
    """Issue 22: the report's traces table showed MCT ci_low -0.64 on LCG. Every interval reported for the
    whole LCG log at load 0.8 (W, wait, bounded slowdown, overall and per class) is at or above 0, and
    where there is none the status and message say why."""
    c1 = hs.load("2.C1")
    tw = workload(read_swf(LCG), c1, load=0.8)
    for pol in ("mct", "lpas"):
        res = hs.simulate(c1, pol, trace=tw, reps=30, workers=1)
        assert res.status in (0, 3)
        if res.status == 0:
            assert res.ci[0] >= 0
        else:
            assert res.message.startswith("no CI") and np.isnan(res.ci[0])
        cis = [res.wait_ci, res.bsld_ci] + [pc.get(k) for pc in res.per_class for k in ("ci", "wait_ci", "bsld_ci")]
        assert all(ci is None or ci[0] >= 0 for ci in cis), cis
        assert res.jobs + sum(res.dropped.values()) == res.jobs_in_log == 188_041


@needs_logs
def test_nasa_every_job_accounted_for_in_json_text_and_report(tmp_path):
    """Issue 22: replaying NASA gave 'jobs: 18066' of 18,239 and nothing said which 173 or why."""
    from typer.testing import CliRunner

    from hetsched.cli import app

    df = read_swf(NASA)
    out = tmp_path / "sim"
    r = CliRunner().invoke(app, ["simulate", "2.C1", "--policy", "lpas", "--trace", str(NASA), "--load", "0.8",
                                 "--reps", "30", "--workers", "1", "--json", "--outdir", str(out)])
    assert r.exit_code == 0, r.output
    js = json.loads(r.output)
    zero = df.loc[df["run_time"] == 0, "job_id"].tolist()
    assert js["jobs"] == 18_066 and js["jobs_in_log"] == 18_239 == len(df)
    assert js["dropped"] == {"run_time_zero": 173} == {"run_time_zero": len(zero)}
    assert js["dropped_job_ids"]["run_time_zero"] == zero[:100]
    r = CliRunner().invoke(app, ["simulate", "2.C1", "--policy", "lpas", "--trace", str(NASA), "--load", "0.8",
                                 "--reps", "30", "--workers", "1", "--no-progress"])
    assert "jobs: 18,066 replayed of 18,239 in the log; 173 dropped: run time 0 (173)" in r.output
    html = tmp_path / "report.html"
    r = CliRunner().invoke(app, ["report", str(out), "-o", str(html)])
    assert r.exit_code == 0, r.output
    page = html.read_text()
    assert "18,239 in the log (173 dropped: run time 0 (173))" in page


# ----------------------------------------------------------------------------- records files
def test_records_csv_or_parquet_by_suffix_and_safely(tmp_path):
    from hetsched.traces import read_records, records_frame, write_records

    df = records_frame(np.arange(4), np.zeros(4), np.arange(4.0), np.arange(4.0) + 1, np.arange(4.0) + 2,
                       np.zeros(4))
    for suffix in (".csv", ".parquet", ".CSV"):
        p = write_records(df, tmp_path / f"r{suffix}", meta={"policy": "mct", "seed": 1})
        back = read_records(p)
        pd.testing.assert_frame_equal(back, df, check_dtype=False)
        assert back.attrs["meta"] == {"policy": "mct", "seed": 1}
    assert (tmp_path / "r.csv").read_text().splitlines()[1] == ",".join(df.columns)
    assert (tmp_path / "r.parquet").read_bytes()[:4] == b"PAR1"
    for bad in ("notes.txt", "thesis.docx", "r"):
        with pytest.raises(ModelError, match=r"must end in \.parquet or \.csv"):
            write_records(df, tmp_path / bad)
        assert not (tmp_path / bad).exists()
    with pytest.raises(ModelError, match="exists; pass --force"):
        write_records(df, tmp_path / "r.csv")
    write_records(df.iloc[:2], tmp_path / "r.csv", force=True)
    assert len(read_records(tmp_path / "r.csv")) == 2
    target = tmp_path / "victim.csv"
    target.write_text("precious")
    (tmp_path / "link.csv").symlink_to(target)
    with pytest.raises(ModelError, match="symbolic link"):
        write_records(df, tmp_path / "link.csv", force=True)
    assert target.read_text() == "precious"


def test_cli_records_suffix_is_refused_before_the_run(tmp_path):
    from typer.testing import CliRunner

    from hetsched.cli import app

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    for cmd in (["simulate", "2.A", "--policy", "mct", "--reps", "1", "--horizon", "100", "--workers", "1"],
                ["muscle", "run", "--jobs", "50", "--no-ga"]):
        r = CliRunner().invoke(app, cmd + ["--records", str(notes)])
        assert r.exit_code == 2 and ".parquet or .csv" in r.output and "Traceback" not in r.output, r.output
        assert notes.read_text() == "my notes"
    out = tmp_path / "r.csv"
    r = CliRunner().invoke(app, ["simulate", "2.A", "--policy", "mct", "--reps", "1", "--horizon", "100",
                                 "--workers", "1", "--records", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("# hetsched: ") and "task,class,arrival" in out.read_text()
    r = CliRunner().invoke(app, ["simulate", "2.A", "--policy", "mct", "--reps", "1", "--horizon", "100",
                                 "--workers", "1", "--records", str(out), "--no-progress"])
    assert r.exit_code == 2 and "--force" in r.output
