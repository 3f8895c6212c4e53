"""Runner: results depend only on the seed, whatever the workers or backend."""

import numpy as np
import pytest

from hetsched.errors import HetschedError, ModelError
from hetsched.runner import Batch, Job, Planned, check_scheduler, replicate, replicate_many


def draw(ss, params):
    rng = np.random.default_rng(ss)
    return {"x": float(rng.normal(params["mu"], 1.0, size=params["n"]).mean()), "key": ss.spawn_key}


PARAMS = {"mu": 3.0, "n": 100, "big": np.zeros(1000)}


def test_in_process_order_and_seed():
    a = replicate(draw, PARAMS, 5, 11, workers=1, progress=False)
    b = replicate(draw, PARAMS, 5, 11, workers=1, progress=False)
    assert [r["key"] for r in a] == [(i,) for i in range(5)]
    assert a == b
    c = replicate(draw, PARAMS, 5, 12, workers=1, progress=False)
    assert a != c
    # replication r is child r of SeedSequence(seed): prefix-stable
    d = replicate(draw, PARAMS, 3, 11, workers=1, progress=False)
    assert d == a[:3]


def test_pool_matches_in_process():
    a = replicate(draw, PARAMS, 7, 5, workers=1, progress=False)
    b = replicate(draw, PARAMS, 7, 5, workers=2, progress=False)
    assert a == b


def test_dask_local_cluster_matches():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        b = replicate(draw, PARAMS, 6, 5, backend="dask", scheduler=cluster.scheduler_address,
                      progress=False)
    a = replicate(draw, PARAMS, 6, 5, workers=1, progress=False)
    assert a == b


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(reps=0), "reps"),
        (dict(seed=-1), "seed"),
        (dict(workers=0), "workers"),
        (dict(backend="mpi"), "backend"),
        (dict(backend="dask"), "scheduler"),
    ],
)
def test_bad_arguments(kw, match):
    args = dict(reps=2, seed=1)
    args.update(kw)
    reps, seed = args.pop("reps"), args.pop("seed")
    with pytest.raises(ModelError, match=match):
        replicate(draw, PARAMS, reps, seed, **args)


# ----------------------------------------------------------------------------- batches of jobs
def draw_scaled(ss, params):
    rng = np.random.default_rng(ss)
    if params.get("fail"):
        raise ModelError("replication failed on purpose")
    return {"x": float(rng.normal(params["mu"], 1.0, size=params["n"]).mean()) * params["scale"],
            "key": ss.spawn_key}


JOBS = [Job(draw, PARAMS, 5, 11), Job(draw_scaled, {"mu": 1.0, "n": 50, "scale": 2.0}, 3, 7),
        Job(draw, {"mu": -1.0, "n": 10}, 9, 11), Job(draw, PARAMS, 1, 0)]


def _alone(jobs):
    """Each job on its own, in-process: the per-cell runs a batch must reproduce exactly."""
    return [replicate(j.fn, j.params, j.reps, j.seed, workers=1, progress=False) for j in jobs]


@pytest.mark.parametrize("workers", [1, 2])
def test_replicate_many_equals_jobs_alone(workers):
    seen = {}
    out = replicate_many(JOBS, workers=workers, progress=False,
                         on_done=lambda j, runs, s: seen.setdefault(j, (list(runs), s)))
    assert out == _alone(JOBS)
    # every job reported exactly once, with its own complete results and a compute time
    assert sorted(seen) == list(range(len(JOBS)))
    assert all(seen[j][0] == out[j] and seen[j][1] >= 0 for j in seen)


def test_replicate_many_dask_equals_jobs_alone():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        out = replicate_many(JOBS, backend="dask", scheduler=cluster.scheduler_address, progress=False)
    assert out == _alone(JOBS)


def test_replicate_many_error_stops_batch_and_pool_survives():
    bad = [JOBS[0], Job(draw_scaled, {"mu": 0.0, "n": 5, "scale": 1.0, "fail": True}, 4, 3)]
    with pytest.raises(ModelError, match="on purpose"):
        replicate_many(bad, workers=2, progress=False)
    assert replicate_many(JOBS[:1], workers=2, progress=False) == _alone(JOBS[:1])


def test_batch_cells_early_results_and_tracker():
    from hetsched.experiments import Tracker

    tr = Tracker(enabled=False)
    b = Batch(workers=2, tracker=tr)
    cells = [b.add(Planned(job=j, finish=lambda runs, s: [r["x"] for r in runs]), label=f"job {k}")
             for k, j in enumerate(JOBS)]
    early = b.add(Planned(job=None, result="known before any replication"),
                  row=lambda r: {"cell": "early", "value": r})
    b.run()
    alone = _alone(JOBS)
    assert [c.result for c in cells] == [[r["x"] for r in runs] for runs in alone]
    assert early.result == "known before any replication"
    assert tr.n_total == tr.n_done == len(JOBS) + 1
    assert {"cell": "early", "value": "known before any replication"} in tr.rows


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:9", "127.0.0.1:9"])
def test_unreachable_scheduler_refused_at_once(address):
    import time

    t0 = time.perf_counter()
    with pytest.raises(HetschedError, match="cannot reach the Dask scheduler"):
        replicate(draw, PARAMS, 2, 1, backend="dask", scheduler=address, progress=False)
    assert time.perf_counter() - t0 < 5.0


def test_scheduler_address_must_have_a_port():
    with pytest.raises(HetschedError, match="tcp://HOST:PORT"):
        check_scheduler("tcp://127.0.0.1")
