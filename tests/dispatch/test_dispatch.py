"""Real dispatch on Dask LocalClusters (loopback only): faults, journal, errors.

Truths checked: every accepted task is reported done exactly once whatever is
killed (counts and ids from the dispatcher and from the SQLite journal); the
LPAS_DG support of the thesis's worked example (§3.3: alpha = [1, 1.5],
mu = [[9, 5], [2, 1]] gives delta*_11 = 0, so machine 1 never runs class 1);
the decision rule is the simulator's own function.
"""

from __future__ import annotations

import operator
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from hetsched.errors import ModelError, UnstableError

distributed = pytest.importorskip("distributed")

from hetsched.dispatch.dispatcher import Dispatcher, Emulation  # noqa: E402
from hetsched.dispatch.emulate import Killer, local_cluster, poisson_arrivals  # noqa: E402
from hetsched.dispatch.journal import Journal  # noqa: E402
from hetsched.dispatch.worker import KIND_EMULATE  # noqa: E402

RATES3 = {"0": [2.0, 1.0], "1": [1.0, 3.0], "2": [2.0, 2.0]}


@pytest.fixture(scope="module")
def threads():
    cluster, client = local_cluster(3, processes=False)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def procs():
    cluster, client = local_cluster(3, processes=True)
    yield client
    client.close()
    cluster.close()


def _wait_workers(client, n=3):
    client.wait_for_workers(n, timeout=60)


def _check_exactly_once(d, res, n):
    assert res.success, res.message
    assert res.submitted == n
    assert res.completed == n and res.lost == 0 and res.failed == 0
    assert sorted(d.results) == list(range(n))  # each id reported once
    states = [t.state for t in d.tasks.values()]
    assert states.count(2) == n


# --------------------------------------------------------------------- decisions
@pytest.mark.parametrize("prefetch", [0.0, 0.5])
def test_lpas_dg_respects_lp_support(threads, prefetch):
    # the thesis's example (§3.3): machine 1 = worker "0", machine 2 = worker "1";
    # worker "2" has no rates and is ignored
    rates = {"0": [9.0, 2.0], "1": [5.0, 1.0]}
    alpha = [1.0, 1.5]
    tu = 0.01
    d = Dispatcher(threads, ["1", "2"], rates, policy="lpas-dg", alpha=alpha, time_unit=tu,
                   emulation=Emulation(rates, {}, tu), adapt_arrivals=False, adapt_rates=False,
                   ignore_unknown_workers=True, prefetch=prefetch)
    assert d.lam == pytest.approx(1.7647, abs=1e-4)
    if prefetch:  # expected task times 1/(a mu) = 1.1-20 ms: several tasks decided ahead per machine
        assert d.machines["0"].depth > 1 and d.machines["1"].depth > 1
    assert d.machines["0"].eligible.tolist() == [False, True]  # delta*_11 = 0
    assert d.machines["1"].eligible.tolist() == [True, True]
    arr = poisson_arrivals(alpha, 120, tu, seed=1)
    res = d.run(arr)
    _check_exactly_once(d, res, 120)
    ran_on_0 = [t.cls for t in d.tasks.values() if t.worker == "0"]
    assert ran_on_0 and 0 not in ran_on_0
    assert {t.worker for t in d.tasks.values()} <= {"0", "1"}
    d.close()


def _order_run(client, policy, *, prefetch=0.0, one_worker=True, n=24, seed=4):
    """A queue builds behind a long first task; returns tasks sorted by id (= arrival order)."""
    rates = {"0": [2.0, 1.0]} if one_worker else RATES3
    tu = 0.01
    d = Dispatcher(client, ["a", "b"], rates, policy=policy, time_unit=tu,
                   emulation=Emulation(rates, {}, tu), ignore_unknown_workers=one_worker, adapt_arrivals=False,
                   adapt_rates=False, timeout_factor=None, prefetch=prefetch)
    rng = np.random.default_rng(seed)
    arr = [(0.0, "a", KIND_EMULATE, 30.0)]  # ~0.15 s: the others queue up behind it
    arr += [(0.005 * k, ["a", "b"][int(rng.integers(2))], KIND_EMULATE, 0.5) for k in range(1, n)]
    res = d.run(arr, timeout=60)
    _check_exactly_once(d, res, n)
    tasks = [d.tasks[k] for k in range(n)]
    d.close()
    return tasks


def test_fcfs_single_worker_starts_tasks_in_arrival_order(threads):
    # FCFS (thesis §3.1): the machine takes the task that arrived first, whatever its class
    tasks = _order_run(threads, "fcfs")
    assert {t.worker for t in tasks} == {"0"}
    starts = [t.times["t4"] for t in tasks]
    assert starts == sorted(starts)  # start order on the one worker = arrival order
    assert len({t.cls for t in tasks}) == 2


def test_fcfs_with_prefetch_keeps_arrival_order(threads):
    tasks = _order_run(threads, "fcfs", prefetch=0.05)
    starts = [t.times["t4"] for t in tasks]
    assert starts == sorted(starts)


def test_gcmu_is_fifo_within_each_class(threads):
    # Gcmu picks the class, never a task inside it: per class, starts follow arrivals
    tasks = _order_run(threads, "gcmu")
    for c in (0, 1):
        starts = [t.times["t4"] for t in tasks if t.cls == c]
        assert starts == sorted(starts)
    # ... but not across classes (mu = [2, 1] favours class a): the FCFS check above is not vacuous
    starts = [t.times["t4"] for t in tasks]
    assert starts != sorted(starts)


def test_fcfs_many_workers_decide_in_arrival_order(threads):
    # three workers: the decisions (t3, the submission) follow arrival order
    tasks = _order_run(threads, "fcfs", one_worker=False, n=40)
    t3 = [t.times["t3"] for t in tasks]
    assert t3 == sorted(t3)
    assert len({t.worker for t in tasks}) == 3


def test_callables_commands_and_user_errors(threads):
    d = Dispatcher(threads, ["x"], {k: [1.0] for k in RATES3}, policy="gcmu")
    i1 = d.add("x", operator.add, 2, 3)
    i2 = d.add("x", command="echo hetsched")
    i3 = d.add("x", operator.truediv, 1, 0)  # the user's code fails: failed, not lost
    res = d.run(timeout=60)
    assert res.completed == 2 and res.failed == 1 and res.lost == 0
    assert d.results[i1] == 5
    assert d.results[i2]["stdout"].strip() == "hetsched"
    assert "ZeroDivisionError" in d.results[i3]
    d.close()


# --------------------------------------------------------------------- faults
def test_kill_worker_mid_task_every_task_once(procs):
    _wait_workers(procs)
    tu = 0.05
    em = Emulation(RATES3, {}, tu)
    d = Dispatcher(procs, ["a", "b"], RATES3, policy="gcmu", alpha=[1.0, 1.0], time_unit=tu, emulation=em,
                   timeout_factor=None)
    arr = [(0.0, k % 2, KIND_EMULATE, 3.0) for k in range(12)]  # ~0.1 s tasks, all busy at t = 0.05
    killer = Killer(procs, seed=3)
    res = d.run(arr, hooks=[(0.05, killer)], timeout=120)
    assert len(killer.killed) == 1
    assert any(e["event"] == "left" for e in res.events)
    assert res.resubmitted >= 1  # the killed task went back to its queue
    _check_exactly_once(d, res, 12)
    d.close()


def test_thousand_tasks_random_kills_none_lost(procs):
    _wait_workers(procs)
    classes, rates = ["a", "b"], RATES3
    tu = 0.004  # mean task 2-4 ms
    alpha = np.array([150.0, 150.0]) * tu  # ~300 tasks/s in total (load ~0.35)
    em = Emulation(rates, {}, tu)
    d = Dispatcher(procs, classes, rates, policy="lpas-dg", alpha=alpha, time_unit=tu, emulation=em,
                   timeout_factor=50.0, timeout_min=3.0)
    arr = poisson_arrivals(alpha, 1000, tu, seed=7)
    span = arr[-1][0]
    killer = Killer(procs, seed=11)
    hooks = [(span * f, killer) for f in (0.2, 0.5, 0.8)]
    res = d.run(arr, hooks=hooks, timeout=180)
    assert len(killer.killed) >= 2
    _check_exactly_once(d, res, 1000)
    d.close()


def test_silent_worker_times_out_task_done_once(threads):
    # worker "2" is estimated fast but really 200x slower: its task times out and is
    # given to another worker; whichever attempt finishes first is the result.
    tu = 0.01
    est = {"0": [1.0], "1": [1.0], "2": [50.0]}
    true = {"0": [1.0], "1": [1.0], "2": [0.04]}
    d = Dispatcher(threads, ["a"], est, policy="gcmu", time_unit=tu, emulation=Emulation(true, {}, tu),
                   timeout_factor=5.0, timeout_min=0.05, adapt_rates=False)
    res = d.run([(0.0, "a", KIND_EMULATE, 1.0) for _ in range(6)], timeout=60)
    assert res.timeouts >= 1
    _check_exactly_once(d, res, 6)
    d.close()


# --------------------------------------------------------------------- journal
def test_journal_roundtrip_and_single_final_state(tmp_path):
    j = Journal(tmp_path / "j.db", ["a", "b"])
    j.add_many([(0, 0, KIND_EMULATE, 1.0, 10.0), (1, 1, KIND_EMULATE, 2.0, 11.0)])
    assert [p[0] for p in j.pending()] == [0, 1]
    j.finish_many([(0, "done", 1, "w", 12.0, 42, {"t7": 12.0})])
    j.finish_many([(0, "done", 2, "w2", 13.0, 43, {})])  # a second report is ignored
    fin = j.finished()
    assert len(fin) == 1 and fin[0]["value"] == 42 and fin[0]["worker"] == "w"
    assert [p[0] for p in j.pending()] == [1]
    j.close()
    with pytest.raises(ModelError, match="classes"):
        Journal(tmp_path / "j.db", ["a", "c"])


_CHILD = textwrap.dedent("""
    import sys
    from hetsched.dispatch.dispatcher import Dispatcher, Emulation
    from hetsched.dispatch.emulate import local_cluster
    from hetsched.dispatch.worker import KIND_EMULATE
    rates = {"0": [1.0], "1": [1.0]}
    cluster, client = local_cluster(2)
    d = Dispatcher(client, ["a"], rates, policy="fcfs", time_unit=0.05, emulation=Emulation(rates, {}, 0.05),
                   journal=sys.argv[1])
    d.add_many([("a", KIND_EMULATE, 1.0) for _ in range(60)])
    print("accepted", flush=True)
    d.run()
""")


def test_dispatcher_restart_resumes_from_journal(tmp_path, threads):
    db = tmp_path / "restart.db"
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "accepted"
        deadline = time.time() + 60
        while time.time() < deadline:
            done = Journal(db, ["a"], lock=False).counts().get("done", 0)
            if done >= 10:
                break
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)  # the dispatcher dies mid-run
    finally:
        child.wait(30)
    before = Journal(db, ["a"], lock=False).counts()
    assert before.get("done", 0) >= 10 and before.get("queued", 0) > 0
    rates = {"0": [1.0], "1": [1.0], "2": [1.0]}
    d = Dispatcher(threads, ["a"], rates, policy="fcfs", time_unit=0.01, emulation=Emulation(rates, {}, 0.01),
                   journal=str(db))
    assert d.stats["submitted"] == before["queued"]
    res = d.run(timeout=60)
    assert res.lost == 0 and res.completed == before["queued"]
    j = Journal(db, ["a"], lock=False)
    fin = j.finished()
    assert [r["id"] for r in fin] == list(range(60)) and all(r["state"] == "done" for r in fin)
    assert j.pending() == []
    d.close()


# --------------------------------------------------------------------- errors
def test_clear_errors(threads):
    with pytest.raises(ModelError, match="no execution rates for worker"):
        Dispatcher(threads, ["a"], {"0": [1.0], "1": [1.0]}, policy="gcmu")
    with pytest.raises(ModelError, match="rates\\['0'\\]"):
        Dispatcher(threads, ["a", "b"], {"0": [1.0], "1": [1.0], "2": [1.0]}, policy="gcmu")
    with pytest.raises(UnstableError, match="lambda\\* = 0.6"):
        Dispatcher(threads, ["a"], {"0": [1.0], "1": [1.0], "2": [1.0]}, policy="lpas-dg", alpha=[5.0])
    with pytest.raises(ModelError, match="needs the classes' arrival rates"):
        Dispatcher(threads, ["a"], {"0": [1.0], "1": [1.0], "2": [1.0]}, policy="lpas-dg")
    with pytest.raises(ModelError, match="policy"):
        Dispatcher(threads, ["a"], {"0": [1.0], "1": [1.0], "2": [1.0]}, policy="sjf")
    d = Dispatcher(threads, ["a"], {"0": [1.0], "1": [1.0], "2": [1.0]}, policy="gcmu")
    with pytest.raises(ModelError, match="unknown class 'zz'"):
        d.add("zz", operator.add, 1, 2)
    with pytest.raises(ModelError, match="exactly one"):
        d.add("a")
    d.close()


def test_arrival_drift_resolves_lp(threads):
    tu = 0.002
    rates = {"0": [4.0, 1.0], "1": [1.0, 4.0], "2": [2.0, 2.0]}
    d = Dispatcher(threads, ["a", "b"], rates, policy="lpas-dg", alpha=[1.0, 1.0], time_unit=tu,
                   emulation=Emulation(rates, {}, tu), monitor_interval=0.3, min_samples=10, adapt_rates=False)
    solves = d.state.monitor.solves
    arr = poisson_arrivals([3.0, 1.0], 300, tu, seed=5)  # class a arrives 3x faster than estimated
    res = d.run(arr, timeout=60)
    drift = [e for e in res.events if e["event"] == "drift" and e["what"] == "alpha"]
    assert drift and res.lp_solves > solves
    assert d.alpha[0] > 2.0 * d.alpha[1]  # the estimate followed the observation
    _check_exactly_once(d, res, 300)
    d.close()


def test_cli_demo_json_and_errors():
    import json

    from typer.testing import CliRunner

    from hetsched.cli import app

    r = CliRunner().invoke(app, ["dispatch", "demo", "--workers", "2", "--tasks", "40", "--rate", "200",
                                 "--resolve-every", "0.5", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    for k in ("submitted", "completed", "lost", "resubmitted", "policy", "mean_response", "per_class",
              "status", "success", "message", "seconds"):
        assert k in out
    assert out["submitted"] == out["completed"] == 40 and out["lost"] == 0
    assert out["status"] == 0 and out["success"] is True
    r = CliRunner().invoke(app, ["dispatch", "demo", "--policy", "nope", "--json"])
    assert r.exit_code == 2 and "error: policy" in r.output and "Traceback" not in r.output
