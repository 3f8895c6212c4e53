"""Faults in real dispatch (issue 15): nothing accepted is lost, nothing is reported twice.

Truths checked, independent of the dispatcher's own bookkeeping:

* every task id is reported exactly once (counted by an ``on_result`` callback
  and, across dispatcher kills, by the journal's single final row per id);
* a shell task's reported value is its own output (``echo k`` for task ``k``);
* a run that cannot finish never ends as a success: the unfinished tasks are
  counted, stay queued in the journal, and a rerun finishes them;
* the journal never writes into a file that is not its own, and rolls back a
  failed write (its content before and after a failed write is equal).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

import numpy as np
import pytest

from hetsched.errors import ModelError

distributed = pytest.importorskip("distributed")

from hetsched.dispatch.dispatcher import Dispatcher, Emulation  # noqa: E402
from hetsched.dispatch.emulate import Killer, local_cluster, replenish  # noqa: E402
from hetsched.dispatch.journal import Journal, JournalWriteError  # noqa: E402
from hetsched.dispatch.worker import KIND_EMULATE  # noqa: E402
from helpers import REPO_ROOT  # noqa: E402

REPO = REPO_ROOT
ENV = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "hetsched.cli", *map(str, args)], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


@pytest.fixture(scope="module")
def procs4():
    cluster, client = local_cluster(4, processes=True)
    yield cluster, client
    client.close()
    cluster.close()


# --------------------------------------------------------------------- worker kills
def _kill_campaign(cluster, client, target: int, seed: int, max_runs: int = 40, prefetch: float = 0.0):
    """Runs of ~3 s with a kill attempt every 0.15 s until ``target`` workers were killed in total."""
    rates = {str(k): [1.0, 2.0] for k in range(4)}
    tu = 0.01  # tasks of 5-10 ms
    rng = np.random.default_rng(seed)
    total = dict(killed=0, tasks=0, lost=0, duplicated=0, resubmitted=0, runs=0)
    for r in range(max_runs):
        client.wait_for_workers(4, timeout=120)
        seen: Counter = Counter()
        d = Dispatcher(client, ["a", "b"], rates, policy="gcmu", time_unit=tu, emulation=Emulation(rates, {}, tu),
                       timeout_factor=50.0, timeout_min=5.0, replenish=lambda: replenish(cluster),
                       replenish_after=2.0, prefetch=prefetch, adapt_arrivals=False, adapt_rates=False)
        n = 400
        offsets = np.cumsum(rng.exponential(3.0 / n, size=n))
        arr = [(float(offsets[k]), int(rng.integers(2)), KIND_EMULATE, float(rng.exponential(1.0))) for k in range(n)]
        killer = Killer(client, seed=[seed, r], cluster=cluster, limit=target - total["killed"])
        hooks = [(0.15 * (k + 1), killer) for k in range(int(offsets[-1] / 0.15))]
        res = d.run(arr, hooks=hooks, timeout=300,
                    on_result=lambda tid, c, ok, v: seen.__setitem__(tid, seen[tid] + 1))
        d.close()
        assert res.success, res.message
        total["killed"] += len(killer.killed)
        total["tasks"] += n
        total["lost"] += n - len(seen) + res.lost
        total["duplicated"] += sum(c > 1 for c in seen.values())
        total["resubmitted"] += res.resubmitted
        total["runs"] += 1
        if total["killed"] >= target:
            break
    return total


def test_twenty_worker_kills_nothing_lost_or_reported_twice(procs4):
    cluster, client = procs4
    total = _kill_campaign(cluster, client, target=20, seed=15, prefetch=0.0)
    print("kill campaign:", total)
    assert total["killed"] >= 20, total
    assert total["lost"] == 0 and total["duplicated"] == 0, total
    assert total["resubmitted"] >= 1, total  # kills did hit running tasks


@pytest.mark.slow
def test_hundred_worker_kills_with_and_without_prefetch(procs4):
    cluster, client = procs4
    a = _kill_campaign(cluster, client, target=60, seed=151, max_runs=120, prefetch=0.0)
    b = _kill_campaign(cluster, client, target=60, seed=152, max_runs=120, prefetch=0.05)
    print("kill campaign, pure pull:", a)
    print("kill campaign, prefetch 0.05 s:", b)
    assert a["killed"] + b["killed"] >= 100, (a, b)
    assert a["lost"] == b["lost"] == 0 and a["duplicated"] == b["duplicated"] == 0, (a, b)


def test_every_worker_gone_is_not_a_success_and_the_journal_resumes(tmp_path):
    """All workers leave for good: the run stops after worker_wait with the count; a rerun finishes."""
    db = tmp_path / "gone.db"
    cluster, client = local_cluster(2)
    rates = {"0": [1.0], "1": [1.0]}
    d = Dispatcher(client, ["a"], rates, policy="fcfs", time_unit=0.05, emulation=Emulation(rates, {}, 0.05),
                   journal=str(db), worker_wait=1.5, timeout_factor=None)
    d.add_many([("a", KIND_EMULATE, 1.0) for _ in range(40)])  # ~1 s of work on 2 workers
    threading.Timer(0.3, lambda: cluster.scale(0)).start()
    try:
        res = d.run(timeout=120)
    finally:
        d.close()
        client.close()
        cluster.close()
    assert not res.success and res.lost > 0
    assert "no worker for 1.5 s" in res.message and f"{res.lost} task(s) unfinished" in res.message
    counts = Journal(db, ["a"], lock=False).counts()
    assert counts.get("queued", 0) == res.lost and counts.get("done", 0) + res.lost == 40
    cluster, client = local_cluster(2)
    try:
        d = Dispatcher(client, ["a"], rates, policy="fcfs", time_unit=0.01, emulation=Emulation(rates, {}, 0.01),
                       journal=str(db))
        res2 = d.run(timeout=120)
        d.close()
    finally:
        client.close()
        cluster.close()
    assert res2.success and res2.completed == res.lost
    fin = Journal(db, ["a"], lock=False).finished()
    assert [r["id"] for r in fin] == list(range(40))


def test_lost_workers_are_started_again_by_replenish():
    cluster, client = local_cluster(2)
    rates = {"0": [1.0], "1": [1.0]}
    try:
        d = Dispatcher(client, ["a"], rates, policy="fcfs", time_unit=0.02, emulation=Emulation(rates, {}, 0.02),
                       replenish=lambda: cluster.scale(2), replenish_after=0.5, worker_wait=60,
                       timeout_factor=None)
        d.add_many([("a", KIND_EMULATE, 1.0) for _ in range(30)])
        # retire both workers for good: only replenish (scale back up) can finish the run
        threading.Timer(0.2, lambda: cluster.scale(0)).start()
        res = d.run(timeout=120)
        d.close()
    finally:
        client.close()
        cluster.close()
    assert res.success and res.completed == 30 and res.lost == 0
    assert res.extra["replenish_calls"] >= 1
    assert any(e["event"] == "joined" for e in res.events)


# --------------------------------------------------------------------- hanging worker
def _hang_on_worker_2(k):
    import time as _t

    from distributed import get_worker

    if str(get_worker().name) == "2":
        _t.sleep(4.0)  # hangs (long beyond its time-out) instead of dying
    return k * k


def test_hanging_worker_times_out_first_completion_wins():
    cluster, client = local_cluster(3)
    rates = {"0": [1.0], "1": [1.0], "2": [1.0]}
    seen: Counter = Counter()
    try:
        d = Dispatcher(client, ["a"], rates, policy="fcfs", time_unit=0.01, timeout_factor=5.0, timeout_min=0.2,
                       adapt_rates=False)
        ids = [d.add("a", _hang_on_worker_2, k) for k in range(12)]
        res = d.run(timeout=60, on_result=lambda tid, c, ok, v: seen.__setitem__(tid, seen[tid] + 1))
        d.close()
    finally:
        client.close()
        cluster.close()
    assert res.success and res.completed == 12 and res.lost == 0
    assert res.timeouts >= 1 and res.resubmitted >= 1
    assert all(seen[t] == 1 for t in ids) and len(seen) == 12
    assert [d.results[t] for t in ids] == [k * k for k in range(12)]


# --------------------------------------------------------------------- journal safety
def test_journal_refuses_a_file_that_is_not_a_database(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("my notes\n" * 10)
    with pytest.raises(ModelError, match="not a hetsched journal \\(not an SQLite database\\)"):
        Journal(p, ["a"])
    assert p.read_text() == "my notes\n" * 10


def test_journal_refuses_a_users_database_and_leaves_it_unchanged(tmp_path):
    p = tmp_path / "user.db"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE customers (name TEXT)")
    con.execute("INSERT INTO customers VALUES ('ada')")
    con.commit()
    con.close()
    before = p.read_bytes()
    with pytest.raises(ModelError, match="SQLite database but not a hetsched journal"):
        Journal(p, ["a"])
    assert p.read_bytes() == before
    con = sqlite3.connect(p)
    assert {r[0] for r in con.execute("SELECT name FROM sqlite_master")} == {"customers"}
    con.close()


def test_journal_refuses_a_corrupt_file(tmp_path):
    p = tmp_path / "c.db"
    j = Journal(p, ["a"])
    j.add_many([(k, 0, KIND_EMULATE, "x" * 500, 1.0) for k in range(200)])
    j.close()
    b = bytearray(p.read_bytes())
    b[3 * 4096: 3 * 4096 + 2000] = np.random.default_rng(0).integers(0, 256, 2000, dtype=np.uint8).tobytes()
    p.write_bytes(bytes(b))
    with pytest.raises(ModelError, match="corrupt"):
        Journal(p, ["a"])


def test_journal_locked_by_a_dispatcher_or_another_program(tmp_path):
    p = tmp_path / "l.db"
    j = Journal(p, ["a"])
    with pytest.raises(ModelError, match="in use by another dispatcher"):
        Journal(p, ["a"])
    j.close()
    other = sqlite3.connect(p, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(ModelError, match="locked by another program"):
        Journal(p, ["a"], busy_timeout=0.2)
    other.execute("ROLLBACK")
    other.close()
    Journal(p, ["a"]).close()  # free again


def test_journal_belongs_to_one_task_spec(tmp_path):
    p = tmp_path / "s.db"
    Journal(p, ["a"], spec="1" * 64).close()
    with pytest.raises(ModelError, match="belongs to another task specification"):
        Journal(p, ["a"], spec="2" * 64)
    Journal(p, ["a"], spec="1" * 64).close()


class _FullDisk:
    """An sqlite3 connection whose writes fail with SQLITE_FULL while ``full`` is set."""

    def __init__(self, db):
        self.db = db
        self.full = False
        self.failed = 0

    def executemany(self, *a):
        if self.full:
            self.failed += 1
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.executemany(*a)

    def __getattr__(self, name):
        return getattr(self.db, name)

    def __enter__(self):
        return self.db.__enter__()

    def __exit__(self, *exc):
        return self.db.__exit__(*exc)


def test_full_disk_stops_without_loss_then_resumes(tmp_path):
    db = tmp_path / "full.db"
    cluster, client = local_cluster(2)
    rates = {"0": [1.0], "1": [1.0]}
    seen: Counter = Counter()
    try:
        d = Dispatcher(client, ["a"], rates, policy="fcfs", time_unit=0.02, emulation=Emulation(rates, {}, 0.02),
                       journal=str(db), journal_retries=2)
        d.add_many([("a", KIND_EMULATE, 1.0) for _ in range(60)])
        wrapper = _FullDisk(d.journal.db)
        d.journal.db = wrapper

        def fill(dd):
            wrapper.full = True

        res = d.run(hooks=[(0.2, fill)], timeout=60,
                    on_result=lambda tid, c, ok, v: seen.__setitem__(tid, seen[tid] + 1))
        wrapper.full = False  # space freed
        d.journal.db = wrapper.db
        d.close()  # commits what it still holds
        done_before = Journal(db, ["a"], lock=False).counts().get("done", 0)
        assert not res.success and "disk is full" in res.message and "task(s) unfinished" in res.message
        assert wrapper.failed >= 3  # first attempt + 2 retries
        # resume: every task of the journal is done once, including those done but not committed
        d2 = Dispatcher(client, ["a"], rates, policy="fcfs", time_unit=0.01, emulation=Emulation(rates, {}, 0.01),
                        journal=str(db))
        assert d2.stats["submitted"] == 60 - done_before
        res2 = d2.run(timeout=60)
        d2.close()
    finally:
        client.close()
        cluster.close()
    assert res2.success and res2.lost == 0
    fin = Journal(db, ["a"], lock=False).finished()
    assert [r["id"] for r in fin] == list(range(60)) and all(r["state"] == "done" for r in fin)


_FSIZE_CHILD = textwrap.dedent("""
    import resource, sys
    from hetsched.dispatch.dispatcher import Dispatcher
    from hetsched.dispatch.emulate import local_cluster
    from hetsched.dispatch.journal import JournalWriteError
    from hetsched.dispatch.worker import KIND_CALL
    limit = int(sys.argv[2])
    cluster, client = local_cluster(2)
    d = Dispatcher(client, ["a"], {"0": [1.0], "1": [1.0]}, policy="fcfs", journal=sys.argv[1], journal_retries=1)
    d.add_many([("a", KIND_CALL, (str.__mul__, ("r", 1), {})) for _ in range(40)])  # small, fits
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))   # a full disk, for real
    try:
        d.add_many([("a", KIND_CALL, (str.__mul__, ("x" * 20000, 1), {})) for _ in range(40)])  # ~800 kB: refused
        print("ADDED")
    except JournalWriteError as exc:
        print("REFUSED", exc)
    res = d.run(timeout=60)
    d.close(); client.close(); cluster.close()
    print("RUN", res.success, res.completed, res.lost, res.message)
""")


def test_file_size_limit_refuses_new_tasks_keeps_the_journal(tmp_path):
    """A real full disk (RLIMIT_FSIZE): new tasks are refused whole, the run stops or ends, nothing is lost."""
    db = tmp_path / "fsize.db"
    cp = subprocess.run([sys.executable, "-c", _FSIZE_CHILD, str(db), str(256 * 1024)], capture_output=True,
                        text=True, env=ENV, timeout=180)
    out = cp.stdout
    assert "REFUSED journal: writing 40 row(s)" in out, (out, cp.stderr[-2000:])
    run = out.split("RUN ", 1)[1].split()
    ok, completed, lost = run[0] == "True", int(run[1]), int(run[2])
    assert completed + lost == 40 and (ok or "task(s) unfinished" in out), out  # never a silent success
    j = Journal(db, ["a"], lock=False)
    assert j.db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert sum(j.counts().values()) == 40  # the refused 40 were never accepted
    j.close()
    cluster, client = local_cluster(2)  # space again: resume
    try:
        d = Dispatcher(client, ["a"], {"0": [1.0], "1": [1.0]}, policy="fcfs", journal=str(db))
        res = d.run(timeout=60)
        d.close()
    finally:
        client.close()
        cluster.close()
    assert res.success and res.lost == 0
    fin = Journal(db, ["a"], lock=False).finished()
    assert [r["id"] for r in fin] == list(range(40)) and all(r["value"] == "r" for r in fin)


# --------------------------------------------------------------------- dispatcher kills (CLI)
def _taskfile(tmp_path, n, sleep=0.01):
    lines = ['policy = "fcfs"', "time_unit = 0.05", "[classes]", 'names = ["x"]', "[workers]", '"0" = [1.0]',
             '"1" = [1.0]']
    for k in range(n):
        lines += ["[[tasks]]", 'class = "x"', f'command = "sleep {sleep}; echo {k}"']
    tf = tmp_path / "tasks.toml"
    tf.write_text("\n".join(lines) + "\n")
    return tf


def _kill_when(proc, db, done_at, cls, limit=90.0):
    """SIGKILL ``proc`` once the journal holds ``done_at`` finished tasks (or it ends by itself)."""
    deadline = time.time() + limit
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                j = Journal(db, cls, lock=False, busy_timeout=0.5)
                n = j.counts().get("done", 0)
                j.close()
            except ModelError:
                n = 0
            if n >= done_at:
                break
        time.sleep(0.05)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        return True
    return False


def test_dispatcher_sigkilled_at_random_points_resumes_exactly_once(tmp_path):
    n = 120
    # tasks of 50 ms: on a quiet machine 10-ms tasks finished the whole file between two polls of the journal
    tf = _taskfile(tmp_path, n, sleep=0.05)
    db = tmp_path / "run.db"
    rng = np.random.default_rng(1515)
    points = sorted(int(x) for x in rng.integers(0, n - 10, size=3))  # kill after 'done' reaches each point
    kills = 0
    for p in points:
        proc = subprocess.Popen([sys.executable, "-m", "hetsched.cli", "dispatch", "run", str(tf), "--journal",
                                 str(db), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
        kills += _kill_when(proc, db, p, ["x"])
    assert kills >= 2
    cp = _cli("dispatch", "run", tf, "--journal", db, "--json")
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout)
    assert out["lost"] == 0
    ids = [r["id"] for r in out["results"]]
    assert ids == list(range(n))  # each task reported once
    assert all(r["state"] == "done" and r["value"]["stdout"].strip() == str(r["id"]) for r in out["results"])
    j = Journal(db, ["x"], lock=False)
    assert j.pending() == [] and sum(j.counts().values()) == n  # nothing accepted twice


def test_demo_journal_resumes_instead_of_resubmitting(tmp_path):
    db = tmp_path / "demo.db"
    args = ["dispatch", "demo", "--workers", "2", "--tasks", "150", "--rate", "60", "--journal", str(db), "--json"]
    proc = subprocess.Popen([sys.executable, "-m", "hetsched.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=ENV)
    assert _kill_when(proc, db, 40, ["c1", "c2", "c3", "c4"])
    before = Journal(db, ["c1", "c2", "c3", "c4"], lock=False).counts()
    cp = _cli(*args)
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout)
    assert out["resumed"] == sum(before.values()) and out["lost"] == 0
    assert out["submitted"] == 150 - before.get("done", 0)
    j = Journal(db, ["c1", "c2", "c3", "c4"], lock=False)
    assert j.counts() == {"done": 150}  # 150 rows: nothing resubmitted
    assert [r["id"] for r in j.finished()] == list(range(150))
    # the same journal with another configuration is refused before anything starts
    cp = _cli(*[a if a != "150" else "151" for a in args])
    assert cp.returncode == 2 and cp.stderr.count("\n") == 1 and "another task specification" in cp.stderr


# --------------------------------------------------------------------- exit status of dispatch run
def test_run_exits_nonzero_with_the_count_when_workers_vanish_then_resumes(tmp_path):
    n = 30
    lines = ['policy = "fcfs"', "[classes]", 'names = ["x"]', "[workers]", '"0" = [1.0]', '"1" = [1.0]']
    for k in range(n):
        lines += ["[[tasks]]", 'class = "x"', 'call = "time:sleep"', "args = [0.1]"]
    tf = tmp_path / "t.toml"
    tf.write_text("\n".join(lines) + "\n")
    db = tmp_path / "t.db"
    cluster, client = local_cluster(2)

    def retire_after_first_result():
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if Journal(db, ["x"], lock=False).counts().get("done", 0) >= 1:
                    break
            except ModelError:
                pass
            time.sleep(0.05)
        cluster.scale(0)

    try:
        threading.Thread(target=retire_after_first_result, daemon=True).start()
        from typer.testing import CliRunner

        from hetsched.cli import app

        r = CliRunner().invoke(app, ["dispatch", "run", str(tf), "--scheduler", cluster.scheduler_address,
                                     "--journal", str(db), "--worker-wait", "1", "--json"])
    finally:
        client.close()
        cluster.close()
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert out["lost"] > 0 and not out["success"]
    assert f"dispatch incomplete: {out['lost']} task(s) unfinished" in r.stderr
    assert Journal(db, ["x"], lock=False).counts().get("queued") == out["lost"]
    cp = _cli("dispatch", "run", tf, "--journal", db, "--json")
    assert cp.returncode == 0, cp.stderr
    assert [r["id"] for r in json.loads(cp.stdout)["results"]] == list(range(n))


# --------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("args, where", [
    (["--load", "0"], "--load"), (["--load", "1.5"], "--load"), (["--load", "nan"], "--load"),
    (["--seed", "-1"], "--seed"), (["--tasks", "5e7"], "--tasks"), (["--tasks", "abc"], "--tasks"),
    (["--tasks", "0"], "--tasks"), (["--workers", "0"], "--workers"), (["--workers", "1e9"], "--workers"),
    (["--rate", "inf"], "--rate"), (["--kill", "-2"], "--kill"), (["--prefetch", "-1"], "--prefetch"),
    (["--policy", "sjf"], "policy"), (["--resolve-every", "0"], "--resolve-every"),
    (["--resolve-every", "soon"], "--resolve-every"),
])
def test_demo_bad_arguments_one_line_exit_2(args, where):
    from typer.testing import CliRunner

    from hetsched.cli import app

    r = CliRunner().invoke(app, ["dispatch", "demo", *args])
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and where in r.stderr, r.stderr
    assert "Traceback" not in r.output


def test_demo_journal_on_foreign_files_exit_2_untouched(tmp_path):
    txt = tmp_path / "notes.txt"
    txt.write_text("hello")
    user = tmp_path / "user.db"
    con = sqlite3.connect(user)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = user.read_bytes()
    for p in (txt, user):
        cp = _cli("dispatch", "demo", "--tasks", "5", "--journal", p)
        assert cp.returncode == 2 and cp.stderr.count("\n") == 1 and "not a hetsched journal" in cp.stderr, cp.stderr
    assert txt.read_text() == "hello" and user.read_bytes() == before


def test_journal_write_is_all_or_nothing(tmp_path):
    """A write that fails midway commits none of its rows (explicit transaction, not row by row)."""
    j = Journal(tmp_path / "t.db", ["a"])
    j.add_many([(0, 0, KIND_EMULATE, 1.0, 1.0)])
    with pytest.raises(JournalWriteError, match="nothing of this write was committed"):
        j.add_many([(1, 0, KIND_EMULATE, 1.0, 2.0), (2, 0, KIND_EMULATE, 1.0, 3.0), (0, 0, KIND_EMULATE, 1.0, 4.0)])
    assert [p[0] for p in j.pending()] == [0]
    with pytest.raises(JournalWriteError):
        j.commit([(5, 0, KIND_EMULATE, 1.0, 5.0), (0, 0, KIND_EMULATE, 1.0, 5.0)],
                 [(0, "done", 1, "w", 9.0, 1, {})])
    assert [p[0] for p in j.pending()] == [0] and j.finished() == []
    j.close()
