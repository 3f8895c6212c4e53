"""Dispatch under hostile conditions (issues 23, 24): Ctrl-C, a worker killed while the cluster starts,
huge sizes estimated up front, and the worker-rates race of ``dispatch bench``.

Truths checked: Ctrl-C of ``dispatch run`` prints exactly one line and leaves a
sound journal; a worker process killed while the ``LocalCluster`` starts ends
in a running cluster or one error line, never an internal error; runs too big
for the host are refused (or warned about) with their estimate before anything
starts; ``Client.scheduler_info()`` does answer without workers under a fast
background refresh (the cause of the race), the dispatcher's membership query
never does, and ``dispatch bench`` succeeds under that refresh.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from hetsched.errors import ModelError

distributed = pytest.importorskip("distributed")

from hetsched.dispatch import budget  # noqa: E402
from hetsched.dispatch.journal import Journal  # noqa: E402
from helpers import REPO_ROOT  # noqa: E402

REPO = REPO_ROOT
ENV = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))


# --------------------------------------------------------------------- Ctrl-C
def test_ctrl_c_of_dispatch_run_prints_one_line_and_keeps_the_journal(tmp_path):
    n = 40
    lines = ['policy = "fcfs"', "[classes]", 'names = ["x"]', "[workers]", '"0" = [1.0]', '"1" = [1.0]']
    for _ in range(n):
        lines += ["[[tasks]]", 'class = "x"', 'command = "sleep 0.2"']
    tf = tmp_path / "t.toml"
    tf.write_text("\n".join(lines) + "\n")
    db = tmp_path / "j.db"
    proc = subprocess.Popen([sys.executable, "-m", "hetsched.cli", "dispatch", "run", str(tf), "--journal", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.time() + 90
    while time.time() < deadline and proc.poll() is None:  # interrupt in the middle of the run
        try:
            j = Journal(db, ["x"], lock=False, busy_timeout=0.5)
            done = j.counts().get("done", 0)
            j.close()
        except ModelError:
            done = 0
        if done >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err == "interrupted\n", err  # one line: no Dask traceback before it
    j = Journal(db, ["x"], lock=False)
    assert j.db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    counts = j.counts()
    assert sum(counts.values()) == n and counts.get("done", 0) >= 2
    j.close()


# --------------------------------------------------------------------- a worker killed while the cluster starts
_KILL_AT_START = textwrap.dedent("""
    import os, signal, threading, time
    import psutil

    def killer():  # SIGKILL the first worker process the moment it exists
        me = psutil.Process()
        deadline = time.time() + 60
        while time.time() < deadline:
            for p in me.children(recursive=True):
                try:
                    if "--multiprocessing-fork" in p.cmdline():
                        os.kill(p.pid, signal.SIGKILL)
                        print("KILLED", flush=True)
                        return
                except (psutil.Error, ProcessLookupError):
                    pass
            time.sleep(0.002)

    if __name__ == "__main__":
        from hetsched.dispatch.emulate import local_cluster
        from hetsched.errors import ModelError
        threading.Thread(target=killer, daemon=True).start()
        try:
            cluster, client = local_cluster(1, processes=True)
        except ModelError as exc:
            print("REFUSED", exc, flush=True)
        else:
            from hetsched.dispatch.dasklayer import cluster_workers
            print("STARTED", len(cluster_workers(client, wait=30, n=1)), flush=True)
            client.close()
            cluster.close()
""")


def test_worker_killed_while_the_cluster_starts(tmp_path):
    script = tmp_path / "kill_at_start.py"
    script.write_text(_KILL_AT_START)
    cp = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=ENV, timeout=300)
    assert cp.returncode == 0, cp.stderr[-3000:]
    out = cp.stdout
    assert "KILLED" in out, out
    assert "STARTED 1" in out or ("REFUSED workers: the local Dask cluster" in out and out.count("\n") == 2), out
    assert "Traceback" not in cp.stderr, cp.stderr[-3000:]


# --------------------------------------------------------------------- huge sizes: estimated up front
def test_huge_bench_and_demo_sizes_are_estimated_up_front(monkeypatch):
    from typer.testing import CliRunner

    from hetsched.cli import app

    monkeypatch.setattr(budget, "_available_mib", lambda: 16_000.0)
    with pytest.raises(ModelError, match=r"--workers: 256 worker processes need about 19,260 MiB"):
        budget.check_bench_budget(5000, 3, 0.05, workers=256, processes=True)
    est = budget.check_bench_budget(5000, 3, 0.05, workers=256, processes=False)  # threads: runs, with a warning
    assert budget.WARN_SECONDS < est < budget.BENCH_BUDGET_SECONDS
    assert budget.check_bench_budget(5000, 3, 0.05, workers=4) < budget.WARN_SECONDS  # the default: no warning
    with pytest.raises(ModelError, match=r"--workers: 256 worker processes"):
        budget.check_demo_budget(200, 100.0, workers=256, processes=True)  # a demo with --kill uses processes
    for args, what in ((["bench", "--workers", "256", "--tasks", "200000"], "on 256 workers take about"),
                       (["bench", "--workers", "256", "--processes"], "worker processes need about"),
                       (["demo", "--workers", "256", "--kill", "1"], "worker processes need about"),
                       (["demo", "--workers", "256", "--tasks", "100000", "--rate", "1000"], "take about")):
        r = CliRunner().invoke(app, ["dispatch", *args])
        assert r.exit_code == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.output
        assert what in r.stderr, r.stderr


# --------------------------------------------------------------------- the worker-rates race (issue 24)
def test_rates_race_cause_and_fix():
    import dask

    from hetsched.dispatch.bench import run_bench
    from hetsched.dispatch.dasklayer import cluster_workers
    from hetsched.dispatch.emulate import close_quietly, local_cluster

    # a background refresh every millisecond makes the race of a 2-second refresh happen at once
    with dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}):
        cluster, client = local_cluster(2)
        try:
            empty_info = sum(not client.scheduler_info(n_workers=-1)["workers"] for _ in range(300))
            empty_ours = sum(len(cluster_workers(client)) != 2 for _ in range(300))
        finally:
            close_quietly(client, cluster)
        out = run_bench(2, 100, repeats=1)
    assert empty_info > 0  # the cause: the client's cached view sometimes has no workers
    assert empty_ours == 0  # read on the scheduler: always the two workers
    assert out["lost"] == 0 and out["duplicated"] == 0 and out["tasks_per_second"] > 0
    json.dumps(out)
