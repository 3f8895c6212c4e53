"""`hetsched mdp coalloc`: bad options, stability verdicts, memory refusal, pymdptoolbox export round trip.

Truths: pymdptoolbox's own policy iteration on the exported arrays (another
implementation); a direct simulation of the saturated cluster for the Local
capacity, and its closed forms at p = 0 and p = 1; a brute-force search over
the co-allocated fraction for the fluid bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from hetsched.mdp.coalloc import CoallocParams, solve_coalloc
from hetsched.mdp.stability import coalloc_stability, fluid_max_rho1, local_capacity


def _cli(*args, cwd=None, timeout=300):
    """``hetsched mdp coalloc ARGS`` as a real process (a hang would hit the timeout)."""
    return subprocess.run([sys.executable, "-m", "hetsched.cli", "mdp", "coalloc", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def _run(*args, cwd):
    """The same in-process (faster); returns (exit code, stdout, stderr)."""
    import os

    from typer.testing import CliRunner

    from hetsched.cli import app

    old = os.getcwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(app, ["mdp", "coalloc", *args])
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


BAD = [
    (["--rho", "nan"], "--rho"), (["--rho", "-0.1"], "--rho"), (["--rho1", "inf", "--rho2", "0.5"], "--rho1"),
    (["--mu1", "0"], "--mu1"), (["--mu2", "-1"], "--mu2"), (["--mu3", "nan"], "--mu3"), (["--p", "1.5"], "--p"),
    (["--p", "nan"], "--p"), (["--c1", "-2"], "--c1"), (["--c2", "inf"], "--c2"), (["--beta", "0"], "--beta"),
    (["--delta", "0"], "--delta"), (["--nu", "-1"], "--nu"), (["--eps", "nan"], "--eps"),
    (["--method", "simplex"], "--method"), (["--self-loop", "mid"], "--self-loop"),
    (["--boundary", "wrap"], "--boundary"), (["--mu1", "1e300"], "--mu1"), (["--rho", "1e10"], "--rho"),
    (["--beta", "1e-300"], "--beta"), (["--rho", "1e5"], "differ by more than"),
    (["--mu1", "1e5", "--mu2", "1e-5"], "differ by more than"), (["--nu", "1e300"], "--nu"), (["--eps", "1e-300"], "--eps"), (["--delta", "5000"], "--delta 5000"),
    (["--delta", "100000"], "--delta 100000"), (["--export", "m.txt"], "--export"),
]


@pytest.mark.parametrize("args,name", BAD)
def test_bad_options_one_line_exit_2(tmp_path, monkeypatch, args, name):
    from typer.testing import CliRunner

    from hetsched.cli import app

    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["mdp", "coalloc", *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], r.stderr
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert r.stdout == ""


def test_delta_refusal_gives_the_estimate(tmp_path):
    r = _cli("--delta", "5000", cwd=tmp_path, timeout=60)       # a real process: refused, not hung
    assert r.returncode == 2 and "300,090,006 states" in r.stderr and "GB" in r.stderr


def test_overload_is_refused_at_the_fluid_bound(tmp_path):
    """No policy can carry the load: one line naming the option, value and bound; exit 2 (issue 15).
    Truth: the fluid bound by brute force over the co-allocated fraction (as below), rho2 >= 1."""
    r = _run("--rho", "1", "--delta", "4", cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and r.stdout == "" and len(lines) == 1, r.stderr
    assert lines[0].startswith("error: --rho: 1 is at or above the capacity of every policy") and \
        "--allow-overload" in lines[0]
    r = _run("--rho1", "0.5", "--rho2", "1.2", "--delta", "4", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: --rho2: 1.2 ") and "rho2 < 1" in r.stderr
    p, mu1, mu3, rho2 = 0.6, 1.0, 0.7, 0.5
    fs = np.linspace(0, 1, 20001)[1:]
    lam = np.minimum(2 / (p / mu1 + (1 - p) * (1 - fs) * 2 / mu1 + (1 - p) * fs / mu3),
                     (1 - rho2) * mu3 / ((1 - p) * fs))
    bound = max(lam.max(), 2 / (p / mu1 + (1 - p) * 2 / mu1)) * (p + 2 * (1 - p)) / (2 * mu1)
    above, below = f"{bound * 1.001:.6f}", f"{bound * 0.999:.6f}"
    r = _run("--rho1", above, "--rho2", "0.5", "--delta", "4", cwd=tmp_path)
    assert r.returncode == 2 and f"--rho1: {float(above):g} is at or above" in r.stderr, r.stderr
    assert f"rho1 < {bound:.4g}" in r.stderr
    r = _run("--rho1", below, "--rho2", "0.5", "--delta", "4", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stable"] is None and out["stability"]["policies"] == {"local": False, "some": None, "optimal": None}


def test_overloaded_is_reported_unstable(tmp_path):
    """With --allow-overload the truncated model is solved anyway, reported unstable (the former default)."""
    r = _run("--rho", "1.5", "--delta", "8", "--json", "--allow-overload", cwd=tmp_path)
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert out["stable"] is False and "every policy" in out["stability"]["message"]
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warn) == 1 and "unstable under every policy" in warn[0]
    assert out["stability"]["policies"] == {"local": False, "some": False, "optimal": False}
    r = _run("--rho", "0.7", "--delta", "8", "--json", cwd=tmp_path)
    out = json.loads(r.stdout)
    assert out["stable"] is True and "warning" not in r.stderr
    assert out["stability"]["policies"] == {"local": True, "some": True, "optimal": None}


def _saturated_throughput_sim(p, mu1, n_events, seed):
    """Event-by-event simulation of cluster 1 with an endless FCFS queue (no co-allocation)."""
    rng = np.random.default_rng(seed)
    x1 = x2 = 0
    head = 1 if rng.random() < p else 2
    t = 0.0
    done = 0
    for _ in range(n_events):
        while 2 - x1 - 2 * x2 >= head:         # start head jobs while they fit
            if head == 1:
                x1 += 1
            else:
                x2 += 1
            head = 1 if rng.random() < p else 2
        rate = (x1 + x2) * mu1
        t += rng.exponential(1.0 / rate)
        if rng.random() < x1 / (x1 + x2):
            x1 -= 1
        else:
            x2 -= 1
        done += 1
    return done / t


def test_local_capacity_against_simulation_and_limits():
    """As many starts as fit (max_starts=0): the capacity is the saturated cluster's throughput."""
    assert local_capacity(0.0, 1.0, max_starts=0) == pytest.approx(1.0, rel=1e-9)  # one two-node job at a time
    assert local_capacity(1.0, 2.0, max_starts=0) == pytest.approx(1.0, rel=1e-9)  # two one-node servers
    m = 0.6 + 2 * 0.4
    th = local_capacity(0.6, 1.0, max_starts=0) * 2 / m  # jobs per unit time
    sim = _saturated_throughput_sim(0.6, 1.0, 200_000, seed=7)
    assert sim == pytest.approx(th, rel=0.01)
    # the model's rule (one start per decision epoch) is what the verdict uses
    assert coalloc_stability(CoallocParams.from_loads(0.5))["local_capacity_rho1"] == pytest.approx(
        local_capacity(0.6, 1.0, max_starts=1))


@pytest.mark.parametrize("rho2", [0.0, 0.5, 0.8, 0.95])
def test_fluid_bound_by_brute_force(rho2):
    p, mu1, mu3 = 0.6, 1.0, 0.7
    m = p + 2 * (1 - p)
    best = 0.0
    for f in np.linspace(0, 1, 20001):
        per_job = p / mu1 + (1 - p) * (1 - f) * 2 / mu1 + (1 - p) * f / mu3
        lam = 2 / per_job
        if f > 0:
            lam = min(lam, (1 - rho2) * mu3 / ((1 - p) * f))
        best = max(best, lam * m / (2 * mu1))
    assert fluid_max_rho1(rho2, p, mu1, mu3) == pytest.approx(best, rel=1e-4)


def test_export_round_trip_with_pymdptoolbox(tmp_path):
    """The exported arrays, solved by pymdptoolbox's policy iteration, give hetsched's policy and V = -J."""
    mdptoolbox = pytest.importorskip("mdptoolbox.mdp")
    from hetsched.mdp.export import load_mdptoolbox

    r = _run("--rho", "0.85", "--delta", "6", "--export", "m.npz", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    P, R, disc = load_mdptoolbox(tmp_path / "m.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pi = mdptoolbox.PolicyIteration(P, R, disc)
        pi.run()
    z = np.load(tmp_path / "m.npz")
    states = z["states"]
    pol = np.array(pi.policy)
    for x1 in (0, 1):
        tab = np.array(out["tables"][f"x1={x1}"])
        cert = np.array(out["certified"][f"x1={x1}"])
        for q1 in range(1, 7):
            for q2 in range(7):
                s = np.flatnonzero((states == [q1, q2, 2, x1, 0, 0]).all(axis=1))[0]
                if cert[q1 - 1, q2]:
                    assert pol[s] == tab[q1 - 1, q2], (x1, q1, q2)
    sol = solve_coalloc(CoallocParams.from_loads(0.85, delta=6))
    assert np.abs(-np.array(pi.V) - sol.result.values).max() <= 10 * sol.result.error_bound
    assert not z["admissible"][pol == 1].size or z["admissible"][np.arange(len(pol)), pol].all()
    # never overwritten without --force
    before = (tmp_path / "m.npz").read_bytes()
    r = _run("--rho", "0.5", "--delta", "4", "--export", "m.npz", cwd=tmp_path)
    assert r.returncode == 2 and "exists" in r.stderr and (tmp_path / "m.npz").read_bytes() == before
