"""Real traces: SWF reader, workload preparation, per-task records (issue 13).

Truths used: the files' own line counts and header declarations (``MaxJobs``),
values written by hand into small files, independent line-by-line parsing,
closed-form utilisation of single- and identical-machine systems, invariances
of the LP under time scaling, and hand-built records that break each rule.
"""

from __future__ import annotations

import gzip
import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsched.errors import ModelError
from hetsched.system import System, groups_from_matrix
from hetsched.traces import (
    SWF_COLUMNS,
    check_records,
    read_records,
    read_swf,
    read_swf_header,
    records_frame,
    with_na,
    workload,
    write_records,
)
from hetsched.traces.workload import fold_classes
from helpers import SHARED_DIR, fcfs_records

SHARED = SHARED_DIR
TRACES = SHARED / "traces"
LOGS = {"NASA-iPSC-1993-3.1-cln.swf.gz": 18239, "UniLu-Gaia-2014-2.swf.gz": 51987, "LCG.swf.gz": 188041}
needs_logs = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces not present next to the repository")


def _line(job, submit, run, procs=1, user=1, queue=1, partition=1, status=1, req_time=-1):
    f = [job, submit, -1, run, procs, -1, -1, procs, req_time, -1, status, user, 1, -1, queue, partition, -1, -1]
    return " ".join(str(x) for x in f) + "\n"


HEADER = """; Version: 2.2
; Computer: Test box
; MaxJobs: 3
; Note: first note
;       continued here
; Note: second note
; Queue: 1 batch
; Information: http://example.org/
;              http://example.org/more
;
"""


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "small.swf"
    p.write_text(HEADER + _line(1, 0, 10, procs=4) + _line(2, 5.0, 20.5, user=7) + _line(3, 12, -1, status=0))
    return p


# ----------------------------------------------------------------------------- reader
def test_small_file_fields_and_header(small):
    df = read_swf(small)
    assert list(df.columns) == list(SWF_COLUMNS) and len(SWF_COLUMNS) == 18
    assert df["job_id"].tolist() == [1, 2, 3]
    assert df["submit_time"].tolist() == [0.0, 5.0, 12.0]
    assert df["run_time"].tolist() == [10.0, 20.5, -1.0]  # -1 kept as the missing marker
    assert df["allocated_procs"].tolist() == [4, 1, 1] and df["user_id"].tolist() == [1, 7, 1]
    assert df["status"].dtype == np.int64 and df["run_time"].dtype == np.float64
    h = df.attrs["header"]
    assert h["Version"] == "2.2" and h["Computer"] == "Test box" and h["MaxJobs"] == 3
    assert h["Note"] == ["first note continued here", "second note"]
    assert h["Queue"] == ["1 batch"]
    assert h["Information"] == "http://example.org/ http://example.org/more"
    assert df.attrs["skipped"] == 0 and df.attrs["jobs"] == 3
    assert read_swf_header(small)["header"] == h
    na = with_na(df)
    assert pd.isna(na["run_time"].iloc[2]) and pd.isna(na["wait_time"]).all() and na["job_id"].dtype == "Int64"


def test_gzip_floats_for_ints_and_by_content(small, tmp_path):
    text = small.read_text().replace(" 4 -1 -1 4 ", " 4.0 -1 -1 4.0 ")
    gz = tmp_path / "x.swf.gz"
    with gzip.open(gz, "wt") as f:
        f.write(text)
    df = read_swf(gz)
    assert df["allocated_procs"].tolist() == [4, 1, 1] and df["allocated_procs"].dtype == np.int64
    renamed = tmp_path / "nogz.swf"  # gzip recognised by its magic bytes, not the name
    renamed.write_bytes(gz.read_bytes())
    pd.testing.assert_frame_equal(read_swf(renamed), df)


@pytest.mark.parametrize("bad_line, field", [
    ("4 20 -1 5 1 -1 -1 1 -1 -1 1 1 1 -1 1 1 -1\n", "expected 18 fields, got 17"),
    ("4 20 -1 5 1 -1 -1 1 -1 -1 1 1 1 -1 1 1 -1 -1 9\n", "expected 18 fields, got 19"),
    ("4 20 -1 abc 1 -1 -1 1 -1 -1 1 1 1 -1 1 1 -1 -1\n", "field 4 'run_time': not a number"),
    ("4 20 -1 5 1.5 -1 -1 1 -1 -1 1 1 1 -1 1 1 -1 -1\n", "field 5 'allocated_procs': expected an integer"),
    ("4 20 -1 nan 1 -1 -1 1 -1 -1 1 1 1 -1 1 1 -1 -1\n", "field 4 'run_time': not a finite number"),
])
def test_malformed_line_named_or_skipped(small, tmp_path, bad_line, field):
    p = tmp_path / "bad.swf"
    lines = small.read_text().splitlines(keepends=True)
    lines.insert(11, bad_line)  # after the 10 header lines and the first job: file line 12
    p.write_text("".join(lines))
    with pytest.raises(ModelError, match=rf"{p}:12: {field}"):
        read_swf(p)
    df = read_swf(p, on_error="skip")
    assert df["job_id"].tolist() == [1, 2, 3]
    assert df.attrs["skipped"] == 1 and df.attrs["skipped_lines"] == [12]


def test_chunks_equal_whole(small, tmp_path):
    p = tmp_path / "many.swf"
    rng = np.random.default_rng(1)
    body = "".join(_line(k + 1, k * 3, int(rng.integers(1, 100)), user=int(rng.integers(1, 5))) for k in range(1000))
    p.write_text(HEADER + body)
    whole = read_swf(p)
    chunks = list(read_swf(p, chunksize=97))
    assert all(len(c) <= 97 for c in chunks) and chunks[0].attrs["header"]["MaxJobs"] == 3
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole)
    with pytest.raises(ModelError, match="chunksize"):
        read_swf(p, chunksize=0)
    with pytest.raises(ModelError, match="on_error"):
        read_swf(p, on_error="ignore")


def test_bad_paths_are_clear_errors(tmp_path):
    with pytest.raises(ModelError, match="nope.swf: no such SWF file"):
        read_swf(tmp_path / "nope.swf")
    with pytest.raises(ModelError, match="is a folder"):
        read_swf(tmp_path)
    fake = tmp_path / "fake.swf.gz"
    fake.write_bytes(b"\x1f\x8bthis is not gzip data at all")
    with pytest.raises(ModelError, match="gzip"):
        read_swf(fake)
    trunc = tmp_path / "trunc.swf.gz"
    trunc.write_bytes(gzip.compress(b"".join(_line(k, k, 5).encode() for k in range(1, 2000)))[:300])
    with pytest.raises(ModelError, match="gzip"):
        read_swf(trunc)
    binary = tmp_path / "bin.swf"
    binary.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(ModelError, match="binary"):
        read_swf(binary)
    if os.path.exists("/dev/zero"):
        with pytest.raises(ModelError, match="not a regular file"):
            read_swf("/dev/zero")


def test_fifo_does_not_hang(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "pipe.swf"
    os.mkfifo(fifo)
    out: list = []
    th = threading.Thread(target=lambda: out.append(_try(fifo)), daemon=True)
    th.start()
    th.join(10)
    assert not th.is_alive(), "read_swf blocked on a FIFO"
    assert "not a regular file" in out[0]


def _try(path):
    try:
        read_swf(path)
    except ModelError as exc:
        return str(exc)
    return "no error"


@needs_logs
@pytest.mark.parametrize("name, jobs", sorted(LOGS.items()))
def test_shipped_logs(name, jobs):
    """Job count = the archive's count and the job lines of the file; the values
    agree with an independent line-by-line parse at a sample of lines."""
    df = read_swf(TRACES / name)
    assert len(df) == jobs and df.attrs["skipped"] == 0
    assert df.attrs["header"]["Version"] == "2.2"
    lines = [s for s in gzip.open(TRACES / name, "rt") if s.strip() and not s.lstrip().startswith(";")]
    assert len(lines) == jobs
    for k in np.linspace(0, jobs - 1, 50).astype(int):
        want = [float(x) for x in lines[k].split()]
        assert df.iloc[k].to_numpy(dtype=float).tolist() == want
    assert (df["job_id"].diff().dropna() > 0).all()


@needs_logs
def test_lcg_header_declares_its_size():
    df = read_swf(TRACES / "LCG.swf.gz")
    assert df.attrs["header"]["MaxJobs"] == len(df) == 188041
    assert df.attrs["header"]["MaxPartitions"] == df["partition_id"].max() == 170


# ----------------------------------------------------------------------------- workload
def _frame(submit, run, **cols):
    n = len(submit)
    base = {c: np.full(n, -1) for c in SWF_COLUMNS}
    base["job_id"] = np.arange(1, n + 1)
    base["submit_time"] = np.asarray(submit, float)
    base["run_time"] = np.asarray(run, float)
    base.update({k: np.asarray(v) for k, v in cols.items()})
    return pd.DataFrame(base)


def _system(mu, counts=None):
    mu = np.asarray(mu, float)
    return System(id="t", alpha=tuple(np.ones(mu.shape[0])), groups=groups_from_matrix(mu))


def test_runtime_quantiles_equal_counts_and_order():
    rng = np.random.default_rng(3)
    n = 1001
    run = rng.pareto(1.5, n) * 100 + 1
    run[::7] = 50.0  # many ties
    df = _frame(np.sort(rng.uniform(0, 1e5, n)), run)
    w = workload(df, _system([[1.0], [2.0], [3.0]]))
    counts = np.bincount(w.klass)
    assert counts.max() - counts.min() <= 1 and counts.sum() == n
    # class order follows run time: every run time of class i is <= every run time of class i+1
    X = w.size
    for i in range(2):
        assert X[w.klass == i].max() <= X[w.klass == i + 1].min()
    assert np.mean(X) == pytest.approx(1.0)
    assert w.arrival[0] == 0.0 and np.all(np.diff(w.arrival) >= 0)


def test_single_machine_load_is_utilisation():
    """One machine with rates mu_i: lambda* = 1 / sum_i alpha_i / mu_i, i.e. the load is the
    machine's utilisation sum_k (X_k / mu_{i_k}) / T on the model time axis."""
    rng = np.random.default_rng(5)
    n = 600
    submit = np.sort(rng.uniform(0, 1e6, n))
    run = rng.exponential(300.0, n) + 1
    mu = np.array([1.0, 2.0, 0.5])
    w = workload(_frame(submit, run), _system(mu[:, None]))
    util = float(np.sum(w.size / mu[w.klass]) / (w.arrival[-1] - w.arrival[0]))
    assert w.load == pytest.approx(util, rel=1e-9)
    # own time axis: model time in units of the mean run time
    assert w.arrival[-1] == pytest.approx((submit[-1] - submit[0]) / run.mean())
    w8 = workload(_frame(submit, run), _system(mu[:, None]), load=0.8)
    util8 = float(np.sum(w8.size / mu[w8.klass]) / (w8.arrival[-1] - w8.arrival[0]))
    assert util8 == pytest.approx(0.8, rel=1e-9) and w8.load == pytest.approx(0.8, rel=1e-9)
    assert w8.stable and not workload(_frame(submit, run), _system(mu[:, None]), load=1.25).stable


def test_identical_machines_capacity():
    """M identical machines (rate 1 for every class): 1/lambda* = total work rate / M."""
    rng = np.random.default_rng(8)
    submit = np.sort(rng.uniform(0, 5e4, 400))
    run = rng.uniform(10, 1000, 400)
    sysm = System(id="id4", alpha=(1.0, 1.0), groups=groups_from_matrix(np.ones((2, 4))))
    w = workload(_frame(submit, run), sysm)
    assert w.load == pytest.approx(np.sum(w.size) / w.arrival[-1] / 4, rel=1e-9)


def test_load_scaling_invariances():
    """Rescaling the log's clock, or shifting it, changes nothing once the load is fixed;
    the classes and sizes never depend on the load."""
    rng = np.random.default_rng(11)
    submit = np.sort(rng.uniform(100, 2e5, 500))
    run = rng.lognormal(5, 1.5, 500)
    sysm = _system([[8.0, 1.0, 4.0], [1.0, 4.0, 2.0]])
    a = workload(_frame(submit, run), sysm, load=0.7)
    b = workload(_frame(3.0 * submit + 17.0, run), sysm, load=0.7)
    np.testing.assert_allclose(a.arrival, b.arrival, rtol=1e-9, atol=1e-9)
    c = workload(_frame(submit, run), sysm, load=0.9)
    np.testing.assert_array_equal(a.klass, c.klass)
    np.testing.assert_array_equal(a.size, c.size)
    np.testing.assert_allclose(c.arrival * 0.9, a.arrival * 0.7, rtol=1e-9)  # time ~ 1/RHO
    # the LP of the rescaled mix gives RHO (re-solved, not recomputed)
    assert 1.0 / c.lp.lam == pytest.approx(0.9, rel=1e-9)


def test_categorical_and_ordinal_rules():
    users = np.array([5] * 50 + [6] * 30 + [7] * 15 + [8] * 5 + [-1] * 10)
    n = users.size
    df = _frame(np.arange(n, dtype=float), np.ones(n), user_id=users, requested_procs=np.repeat([1, 2, 4, 8, 16], 22))
    k, detail = fold_classes(df, 3, "user")
    # greedy balanced folding: 50 -> class 0, 30 -> 1, 15 -> 2, 10 (-1) -> 2 (now 25), 5 -> 2 (25 < 30)
    by_user = {u: set(k[users == u].tolist()) for u in np.unique(users)}
    assert all(len(s) == 1 for s in by_user.values())  # a user stays in one class
    assert by_user[5] == {0} and by_user[6] == {1} and by_user[7] == {2} and by_user[-1] == {2} and by_user[8] == {2}
    kp, _ = fold_classes(df, 3, "procs")
    procs = df["requested_procs"].to_numpy()
    for i in range(2):  # contiguous ranges of the ordinal value
        assert procs[kp == i].max() < procs[kp == i + 1].min()
    assert set(kp.tolist()) == {0, 1, 2}
    with pytest.raises(ModelError, match="needs at least 3 distinct values"):
        fold_classes(df.assign(queue_id=1), 3, "queue")
    with pytest.raises(ModelError, match="classes: expected one of"):
        fold_classes(df, 3, "size")


def test_workload_errors_and_dropped():
    sysm = _system([[1.0], [1.0]])
    df = _frame([0.0, 1.0, 2.0, 3.0, -1.0], [5.0, 0.0, -1.0, 7.0, 3.0])
    w = workload(df, sysm)
    # every job replayed or dropped with its reason (each job once, the first reason that applies)
    assert len(w) == 2 and w.dropped == {"submit_time_unknown": 1, "run_time_unknown": 1, "run_time_zero": 1}
    assert w.dropped_total == 3 and w.jobs_in_log == 5 == len(w) + w.dropped_total
    assert {k: v.tolist() for k, v in w.dropped_ids.items()} == {"submit_time_unknown": [5],
                                                                 "run_time_unknown": [3], "run_time_zero": [2]}
    assert sorted(w.job_id.tolist() + [j for v in w.dropped_ids.values() for j in v]) == [1, 2, 3, 4, 5]
    assert w.dropped_text() == "3 dropped: submit time unknown (1), run time unknown (1), run time 0 (1)"
    with pytest.raises(ModelError, match="load"):
        workload(df, sysm, load=0.0)
    with pytest.raises(ModelError, match="load"):
        workload(df, sysm, load=float("nan"))
    with pytest.raises(ModelError, match="spans no time"):
        workload(_frame([4.0, 4.0], [1.0, 2.0]), sysm)
    with pytest.raises(ModelError, match="usable job"):
        workload(_frame([0.0, 1.0], [-1.0, 2.0]), sysm)


@needs_logs
def test_logs_on_2c1_reach_the_load():
    from hetsched.scenarios import load

    sysm = load("2.C1")
    df = read_swf(TRACES / "UniLu-Gaia-2014-2.swf.gz")
    own = workload(df, sysm)
    w = workload(df, sysm, load=0.8)
    assert w.load == pytest.approx(0.8, rel=1e-9) and w.stable
    assert len(w) == len(df) - w.dropped_total and w.jobs_in_log == len(df)
    # own axis: the load differs, the time axis is proportional
    np.testing.assert_allclose(w.arrival * (0.8 / own.load), own.arrival, rtol=1e-9)


# ----------------------------------------------------------------------------- records
def _fcfs_records(n=400, machines=3, seed=0):
    """FCFS to the earliest-free machine (valid records, built by hand)."""
    return fcfs_records(n, machines, seed, mean_run=2.0, classes=2)


def _time_average_in_system(df, step=1e-3):
    """The simulator's accumulator, independently: sample N(t) on a fine grid."""
    t = np.arange(df["arrival"].min(), df["end"].max(), step)
    a = np.sort(df["arrival"].to_numpy())
    e = np.sort(df["end"].to_numpy())
    return float(np.mean(np.searchsorted(a, t, side="right") - np.searchsorted(e, t, side="right")))


def test_valid_records_pass_and_little_holds():
    df = _fcfs_records()
    L = _time_average_in_system(df)
    res = check_records(df, tasks=len(df), L=L, little_rtol=0.01)
    assert res.ok, res.violations
    assert res.L == pytest.approx(res.lam * res.W, rel=1e-9)  # over the span, the identity
    assert res.little_gap < 0.01


@pytest.mark.parametrize("breaker, rule", [
    (lambda d: pd.concat([d, d.iloc[[3]]], ignore_index=True), "every task once"),
    (lambda d: d.drop(index=5).reset_index(drop=True), "missing"),
    (lambda d: d.assign(start=np.where(d.index == 7, d["arrival"] - 0.5, d["start"])), "start >= arrival"),
    (lambda d: d.assign(end=np.where(d.index == 9, d["start"] - 0.1, d["end"])), "end >= start"),
    (lambda d: d.assign(attempts=np.where(d.index == 2, 0, d["attempts"])), "attempts >= 1"),
    (lambda d: d.assign(end=np.where(d.index == 4, np.nan, d["end"])), "end is finite"),
])
def test_each_rule_is_caught(breaker, rule):
    df = breaker(_fcfs_records(n=60))
    res = check_records(df, tasks=60)
    assert not res.ok and any(rule in v for v in res.violations), res.violations
    with pytest.raises(ModelError, match="records: "):
        res.raise_if_failed()


def test_overlap_is_caught_even_behind_a_long_task():
    # machine 0: task 0 [0, 10); task 1 [2, 3) lies inside it; task 2 [10, 11) touches (allowed)
    df = records_frame([0, 1, 2], [0, 0, 0], [0.0, 1.0, 2.0], [0.0, 2.0, 10.0], [10.0, 3.0, 11.0], [0, 0, 0])
    res = check_records(df)
    assert any("never overlap" in v and "task 1" in v for v in res.violations), res.violations
    ok = records_frame([0, 1, 2], [0, 0, 0], [0.0, 1.0, 2.0], [0.0, 10.0, 2.0], [10.0, 11.0, 3.0], [0, 0, 1])
    assert check_records(ok).ok


def test_relative_time_tolerance_at_large_times():
    # times of 1.4e8 s: an overlap of 3e-8 s is rounding (the spacing of doubles there is 3e-8)
    t = 1.4e8
    assert np.spacing(t) > 2e-8
    df = records_frame([0, 1], [0, 0], [t, t], [t, t + 5.0], [t + 5.0 + 3e-8, t + 9.0], [0, 0])
    assert check_records(df).ok
    df2 = records_frame([0, 1], [0, 0], [t, t], [t, t + 5.0], [t + 6.0, t + 9.0], [0, 0])
    assert not check_records(df2).ok


def test_little_with_a_wrong_accumulator_fails():
    df = _fcfs_records()
    res = check_records(df, L=1.1 * _time_average_in_system(df), little_rtol=0.02)
    assert not res.ok and any("Little's law" in v for v in res.violations)


def test_records_parquet_roundtrip(tmp_path):
    df = _fcfs_records(n=30)
    p = write_records(df, tmp_path / "r.parquet", meta={"policy": "fcfs", "seed": 0})
    back = read_records(p)
    pd.testing.assert_frame_equal(back, df)
    assert back.attrs["meta"] == {"policy": "fcfs", "seed": 0}
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(ModelError, match="not a readable Parquet file"):
        read_records(junk)
    with pytest.raises(ModelError, match="missing column"):
        check_records(df.drop(columns=["machine"]))


# ----------------------------------------------------------------------------- replay (reference)
def _batch_means(x, batches=20):
    from scipy import stats

    b = np.array_split(np.asarray(x), batches)
    m = np.array([v.mean() for v in b])
    return m.mean(), stats.t.ppf(0.975, batches - 1) * m.std(ddof=1) / np.sqrt(batches)


def test_poisson_trace_replay_gives_mm1(tmp_path):
    """A log of Poisson arrivals with exponential run times, prepared at load 0.7 for one
    machine, replays as an M/M/1 queue: W = E[S] / (1 - rho) = 1 / 0.3 (E[S] = mean X = 1)."""
    from reference_replay import replay

    rng = np.random.default_rng(2024)
    n = 120_000
    submit = np.cumsum(rng.exponential(37.0, n))  # seconds; the rate is irrelevant after scaling
    run = rng.exponential(500.0, n)
    p = tmp_path / "poisson.swf"
    body = np.full((n, 18), -1.0)
    body[:, 0], body[:, 1], body[:, 3], body[:, 4], body[:, 7] = np.arange(1, n + 1), submit, run, 1, 1
    with open(p, "w") as f:
        f.write(HEADER)
        np.savetxt(f, body, fmt=["%d", "%.6f", "%d", "%.6f"] + ["%d"] * 14)
    sysm = System(id="mm1", alpha=(1.0,), groups=groups_from_matrix([[1.0]]))
    w = workload(read_swf(p), sysm, load=0.7)
    assert len(w) == n and w.load == pytest.approx(0.7, rel=1e-9)
    rec, L = replay(w.arrival, w.size, w.klass, sysm.mu)
    assert check_records(rec, tasks=n, L=L, little_rtol=1e-6).ok
    W, hw = _batch_means(rec["end"] - rec["arrival"])  # 95% CI, 20 batch means
    assert hw < 0.05 * W, (W, hw)  # precise enough to mean something
    assert abs(W - 1 / 0.3) < hw, (W, hw)


@needs_logs
def test_gaia_replay_records_pass_the_certificate():
    """A heavy-tailed real log through MCT on 2.C1 at load 0.8: records valid, Little's law
    between the replay's own accumulator and the records, deterministic."""
    from reference_replay import replay

    from hetsched.scenarios import load

    sysm = load("2.C1")
    w = workload(read_swf(TRACES / "UniLu-Gaia-2014-2.swf.gz"), sysm, load=0.8)
    n = 8_000
    rec, L = replay(w.arrival[:n], w.size[:n], w.klass[:n], sysm.mu, "mct")
    res = check_records(rec, tasks=n, L=L, little_rtol=1e-6)
    assert res.ok, res.violations
    rec2, _ = replay(w.arrival[:n], w.size[:n], w.klass[:n], sysm.mu, "mct")
    pd.testing.assert_frame_equal(rec, rec2)


# ----------------------------------------------------------------------------- CLI
def test_trace_info_cli(tmp_path):
    import json

    from typer.testing import CliRunner

    from hetsched.cli import app

    p = tmp_path / "t.swf"
    rng = np.random.default_rng(0)
    p.write_text(HEADER + "".join(_line(k + 1, 10 * k, int(rng.integers(1, 500))) for k in range(30)))
    r = CliRunner().invoke(app, ["trace", "info", str(p), "--system", "2.C1", "--load", "0.8", "--json"])
    assert r.exit_code == 0, r.output
    js = json.loads(r.stdout)
    assert js["jobs"] == 30 and js["header"]["MaxJobs"] == 3
    assert js["replay"]["load"] == pytest.approx(0.8, rel=1e-9) and js["replay"]["counts"] == [10, 10, 10]
    r = CliRunner().invoke(app, ["trace", "info", str(p), "--system", "2.C1"])
    assert r.exit_code == 0 and "lambda*" in r.output and "class counts [10, 10, 10]" in r.output
    for bad, match in ((tmp_path, "is a folder"), (tmp_path / "none.swf", "no such SWF file")):
        r = CliRunner().invoke(app, ["trace", "info", str(bad)])
        assert r.exit_code == 2 and match in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["trace", "info", str(p), "--system", "2.C1", "--classes", "queue"])
    assert r.exit_code == 2 and "needs at least 3 distinct values" in r.output


def test_chunked_errors_name_the_file_line(tmp_path):
    p = tmp_path / "c.swf"
    lines = [_line(k + 1, k, 5) for k in range(250)]
    lines[203] = "204 203 -1 5 1 -1 -1 1 -1 -1 1 1 1 -1 x 1 -1 -1\n"  # file line 10 header + 204
    p.write_text(HEADER + "".join(lines))
    with pytest.raises(ModelError, match=rf"{p}:214: field 15 'queue_id': not a number"):
        for _ in read_swf(p, chunksize=64):
            pass
    chunks = list(read_swf(p, chunksize=64, on_error="skip"))
    assert sum(len(c) for c in chunks) == 249 and chunks[-1].attrs["skipped_lines"] == [214]


# ----------------------------------------------------------------------------- fuzz
_TOKENS = st.sampled_from(["1", "-1", "0", "3.5", "1e3", "abc", "nan", "inf", ";", "; Note: x", "\t", " ",
                           "\x00", "é", "99999999999999999999999", "-", "."])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.lists(_TOKENS, min_size=0, max_size=22).map(" ".join), max_size=30),
       skip=st.booleans(), gz=st.booleans())
def test_fuzz_any_text_is_a_frame_or_one_clear_error(tmp_path, lines, skip, gz):
    p = tmp_path / ("f.swf.gz" if gz else "f.swf")
    data = ("\n".join(lines)).encode("utf-8")
    p.write_bytes(gzip.compress(data) if gz else data)
    try:
        df = read_swf(p, on_error="skip" if skip else "raise")
    except ModelError as exc:
        msg = str(exc)
        assert "\n" not in msg and str(p) in msg
    else:
        assert list(df.columns) == list(SWF_COLUMNS)
        assert df.attrs["skipped"] == len(df.attrs["skipped_lines"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_fuzz_random_bytes(tmp_path, data):
    p = tmp_path / "b.swf.gz"
    p.write_bytes(data)
    try:
        read_swf(p, on_error="skip")
    except ModelError as exc:
        assert "\n" not in str(exc)


def test_windows_partition_the_trace():
    rng = np.random.default_rng(12)
    w = workload(_frame(np.sort(rng.uniform(0, 1e5, 1003)), rng.uniform(1, 100, 1003)), _system([[1.0], [2.0]]),
                 load=0.6)
    parts = w.windows(4)
    assert [len(p) for p in parts] == [251, 251, 251, 250]
    assert all(p.arrival[0] == 0.0 and np.all(np.diff(p.arrival) >= 0) for p in parts)
    np.testing.assert_array_equal(np.concatenate([p.job_id for p in parts]), w.job_id)
    np.testing.assert_array_equal(np.concatenate([p.klass for p in parts]), w.klass)
    # re-based arrivals keep the gaps of the whole trace
    np.testing.assert_allclose(np.concatenate([np.diff(p.arrival) for p in parts]),
                               np.delete(np.diff(w.arrival), [250, 501, 752]), rtol=1e-12, atol=1e-12 * w.arrival[-1])
    with pytest.raises(ModelError, match="windows"):
        w.windows(0)


# ----------------------------------------------------------------------------- safe logs (issue 23)
def _bomb(path: Path, member: bytes, copies: int, *, declared: int | None = None) -> int:
    """A gzip file of ``copies`` repetitions of ``member`` in one deflate stream, built without compressing
    it all: one full-flushed deflate block repeated (the CRC is not computed: readers must refuse the file
    long before its end). Returns the decompressed size; the trailer declares ``declared`` (default: it)."""
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(member) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(member) + c.flush(zlib.Z_FULL_FLUSH)
    assert again == block  # a full flush resets the dictionary: the block is the same every time
    size = len(member) * copies
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        for _ in range(copies):
            f.write(block)
        f.write(c.flush(zlib.Z_FINISH))
        f.write((0).to_bytes(4, "little") + ((size if declared is None else declared) % 2**32).to_bytes(4, "little"))
    return size


def test_19_or_17_fields_on_every_line_is_an_error_not_a_shift(tmp_path):
    """The first job line decides nothing: 19 fields on every line (pandas would take the first as an
    index and shift every column) or 17 is an error naming line and count, or skipped with a count."""
    rows = [_line(k + 1, 10 * k, 5 + k).rstrip("\n") for k in range(5)]
    for extra, n in ((" 7", 19), ("", 17)):
        p = tmp_path / f"f{n}.swf"
        body = [r + extra if n == 19 else r.rsplit(" ", 1)[0] for r in rows]
        p.write_text("; Version: 2.2\n" + "\n".join(body) + "\n")
        with pytest.raises(ModelError, match=rf"{p}:2: expected 18 fields, got {n}"):
            read_swf(p)
        with pytest.raises(ModelError, match=rf"{p}:2: expected 18 fields, got {n}"):
            list(read_swf(p, chunksize=2))
        df = read_swf(p, on_error="skip")
        assert len(df) == 0 and df.attrs["skipped"] == 5 and df.attrs["skipped_lines"] == [2, 3, 4, 5, 6]
    p = tmp_path / "first19.swf"  # only the first job line has 19 fields
    p.write_text("; Version: 2.2\n" + rows[0] + " 7\n" + "\n".join(rows[1:]) + "\n")
    with pytest.raises(ModelError, match=rf"{p}:2: expected 18 fields, got 19"):
        read_swf(p)
    df = read_swf(p, on_error="skip")
    assert df["job_id"].tolist() == [2, 3, 4, 5] and df["run_time"].tolist() == [6.0, 7.0, 8.0, 9.0]


def test_header_number_beyond_float_range_stays_text(tmp_path):
    from typer.testing import CliRunner

    from hetsched.cli import app

    p = tmp_path / "big.swf"
    p.write_text("; MaxJobs: 1e400\n; MaxProcs: 128.0\n; MaxNodes: 1.5\n" + _line(1, 0, 10))
    h = read_swf(p).attrs["header"]
    assert h["MaxJobs"] == "1e400" and h["MaxProcs"] == 128 and h["MaxNodes"] == "1.5"
    r = CliRunner().invoke(app, ["trace", "info", str(p)])
    assert r.exit_code == 0 and "MaxJobs: 1e400" in r.output, r.output


def test_gzip_bomb_is_refused(tmp_path, monkeypatch):
    """A small gzip expanding past the limit is refused: at once when its trailer says so, else when the
    count of decompressed bytes passes the limit (whole or streamed); zeros are refused as binary after
    the first 64 KiB; the limit is stated and can be raised or lifted."""
    line = _line(1, 0, 10).encode()
    member = line * ((1 << 20) // len(line))  # ~1 MiB of valid job lines
    one = tmp_path / "one.swf.gz"
    size = _bomb(one, member, 1200)  # ~1.2 GB declared in the trailer, ~1.2 MB on disk
    assert size > (1 << 30) and one.stat().st_size < 4 << 20  # a ratio over 300
    with pytest.raises(ModelError, match=r"exceeds the limit of 1,073,741,824 bytes .*HETSCHED_SWF_MAX_BYTES"):
        read_swf(one)
    lying = tmp_path / "lying.swf.gz"  # the trailer claims 1 KB: only the running count can stop it
    _bomb(lying, member, 64, declared=1000)
    with pytest.raises(ModelError, match="exceeds the limit of 8,000,000 bytes"):
        read_swf(lying, max_bytes=8_000_000)
    with pytest.raises(ModelError, match="exceeds the limit of 8,000,000 bytes"):
        for _ in read_swf(lying, chunksize=10_000, max_bytes=8_000_000):
            pass
    monkeypatch.setenv("HETSCHED_SWF_MAX_BYTES", "8000000")
    with pytest.raises(ModelError, match="exceeds the limit of 8,000,000 bytes"):
        read_swf(lying)
    monkeypatch.setenv("HETSCHED_SWF_MAX_BYTES", "a lot")
    with pytest.raises(ModelError, match="HETSCHED_SWF_MAX_BYTES: expected a positive number of bytes"):
        read_swf(lying)
    monkeypatch.delenv("HETSCHED_SWF_MAX_BYTES")
    zeros = tmp_path / "zeros.swf.gz"
    _bomb(zeros, bytes(1 << 20), 3000, declared=1000)  # 3 GB of zeros in ~3 MB
    with pytest.raises(ModelError, match="binary data"):
        read_swf(zeros)
    small = tmp_path / "small.swf"
    small.write_bytes(member[:len(line) * 100])
    assert len(read_swf(small, max_bytes=len(line) * 100)) == 100  # exactly at the limit is fine
    with pytest.raises(ModelError, match="exceeds the limit of 1,000 bytes"):
        read_swf(small, max_bytes=1000)
    assert len(read_swf(small, max_bytes=None)) == 100
    with pytest.raises(ModelError, match="max_bytes"):
        read_swf(small, max_bytes=0)


def test_a_line_without_end_is_refused_when_streaming(tmp_path):
    p = tmp_path / "long.swf"
    p.write_bytes(b"; Version: 2.2\n" + b"1" * (2 << 20))
    with pytest.raises(ModelError, match="a line longer than 1,048,576 bytes"):
        list(read_swf(p, chunksize=10))


def test_streaming_stops_early_muscle_reads_only_what_it_needs(tmp_path):
    """``muscle --swf LOG --jobs 1000`` reads the log in chunks and stops: a malformed line far after the
    first 1,000 jobs is never reached (reading the whole log stops there), and every job read is used or
    counted by reason."""
    from hetsched.muscle import MultiCluster
    from hetsched.muscle.swf import workload_from_swf

    n = 20_000
    body = np.full((n, 18), -1.0)
    body[:, 0], body[:, 1], body[:, 3] = np.arange(1, n + 1), np.arange(n) * 5.0, 100.0
    body[:, 4] = 2
    body[::7, 3] = 0  # run time 0: dropped
    body[3::11, 4] = -1  # size unknown (field 8 unknown too)
    p = tmp_path / "long.swf"
    with open(p, "w") as f:
        f.write("; Version: 2.2\n")
        np.savetxt(f, body, fmt=["%d", "%.1f", "%d", "%.1f"] + ["%d"] * 14)
        f.write("20001 1 -1 abc 2 -1 -1 2 -1 -1 1 1 1 -1 1 1 -1 -1\n")
    sys4 = MultiCluster((20, 16, 12, 10), (1.0, 1.2, 1.4, 1.6))
    wl = workload_from_swf(p, sys4, max_jobs=1000, seed=1)
    assert len(wl) == 1000
    m = wl.meta
    assert len(wl) + sum(m["dropped"].values()) == m["jobs_read"] and m["skipped"] == sum(m["dropped"].values())
    assert set(m["dropped"]) == {"run_time_zero", "size_unknown"} and m["jobs_read"] < 1300
    with pytest.raises(ModelError, match=r"long.swf:20002: field 4 'run_time': not a number"):
        workload_from_swf(p, sys4, seed=1)
