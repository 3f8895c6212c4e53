"""Bit-identity of the desktop-grid and decentralized kernels: per policy family vs the switch kernel,
and one source tree vs another.

Two checks, over many short runs (desktop: Systems 3.A-3.H, 3.F, 3.G1/3.G2 x FCFS, Gcmu, LPAS_DG and
its robust variant x tie rules x machine rules x resubmission x execution-time families x seeds,
plus two user pull policies; decentralized: 4.A x MCT, KPB (k = 2, 3), LPAS_dec x ties, inaccuracy,
propagation, local, no rate changes x seeds, and 4.B1/4.B2/4.2-ex):

* ``--families``: every run on the kernel specialised per policy family (what ``simulate`` uses:
  :func:`hetsched.sim.desktop.kernel.kernels`, :func:`hetsched.sim.decentral.kernel.kernels`) must
  equal, bit for bit, the same run on the unspecialised module-level kernel (one switch per
  decision over every policy);
* ``--record OUT.json`` then ``--compare A.json B.json``: record every run's outputs in one source
  tree (e.g. a checkout of ``main``) and compare with another's.

Every output of a replication except timings is compared. Run: ``python benchmarks/grids_identity.py
--families [--quick]``; prints the number of runs compared and the differences, exit status 1 if any.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

SKIP = ("wall", "cpu", "wall_seconds", "lp_seconds", "log")


def _clean(d: dict) -> dict:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items() if k not in SKIP}


def desktop_cases(quick: bool):
    """``(key, system, policy, options)`` of the desktop runs."""
    from hetsched.policies.pull import pull_policy
    from hetsched.scenarios import load

    pols = ["fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"]
    seeds = (1,) if quick else (1, 2)
    cells = [("3.A", "alpha1", c) for c in ((3, 5) if quick else (1, 2, 3, 4, 5))]
    if not quick:
        cells += [("3.A", "alpha2", c) for c in (1, 2, 3)]
        cells += [(s, a, c) for s in ("3.B", "3.C", "3.D", "3.E") for a in ("alpha1", "alpha2") for c in (1, 2)]
    for sid, arr, case in cells:
        s = load(sid, arrivals=arr, case=case)
        for p in pols:
            for seed in seeds:
                for tie in ("random", "lowest", "highest"):
                    yield f"{sid}/{arr}/{case}/{p}/{seed}/{tie}", s, p, dict(seed=seed, horizon=60.0, tie=tie)
    s = load("3.A", arrivals="alpha1", case=5)
    for p in pols:
        for mr in ("longest-idle", "fastest", "lowest-index", "random"):
            for rs in ("front", "back"):
                yield f"3.A5/{p}/{mr}/{rs}", s, p, dict(seed=3, horizon=60.0, machine_rule=mr, resubmit=rs)
    for ex in ("exp", "hyperexp", "det"):
        s = load("3.A-dist", case=3)
        for p in pols:
            yield f"3.A-dist/{ex}/{p}", s, p, dict(seed=5, horizon=80.0, exec_dist=ex)
    s = load("3.A-cpuinfo")
    for info in (True, False):
        for p in pols:
            yield f"cpuinfo/{info}/{p}", s, p, dict(seed=6, horizon=80.0, cpu_info=info)
    s = load("3.H")
    for inacc in (0.0, 0.5, 1.0):
        for p in pols:
            yield f"3.H/{inacc}/{p}", s, p, dict(seed=7, horizon=60.0, inaccuracy=inacc)
    for sid in ("3.G1", "3.G2"):
        s = load(sid, arrivals="alpha1")
        for p in pols:
            for sol in ("vertex", "symmetric"):
                yield f"{sid}/{p}/{sol}", s, p, dict(seed=10, horizon=2e5 if not quick else 5e4, lp_solution=sol)
    s = load("3.F", case=1)
    for p in pols:
        yield f"3.F/{p}", s, p, dict(seed=11, horizon=0.5)

    @pull_policy
    def my_gcmu(t, qlen, head_arrival, rate, eligible, u):
        best, best_key = -1, 0.0
        for i in range(qlen.shape[0]):
            if qlen[i] > 0 and rate[i] > 0.0:
                key = (t - head_arrival[i]) * rate[i]
                if best < 0 or key > best_key:
                    best, best_key = i, key
        return best

    @pull_policy(uses_lp=True)
    def my_lp(t, qlen, head_arrival, rate, eligible, u):
        best, best_key = -1, 0.0
        for i in range(qlen.shape[0]):
            if qlen[i] > 0 and rate[i] > 0.0 and eligible[i]:
                key = (t - head_arrival[i]) * rate[i] * (0.5 + u)
                if best < 0 or key > best_key:
                    best, best_key = i, key
        return best

    s = load("3.A", arrivals="alpha1", case=3)
    for pol in (my_gcmu, my_lp):
        for tie in ("random", "lowest"):
            yield f"user/{pol.name}/{tie}", s, pol, dict(seed=12, horizon=60.0, tie=tie)


def decentral_cases(quick: bool):
    from hetsched.scenarios import load

    s = load("4.A")
    for p, k in (("mct", None), ("kpb", 2), ("kpb", 3), ("lpas-dec", None)):
        for seed in ((1,) if quick else (1, 2)):
            base = dict(seed=seed, k=k, horizon=300.0)
            for tie in ("random", "lowest", "highest"):
                yield f"4.A/{p}/{k}/{seed}/{tie}", s, p, dict(base, tie=tie)
            for inacc in (0.3, 0.8):
                for draw in ("per-message", "per-rate"):
                    yield f"4.A/{p}/{k}/{seed}/I{inacc}/{draw}", s, p, dict(base, inaccuracy=inacc,
                                                                              inaccuracy_draw=draw)
            yield f"4.A/{p}/{k}/{seed}/instant", s, p, dict(base, propagation="instant")
            yield f"4.A/{p}/{k}/{seed}/local", s, p, dict(base, include_local=True)
            yield f"4.A/{p}/{k}/{seed}/norc", s, p, dict(base, rate_changes=False, warmup=50.0)
    for sid in ("4.B1", "4.B2", "4.2-ex"):
        s = load(sid)
        for p in ("mct", "lpas-dec"):
            yield f"{sid}/{p}", s, p, dict(seed=3, horizon=3e5 if sid != "4.2-ex" else 300.0)


def _run_all(quick: bool, users: bool = True) -> dict:
    from hetsched.sim.decentral import one_run as dec_run
    from hetsched.sim.desktop import one_run as desk_run

    out = {"desktop": {}, "decentral": {}}
    for key, s, p, kw in desktop_cases(quick):
        if users or isinstance(p, str):  # a user policy runs only on its own specialised kernel
            out["desktop"][key] = _clean(desk_run(s, p, **kw))
    for key, s, p, kw in decentral_cases(quick):
        out["decentral"][key] = _clean(dec_run(s, p, **kw))
    return out


def _unspecialised():
    """Make both models run on their module-level kernels (one switch over every policy)."""
    from hetsched.sim.decentral import kernel as DK
    from hetsched.sim.desktop import kernel as K

    K.kernels = lambda code, user=None: (K.init, K.run)
    DK.kernels = lambda policy: (DK.init, DK.run)


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    return x == y


def compare(a: dict, b: dict) -> tuple[int, list[str]]:
    n, bad = 0, []
    for model, runs in a.items():
        for key, ra in runs.items():
            rb = b.get(model, {}).get(key)
            if rb is None:
                bad.append(f"{model} {key}: missing")
                continue
            n += 1
            for f, x in ra.items():
                if not _same(x, rb.get(f, "<absent>")):
                    bad.append(f"{model} {key} {f}: {str(x)[:60]} != {str(rb.get(f))[:60]}")
                    break
    return n, bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", action="store_true", help="per-family kernels vs the switch kernel")
    ap.add_argument("--record", metavar="OUT.json")
    ap.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"))
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    if a.record:
        with open(a.record, "w") as f:
            json.dump(_run_all(a.quick), f, default=float)
        return 0
    if a.compare:
        x, y = (json.load(open(p)) for p in a.compare)
        n, bad = compare(x, y)
    elif a.families:
        spec = _run_all(a.quick, users=False)
        _unspecialised()
        n, bad = compare(spec, _run_all(a.quick, users=False))
    else:
        ap.error("one of --families, --record, --compare")
    print("\n".join(bad[:50]))
    print(f"compared {n} runs, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
