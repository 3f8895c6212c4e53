"""Helpers shared by the tests (importable as ``from helpers import ...``: pytest puts ``tests/`` on
``sys.path`` when it loads ``tests/conftest.py``, so no test needs ``sys.path.insert``).

* paths: :data:`REPO_ROOT`, :data:`TESTS_DIR`, :data:`DATA_DIR` (``tests/data``), :data:`SHARED_DIR`
  (``../shared`` beside the repository, found from this file, never an absolute path);
* :func:`tiny_system` — a small :class:`hetsched.System` from rates, for tests that need one;
* :func:`compare_folder`, :func:`simulate_folder` — results folders of real runs, for the report tests;
* :func:`assert_within` — the project's check of a simulated estimate against a truth: within a
  relative tolerance *and* within ``k`` half-widths of its confidence interval.

The closed forms of queueing theory are in :mod:`closed_forms` (same folder).
"""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
SHARED_DIR = REPO_ROOT / ".." / "shared"

__all__ = ["TESTS_DIR", "REPO_ROOT", "DATA_DIR", "SHARED_DIR", "tiny_system", "assert_within", "compare_folder",
           "simulate_folder", "CLASSES", "MACHINES", "fcfs_records"]

#: class and machine names of the results folders below (the report tests look for them)
CLASSES = ["web", "batch"]
MACHINES = ["fast-box", "slow-box"]


def tiny_system(mu=((1.0, 0.5), (0.5, 1.0)), alpha=None, load: float = 0.5, **names):
    """A :class:`hetsched.System` with rates ``mu`` (classes x machines) and arrival rates ``alpha``;
    without ``alpha``, equal rates per class at ``load`` times the allocation LP's capacity."""
    import hetsched as hs

    if alpha is None:
        n = len(mu)
        lam = hs.solve_allocation(mu, [1.0 / n] * n).lam
        alpha = [load * lam / n] * n
    return hs.System.from_arrays(alpha=list(alpha), mu=[list(r) for r in mu], **names)


def assert_within(mean: float, ci, truth: float, *, rel: float = 0.02, k: float = 3.0) -> None:
    """``mean`` is within ``rel`` of ``truth`` and within ``k`` half-widths of its interval ``ci``."""
    lo, hi = ci
    half = (hi - lo) / 2.0
    err = abs(mean - truth)
    assert err <= rel * abs(truth), f"{mean} vs truth {truth}: relative error {err / abs(truth):.3g} > {rel}"
    assert err <= k * half, f"{mean} vs truth {truth}: {err:.4g} > {k} half-widths ({half:.4g}) of {ci}"


def compare_folder(root: Path) -> Path:
    """A results folder of a real ``hetsched compare`` run (two named classes, two named machines) in ``root``."""
    from hetsched.compare.cli import write_outdir
    from hetsched.resultsio import prepare_outdir

    import hetsched as hs

    s = hs.System.from_arrays(alpha=[1.0, 0.8], mu=[[3.0, 1.0], [1.0, 2.0]], class_names=CLASSES,
                              machine_names=MACHINES, id="two-box")
    r = hs.compare(s, ["mct", "lpas", "met"], reps=4, horizon=500, seed=5, workers=1)
    out = prepare_outdir(root / "cmp")
    write_outdir(r, out, text=str(r))
    return out


def simulate_folder(root: Path) -> Path:
    """A results folder of a real ``hetsched simulate --outdir`` run in ``root``."""
    from typer.testing import CliRunner

    from hetsched.cli import app

    out = root / "sim"
    r = CliRunner().invoke(app, ["simulate", "2.B", "--policy", "lpas", "--reps", "2", "--horizon", "300",
                                 "--workers", "1", "--outdir", str(out)])
    assert r.exit_code == 0, r.output
    return out


def fcfs_records(n: int, machines: int, seed: int, *, mean_run: float, classes: int):
    """Valid per-task records built by hand: Poisson arrivals (rate 1), FCFS to the earliest-free
    machine (Lindley's recursion), exponential run times of mean ``mean_run``, random classes."""
    import numpy as np

    from hetsched.traces import records_frame

    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1.0, n))
    free = np.zeros(machines)
    st, en, m = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    for k in range(n):
        j = int(np.argmin(free))
        st[k] = max(arr[k], free[j])
        en[k] = st[k] + rng.exponential(mean_run)
        free[j], m[k] = en[k], j
    return records_frame(np.arange(n), rng.integers(0, classes, n), arr, st, en, m)
