"""MUSCLE (seed 002): truths, certificates and hand-worked examples."""

from __future__ import annotations

import gzip
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetsched.errors import ModelError
from hetsched.muscle import (
    POLICIES,
    TABLE1,
    CompositionTable,
    CPWeights,
    GAOptions,
    MultiCluster,
    WorkloadParams,
    check_schedule,
    comprehensive_performance,
    decode_schedule,
    generate_workload,
    mcp_lbf,
    moldable_time,
    simulate,
    titan_improve,
    workload_from_swf,
)
from hetsched.muscle import offered_load, schedule_violations
from hetsched.traces import read_swf
from hetsched.muscle.workload import bounded_pareto_mean, bounded_pareto_sample, evenly_spaced_sizes
from helpers import DATA_DIR, REPO_ROOT

DATA = DATA_DIR
SWF = DATA / "muscle_nasa_ipsc_excerpt.swf"


# --- CP (Eq. 1) on a hand-worked example ------------------------------------

def test_cp_hand_worked():
    # m = 2 computers free at t0 = 0. Order A, B. A: 2 computers, 2 s; B: 1 computer, 3 s, deadline 4.
    # A runs [0, 2] on both; B runs [2, 5]; makespan 5; idle = 2*5 - (2*2 + 1*3) = 3;
    # over-deadline = 5 - 4 = 1; CP = (3*5 + 1*3 + 4*1) / 8 = 22/8.
    cp, start, finish, avail = decode_schedule(
        [0.0, 0.0], 0.0, [0, 1], [2, 1], [2, 1], [2.0, 3.0], [10.0, 4.0], phi=0.05, weights=CPWeights(4, 3, 1))
    assert start.tolist() == [0.0, 2.0] and finish.tolist() == [2.0, 5.0]
    assert cp == pytest.approx(22 / 8)
    assert comprehensive_performance(5.0, 3.0, 1.0, CPWeights(4, 3, 1)) == pytest.approx(22 / 8)
    # B first: B [0,3] on one computer, A [3,5] on both: idle = 2*5 - 7 = 3 (computer 2 idle 0..3),
    # no lateness (B ends at 3): CP = (15 + 3 + 0)/8.
    cp2, *_ = decode_schedule([0.0, 0.0], 0.0, [1, 0], [2, 1], [2, 1], [2.0, 3.0], [10.0, 4.0],
                              weights=CPWeights(4, 3, 1))
    assert cp2 == pytest.approx(18 / 8)


def test_moldable_time_eq3():
    # k = 0 gives the preferable time; 4 -> 2 computers with phi 0.1: e * 4/2 * (1 + 2*0.1)
    assert moldable_time(10.0, 4, 4, 0.1) == pytest.approx(10.0)
    assert moldable_time(10.0, 4, 2, 0.1) == pytest.approx(24.0)
    assert moldable_time(10.0, 4, 8, 0.1) == pytest.approx(10.0 * 0.5 * 1.4)


def test_mcp_lbf():
    mcp, lbf = mcp_lbf(np.array([1.0, 3.0]))
    assert mcp == 2.0 and lbf == 1.0


# --- composition table (Algorithm 1, §4.2) -----------------------------------

def test_algorithm1_hand_example():
    t = CompositionTable(np.array([1, 2, 3]), 4)
    assert t.rows[1] == [(0,)]
    assert t.rows[2] == [(1,)]
    assert t.rows[3] == [(0, 1), (2,)]
    assert t.rows[4] == [(0, 2)]
    assert sorted(t.allocate(4)) == [0, 2]
    # row 4's only composition is used; row 3: (0,1) has 1 allocated job whose row-1
    # alternative set is just itself -> fails; row 2 gives job 1.
    assert t.allocate(4) == [1]
    assert t.allocate(4) == []


def test_search_uses_alternatives():
    # sizes 2, 2, 1, 1: row 2 = [(0,), (1,), (2, 3)], row 4 = [(0, 1)]. With job 0 taken,
    # row 4's composition is repaired by the alternative (2, 3) from row 2.
    t = CompositionTable(np.array([2, 2, 1, 1]), 4)
    t.check()
    assert t.rows[2] == [(0,), (1,), (2, 3)] and t.rows[4] == [(0, 1)]
    t.mark([0])
    assert sorted(t.allocate(4)) == [1, 2, 3]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=40), st.integers(12, 30), st.integers(0, 2**31))
def test_table_rows_are_exact_packings_and_search_is_exact(sizes, m_max, seed):
    rng = np.random.default_rng(seed)
    sizes = np.array(sizes)
    t = CompositionTable(sizes, m_max)
    t.check()
    t.mark(rng.choice(len(sizes), size=len(sizes) // 3, replace=False))
    while t.n_unallocated:
        r = int(rng.integers(1, m_max + 1))
        before = t.allocated.copy()
        got = t.allocate(r)
        free_sizes = sizes[~before]
        if free_sizes.min() > r:
            assert got == []
            continue
        assert got, "a job fits but none was allocated"
        assert len(set(got)) == len(got)
        assert not before[got].any(), "allocated a job twice"
        assert sizes[got].sum() <= r
        # largest non-empty row first: no single unallocated job could have filled more
        assert sizes[got].sum() >= free_sizes[free_sizes <= r].max()


# --- GA and schedules -------------------------------------------------------

def _instance(rng, n, m):
    pref = rng.integers(1, m + 1, n)
    base = rng.uniform(1, 10, n)
    dl = rng.uniform(2, 30, n)
    avail = np.sort(rng.uniform(0, 5, m))
    return avail, pref, base, dl


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(1, 8))
def test_ga_never_worse_than_seed(seed, n, m):
    rng = np.random.default_rng(seed)
    avail, pref, base, dl = _instance(rng, n, m)
    order = rng.permutation(n)
    seed_cp, *_ = decode_schedule(avail, 1.0, order, pref, pref, base, dl, phi=0.2)
    res = titan_improve(avail, 1.0, order, pref, base, dl, phi=0.2, options=GAOptions(max_gen=30), seed=seed)
    assert res.checked and res.status in (0, 2)  # stabilised or max_gen reached; never a failed re-check
    assert res.seed_cp == pytest.approx(seed_cp)
    assert res.cp <= seed_cp + 1e-9
    cp, s, f, _ = decode_schedule(avail, 1.0, res.perm, res.sizes, pref, base, dl, phi=0.2)
    assert cp == pytest.approx(res.cp) and np.allclose(s, res.start) and np.all(s >= 1.0)
    assert np.all(np.diff(res.trace) <= 1e-12), "the generation's best CP increased"


def test_ga_finds_brute_force_optimum_on_tiny_instance():
    rng = np.random.default_rng(7)
    avail, pref, base, dl = _instance(rng, 4, 3)
    best = np.inf
    for perm in itertools.permutations(range(4)):
        for sizes in itertools.product(range(1, 4), repeat=4):
            cp, *_ = decode_schedule(avail, 0.0, perm, sizes, pref, base, dl, phi=0.3)
            best = min(best, cp)
    res = titan_improve(avail, 0.0, np.arange(4), pref, base, dl, phi=0.3,
                        options=GAOptions(pop_size=40, max_gen=300, patience=60), seed=1)
    assert res.cp >= best - 1e-9
    assert res.cp == pytest.approx(best)


@pytest.fixture(scope="module")
def small_workload():
    return generate_workload(WorkloadParams(n_jobs=500), TABLE1, seed=11)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("use_ga", [False, True])
@pytest.mark.parametrize("trigger", ["backlog", "batch"])
def test_schedules_are_feasible(small_workload, policy, use_ga, trigger):
    ga = GAOptions(max_gen=20) if use_ga else None
    res = simulate(small_workload, TABLE1, policy, level=60, ga=ga, trigger=trigger, seed=5)
    check_schedule(res, small_workload, TABLE1, phi=0.05)
    assert res.metrics["jobs"].sum() == len(small_workload)
    assert res.MCP == pytest.approx(res.metrics["CP"].mean())
    if use_ga:
        assert res.ga_improvement >= -1e-6
    elif policy != "wrand":
        # the seed schedule MUSCLE/DLL built space by space is exactly the decoded seed order
        assert np.allclose(res.seed_start, res.start)


def test_batch_trigger_collects_level_jobs(small_workload):
    res = simulate(small_workload, TABLE1, "muscle", level=50, ga=None, trigger="batch")
    assert res.rounds == 10 and res.params["mean_batch"] == 50
    # Little's law on the collection queue: each job waits for the 50th arrival of its batch
    a = small_workload.arrival
    wait = np.concatenate([a[b + 49] - a[b:b + 50] for b in range(0, 500, 50)])
    assert res.params["mean_queue"] == pytest.approx(wait.sum() / (a[-1] - a[0]))


def test_load_for_level_hits_target():
    from hetsched.muscle.scheduler import load_for_level

    params = WorkloadParams(n_jobs=600)
    load, q = load_for_level(20, params, TABLE1, seed=3, iters=10)
    assert abs(q - 20) < 4
    wl = generate_workload(WorkloadParams(n_jobs=600, load=load), TABLE1, seed=np.random.SeedSequence(3))
    r = simulate(wl, TABLE1, "muscle", ga=None)
    assert r.params["mean_queue"] == pytest.approx(q)


def test_check_schedule_catches_overload(small_workload):
    res = simulate(small_workload, TABLE1, "dll", level=60, ga=None)
    res.start[:] = res.start.min()
    res.finish[:] = res.start + (res.finish - res.start)
    with pytest.raises(AssertionError):
        check_schedule(res, small_workload, TABLE1, phi=0.05)


def test_simulation_is_reproducible(small_workload):
    a = simulate(small_workload, TABLE1, "wrand", level=50, ga=GAOptions(max_gen=5), seed=3)
    b = simulate(small_workload, TABLE1, "wrand", level=50, ga=GAOptions(max_gen=5), seed=3)
    assert np.array_equal(a.start, b.start) and a.MCP == b.MCP


def test_single_cluster_all_policies_agree_without_ga(small_workload):
    one = MultiCluster((20,), (1.0,))
    wl = generate_workload(WorkloadParams(n_jobs=200), one, seed=2)
    r_dll = simulate(wl, one, "dll", level=40, ga=None)
    r_wr = simulate(wl, one, "wrand", level=40, ga=None)
    assert np.array_equal(r_dll.start, r_wr.start)  # both FCFS on the only cluster


# --- workload ---------------------------------------------------------------

def test_bounded_pareto_mean_matches_closed_form():
    rng = np.random.default_rng(0)
    for alpha in (1.0, 1.5):
        x = bounded_pareto_sample(rng, 200_000, alpha, 5.0, 100.0)
        assert x.min() >= 5.0 and x.max() <= 100.0
        half = 4 * x.std() / np.sqrt(x.size)
        assert abs(x.mean() - bounded_pareto_mean(alpha, 5.0, 100.0)) < half


def test_generator_respects_caption():
    p = WorkloadParams(n_jobs=3000, min_s=1, max_s=10, load=0.5)
    wl = generate_workload(p, TABLE1, seed=4)
    assert wl.size.min() >= 1 and wl.size.max() <= 10
    e = wl.exec_times(TABLE1)
    dr = (wl.deadline - wl.arrival) / e.max(axis=1) - 1
    assert dr.min() >= 1 - 1e-9 and dr.max() <= 5 + 1e-9
    lam = wl.meta["lambda"]
    assert abs(len(wl) / wl.arrival[-1] - lam) < 4 * lam / np.sqrt(len(wl))


def test_evenly_spaced_sizes():
    assert evenly_spaced_sizes(10, 42) == (10, 18, 26, 34, 42)
    assert evenly_spaced_sizes(26, 26) == (26,) * 5


def test_validation_messages():
    with pytest.raises(ModelError, match="rates"):
        MultiCluster((4, 4), (1.0,))
    with pytest.raises(ModelError, match=r"sizes\[1\]"):
        MultiCluster((4, 0), (1.0, 1.0))
    with pytest.raises(ModelError, match="max_s"):
        WorkloadParams(min_s=5, max_s=2)
    with pytest.raises(ModelError, match="max_s"):
        generate_workload(WorkloadParams(max_s=30), TABLE1)
    with pytest.raises(ModelError, match="policy"):
        simulate(generate_workload(WorkloadParams(n_jobs=5), TABLE1), TABLE1, "fcfs")
    with pytest.raises(ModelError, match="pop_size"):
        GAOptions(pop_size=1)
    with pytest.raises(ModelError, match="w_o"):
        CPWeights(w_o=-1)


# --- SWF --------------------------------------------------------------------

def test_swf_fixture_header_and_fields():
    df = read_swf(SWF)
    assert "Acknowledge" in df.attrs["header"]
    first = df.iloc[0]
    assert (first["job_id"], first["submit_time"], first["run_time"], first["allocated_procs"],
            first["requested_procs"], first["requested_time"]) == (1, 0.0, 1451.0, 128, -1, -1.0)


def test_swf_workload_mapping(tmp_path):
    sys4 = MultiCluster((64, 32, 32, 16), (1.0, 1.2, 1.4, 1.6))
    wl = workload_from_swf(SWF, sys4, seed=1)
    n_lines = len(read_swf(SWF))
    assert len(wl) + wl.meta["skipped"] == n_lines
    assert wl.meta["job_id"][0] == 1 and len(wl.meta["job_id"]) == len(wl)
    assert wl.arrival[0] == 0.0 and np.all(np.diff(wl.arrival) >= 0)
    assert wl.size.max() == 64 and wl.meta["clipped"] > 0  # 128-node jobs clipped
    # gzip and floats where integers are expected
    gz = tmp_path / "x.swf.gz"
    text = SWF.read_text().replace("  1451  128", "  1451.0  128.0")
    with gzip.open(gz, "wt") as f:
        f.write(text)
    wl2 = workload_from_swf(gz, sys4, seed=1)
    assert np.array_equal(wl2.x, wl.x) and np.array_equal(wl2.size, wl.size)
    res = simulate(wl, sys4, "muscle", level=40, ga=GAOptions(max_gen=10))
    check_schedule(res, wl, sys4, phi=0.05)


def test_swf_errors(tmp_path):
    with pytest.raises(ModelError, match="no such SWF file"):
        workload_from_swf(tmp_path / "nope.swf", TABLE1)
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 3\n")
    with pytest.raises(ModelError, match="18 fields"):
        workload_from_swf(bad, TABLE1)
    with pytest.raises(ModelError, match="deadline_rule"):
        workload_from_swf(SWF, TABLE1, deadline_rule="x")


def test_kernels_match_interpreted_python(small_workload, tmp_path):
    """The same kernels run by the interpreter (NUMBA_DISABLE_JIT=1) give the same schedule."""
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from hetsched.muscle import TABLE1, WorkloadParams, generate_workload, simulate\n"
        "wl = generate_workload(WorkloadParams(n_jobs=150), TABLE1, seed=11)\n"
        "r = simulate(wl, TABLE1, 'muscle', ga=None)\n"
        f"np.save({str(tmp_path / 'py.npy')!r}, np.vstack([r.start, r.finish, r.cluster]))\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    wl = generate_workload(WorkloadParams(n_jobs=150), TABLE1, seed=11)
    r = simulate(wl, TABLE1, "muscle", ga=None)
    assert np.array_equal(np.load(tmp_path / "py.npy"), np.vstack([r.start, r.finish, r.cluster]))


# --- full traces: relative tolerance, violations as a status, records, load (issue 13) ---

def _shifted(wl, shift):
    from hetsched.muscle import Workload

    return Workload(wl.arrival + shift, wl.size, wl.x, wl.deadline + shift, wl.source, dict(wl.meta))


def test_check_uses_a_relative_tolerance_at_large_times(small_workload):
    """Gaia's times reach 1.4e8 s, where doubles are 3e-8 s apart: a feasible schedule
    there must pass (an absolute 1e-9 s tolerance flagged rounding), a real overlap must not."""
    wl = _shifted(small_workload, 1.4e8)
    res = simulate(wl, TABLE1, "dll", ga=None)
    dur = res.finish - res.start
    E = wl.exec_times(TABLE1)[np.arange(len(wl)), res.cluster]
    rounding = np.abs(dur - moldable_time(E, wl.size, res.size, 0.05))
    assert rounding.max() > 1e-9  # the case the old absolute tolerance failed on
    assert schedule_violations(res, wl, TABLE1, 0.05) == []
    check_schedule(res, wl, TABLE1, phi=0.05)
    j = int(np.flatnonzero(res.cluster == 0)[1])
    res.start[j] -= 1.0  # one second earlier than its computers are free, and a wrong run time
    v = schedule_violations(res, wl, TABLE1, 0.05)
    assert any("Eq. 3 run time" in x for x in v)


@pytest.mark.parametrize("corrupt, rule", [
    (lambda r, w: r.cluster.__setitem__(3, -1), "never scheduled"),
    (lambda r, w: r.start.__setitem__(5, w.arrival[5] - 10.0), "before its arrival"),
    (lambda r, w: r.size.__setitem__(7, 99), "size within the cluster"),
    (lambda r, w: r.finish.__setitem__(9, r.finish[9] + 3.0), "Eq. 3 run time"),
])
def test_each_violation_is_reported_not_raised(small_workload, corrupt, rule):
    res = simulate(small_workload, TABLE1, "dll", ga=None)
    corrupt(res, small_workload)
    v = schedule_violations(res, small_workload, TABLE1, 0.05)
    assert any(rule in x for x in v), v


def test_capacity_violation_is_reported(small_workload):
    res = simulate(small_workload, TABLE1, "dll", level=60, ga=None)
    d = res.finish - res.start
    res.start[:] = res.start.min()
    res.finish[:] = res.start + d
    v = schedule_violations(res, small_workload, TABLE1, 0.05)
    assert any("cluster capacity" in x for x in v), v


def test_records_agree_with_the_metrics(small_workload):
    res = simulate(small_workload, TABLE1, "muscle", ga=GAOptions(max_gen=5), seed=1)
    rec = res.records(small_workload)
    assert len(rec) == len(small_workload) and rec["job"].is_unique
    busy = rec.assign(w=rec.processors * (rec.end - rec.start)).groupby("cluster")["w"].sum()
    np.testing.assert_allclose(busy.reindex(range(TABLE1.n), fill_value=0).to_numpy(), res.metrics["busy"],
                               rtol=1e-12)
    assert (rec.deadline_met == (rec.end <= rec.deadline)).all()  # no rounding case at these times
    late = rec.assign(o=np.maximum(rec.end - rec.deadline, 0)).groupby("cluster")["o"].sum()
    np.testing.assert_allclose(late.reindex(range(TABLE1.n), fill_value=0).to_numpy(),
                               res.metrics["over_deadline"], rtol=1e-12)


def test_offered_load_of_a_generated_workload():
    """The generator's definition of load (Poisson rate from the mean work) is recovered."""
    wl = generate_workload(WorkloadParams(n_jobs=20_000, load=0.7), TABLE1, seed=5)
    assert offered_load(wl, TABLE1) == pytest.approx(0.7, rel=0.05)


def test_progress_is_reported():
    wl = generate_workload(WorkloadParams(n_jobs=300), TABLE1, seed=2)
    calls = []
    simulate(wl, TABLE1, "dll", ga=None, progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1] == (300, 300) and all(d <= t for d, t in calls)


def test_cli_overload_clipping_records_and_status(tmp_path):
    import json

    import pandas as pd
    from typer.testing import CliRunner

    from hetsched.cli import app

    # 60 jobs of 10 s on 4 processors, one a second, on 2 x 4 computers: offered load 60*4*10/(8*59) = 5.08;
    # every 6th job asks for 8 processors (clipped to 4)
    log = tmp_path / "dense.swf"
    log.write_text("; Version: 2.2\n" + "".join(
        f"{k + 1} {k} -1 10 {8 if k % 6 == 0 else 4} -1 -1 4 -1 -1 1 1 1 -1 1 1 -1 -1\n" for k in range(60)))
    out = tmp_path / "rec.parquet"
    r = CliRunner().invoke(app, ["muscle", "run", "--swf", str(log), "--sizes", "4,4", "--rates", "1,1",
                                 "--no-ga", "--records", str(out), "--json"])
    assert r.exit_code == 0, r.output
    js = json.loads(r.stdout)
    assert js["clipped"] == 10
    assert js["offered_load"] == pytest.approx(60 * 4 * 10 / (8 * 59))
    assert "warning: the log offers load 5.08" in r.stderr and "10 job(s)" in r.stderr and "clipped to 4" in r.stderr
    # overloaded (offered load 5.08 >= 1): status 1, the numbers only as untrusted; feasible: no violation
    assert js["success"] is False and js["status"] == 1 and js["violations"] == [] and "overloaded" in js["message"]
    assert js["MCP"] is None and js["MCP_untrusted"] > 0
    rec = pd.read_parquet(out)
    assert len(rec) == js["jobs_total"] and set(rec.columns) >= {"job", "cluster", "processors", "start", "end",
                                                                "deadline_met"}
    assert int((~rec.deadline_met).sum()) == js["late_jobs"]


@pytest.mark.parametrize("args, match", [
    (lambda p: ["--swf", str(p)], "is a folder"),
    (lambda p: ["--swf", str(p / "fake.swf.gz")], "gzip"),
    (lambda p: ["--seed", "-1"], "--seed"),
    (lambda p: ["--jobs", "0"], "--jobs"),
    (lambda p: ["--records", str(p / "no" / "r.parquet")], "does not exist"),
    (lambda p: ["--records", str(p)], "must end in .parquet or .csv"),
    (lambda p: (p / "d.parquet").mkdir() or ["--records", str(p / "d.parquet")], "is a folder"),
    (lambda p: ["--sizes", "4,4", "--rates", "1,1", "--max-s", "10"], "--max-s: 10 exceeds the largest cluster"),
])
def test_cli_bad_input_one_line(tmp_path, args, match):
    from typer.testing import CliRunner

    from hetsched.cli import app

    (tmp_path / "fake.swf.gz").write_bytes(b"\x1f\x8bnot really gzip")
    r = CliRunner().invoke(app, ["muscle", "run", *args(tmp_path)])
    assert r.exit_code == 2 and match in r.output and "Traceback" not in r.output


def test_fig3_job_size_readings(tmp_path):
    """Seed 002 Fig. 3: the caption's sizes [1, a] and the Fig. 2 range [1, 10] are both
    offered; for [a, b] = [10, 42] the two readings are the same workload, so the same rows."""
    from hetsched.experiments import RunOptions, get

    rows = {}
    for reading in ("caption", "fig2"):
        opts = RunOptions(quick=True, seed=3, workers=1, backend="local", scheduler=None,
                          outdir=tmp_path / reading, progress=False,
                          extra={"n_jobs": 150, "no_ga": True, "job_sizes": reading})
        rows[reading] = get("muscle-fig3").run(opts).rows
    cap, f2 = rows["caption"], rows["fig2"]
    assert [r["max_s"] for r in cap if r["policy"] == "muscle"] == [10, 14, 18, 22, 26]
    assert {r["max_s"] for r in f2} == {10}
    same = [(a["MCP"], a["LBF"]) for a in cap if a["a"] == 10]
    assert same == [(b["MCP"], b["LBF"]) for b in f2 if b["a"] == 10]
    assert all(r["violations"] == 0 for r in cap + f2)
    from hetsched.errors import HetschedError

    with pytest.raises(HetschedError, match="job_sizes"):
        get("muscle-fig3").run(RunOptions(quick=True, seed=3, workers=1, backend="local", scheduler=None,
                                          outdir=tmp_path, progress=False, extra={"job_sizes": "x"}))


def test_swf_experiment_default_log_is_repository_relative():
    from hetsched.experiments.muscle import SWF_DEFAULT

    repo = REPO_ROOT
    assert SWF_DEFAULT.resolve() == (repo / ".." / "shared" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz").resolve()
    src = (repo / "src" / "hetsched" / "experiments" / "muscle.py").read_text()
    assert "/work/" not in src


def test_same_log_policy_and_seed_give_identical_records():
    wl = workload_from_swf(SWF, MultiCluster((64, 32, 16, 16), (1.0, 1.2, 1.4, 1.6)), seed=4)
    sysm = MultiCluster((64, 32, 16, 16), (1.0, 1.2, 1.4, 1.6))
    a = simulate(wl, sysm, "wrand", ga=GAOptions(max_gen=8), seed=9).records(wl)
    b = simulate(wl, sysm, "wrand", ga=GAOptions(max_gen=8), seed=9).records(wl)
    c = simulate(wl, sysm, "wrand", ga=GAOptions(max_gen=8), seed=10).records(wl)
    import pandas as pd

    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    assert (a["swf_job"].to_numpy() == wl.meta["job_id"]).all()
