"""Runner: results depend only on the seed, whatever the workers or backend."""

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.runner import replicate


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
