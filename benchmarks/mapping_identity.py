"""Are today's mapping kernels the same runs as the single kernel they replaced?

Loads the mapping model of commit ``BEFORE`` (one kernel with a policy switch
per event; ``git show``) into a temporary package and runs it beside
today's (one kernel per policy family, :mod:`hetsched.sim.mapping.kernel`) on
the same seeds: every shipped scenario of chapter 2 and System 3.A x every
built-in policy x every tie rule x 3 seeds, other execution-time
distributions, per-task records and two user policies. Every output of a
replication (time averages, response times, events, arrivals, completions,
machines contacted, Guided-LPAS binds, peak, segment averages, routing
shares, records) must be equal, bit for bit.

Run: ``python benchmarks/mapping_identity.py [--quick]``; prints the number
of runs compared and the differences, exit status 1 if any. Needs git and
the repository's history.
"""

from __future__ import annotations

import importlib
import itertools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BEFORE = "c4f1538"
FILES = ("kernel.py", "model.py")  # the policies (names, codes, user-policy class) are today's: unchanged
KEYS = ("Q", "Q_class", "W_class", "W", "events", "arrivals", "completions", "contacted", "binds", "peak", "status",
        "segments", "share")


def load_before():
    """The mapping model of commit BEFORE as package ``mapping_before`` (its kernel and model)."""
    d = Path(tempfile.mkdtemp(prefix="hetsched-before-"))
    pkg = d / "mapping_before"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for f in FILES:
        src = subprocess.run(["git", "-C", str(REPO), "show", f"{BEFORE}:src/hetsched/sim/mapping/{f}"],
                             capture_output=True, text=True, check=True).stdout
        src = (src.replace("from ..core.", "from hetsched.sim.core.").replace("from ...errors", "from hetsched.errors")
               .replace("from ...policies.", "from hetsched.policies.").replace("from ... import lp", "from hetsched import lp")
               .replace("from ...lp import", "from hetsched.lp import")
               .replace("from .policies import", "from hetsched.sim.mapping.policies import"))
        (pkg / f).write_text(src)
    sys.path.insert(0, str(d))
    return importlib.import_module("mapping_before.kernel"), importlib.import_module("mapping_before.model")


def run_before(K, prep: dict, seed: int, records: int = 0) -> dict:
    from hetsched.sim.core.rng import make_streams

    N, M = prep["mu"].shape
    H = prep["horizon"]
    st = make_streams(np.random.SeedSequence(seed), K.n_streams(N))
    out_q, out_resp, out_seg = np.zeros(N), np.zeros(N), np.zeros(10)
    out_int, out_assigned = np.zeros(K.O_DONE + N, np.int64), np.zeros((N, M), np.int64)
    rec = [np.full(records, np.nan), np.full(records, np.nan), np.full(records, np.nan),
           np.full(records, -1, np.int64), np.full(records, -1, np.int64)]
    run = K.make_user_kernel(prep["user"]) if prep["user"] is not None else K.run_mapping
    run(prep["code"], prep["alpha"], prep["mu"], prep["mu_policy"], prep["w"], prep["incremental"], prep["cand"],
        prep["ncand"], prep["pw"], prep["pi"], prep["C"], prep["dist"].code, np.array(prep["dist"].par, float),
        np.zeros((N, 1)), H, prep["warmup"], prep["max_in_system"], prep["tie"], st, out_q, out_resp, out_seg,
        out_int, out_assigned, np.zeros(0), np.zeros(0), np.zeros(0, np.int64), *rec, np.zeros(1), np.zeros(M))
    done = out_int[K.O_DONE:K.O_DONE + N].astype(float)
    arrivals = int(out_int[K.O_ARRIVALS])
    return {"Q": float(out_q.sum()), "Q_class": out_q.tolist(),
            "W_class": np.where(done > 0, out_resp / np.maximum(done, 1), np.nan).tolist(),
            "W": float(np.nansum(out_resp) / max(done.sum(), 1)), "events": int(out_int[K.O_EVENTS]),
            "arrivals": arrivals, "completions": int(out_int[K.O_COMPLETIONS]),
            "contacted": float(out_int[K.O_CONTACTED]) / max(arrivals, 1), "binds": int(out_int[K.O_BINDS]),
            "peak": int(out_int[K.O_PEAK]), "status": int(out_int[K.O_STATUS]), "segments": out_seg.tolist(),
            "share": (out_assigned / np.maximum(out_assigned.sum(axis=1, keepdims=True), 1)).tolist(),
            "records": [r[:arrivals].tolist() for r in rec] if records else None}


def same(a, b) -> bool:
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True)


def main(quick: bool = False) -> int:
    import hetsched as hs
    from dataclasses import replace

    from hetsched.sim.mapping.model import prepare
    from hetsched.sim.mapping.run import replication

    if shutil.which("git") is None:
        print("git is needed (the kernel before is read from the repository's history)")
        return 2
    K0, M0 = load_before()
    scen = ["2.A", "2.C1", "2.D"] if quick else ["2.A", "2.B", "2.C1", "2.C2", "2.D", "2.H", "3.A", "2.1-mct"]
    pols = ["met", "mct", "kpb", "lpas", "lpas-2k", "lp-static", "guided-lpas", "guided-lpas-2k"]
    seeds = [1, 7] if quick else [1, 7, 2009]
    cases = [(sc, p, t, {}) for sc, p, t in itertools.product(scen, pols, ("lowest", "highest", "random"))]
    cases += [(sc, "lpas", "random", {"dist": d}) for sc in ("2.C1", "2.D") for d in ("det", "hyperexp")]

    @hs.mapping_policy
    def umct(i, mu, n, work, u):
        best, bv = -1, 0.0
        for j in range(mu.shape[1]):
            if mu[i, j] > 0.0:
                v = work[j] + 1.0 / mu[i, j]
                if best < 0 or v < bv:
                    best, bv = j, v
        return best

    @hs.mapping_policy
    def urand(i, mu, n, work, u):
        M = mu.shape[1]
        j = int(u * M) % M
        while mu[i, j] <= 0.0:
            j = (j + 1) % M
        return j

    cases += [(sc, pol, "random", {}) for sc in ("2.A", "2.C1", "2.C2") for pol in (umct, urand)]
    runs = diffs = 0
    for sc, pol, tie, kw in cases:
        system = hs.load(sc)
        extra = {"k": max(1, system.M // 2)} if pol == "kpb" else {}
        now = prepare(system, pol, tie=tie, horizon=800.0, warmup=50.0, **extra, **kw)
        old = M0.prepare(system, pol, tie=tie, horizon=800.0, warmup=50.0, **extra, **kw)
        for seed in seeds:
            a = replication(np.random.SeedSequence(seed), now)
            b = run_before(K0, old, seed)
            runs += 1
            bad = [k for k in KEYS if not same(a[k], b[k])]
            if bad:
                diffs += 1
                print(f"DIFFERENT: {sc} {getattr(pol, 'name', pol)} tie {tie} {kw} seed {seed}: {bad}")
    # per-task records
    system = hs.load("2.D")
    now = replace(prepare(system, "mct", tie="random", horizon=300.0), records=True)
    old = M0.prepare(system, "mct", tie="random", horizon=300.0)
    a = replication(np.random.SeedSequence(5), now)
    b = run_before(K0, old, 5, records=50_000)  # room for every arrival (the kernel stops when full)
    o = np.argsort(a["rec_task"], kind="stable")  # today's records by task (the kernel before: indexed by task)
    cols = [np.asarray(b["records"][k]) for k in range(5)]
    done = np.flatnonzero(np.isfinite(cols[2]))
    runs += 1
    if not (same(a["rec_task"][o], done) and same(a["rec_a"][o], cols[0][done]) and same(a["rec_e"][o], cols[2][done])
            and same(a["rec_m"][o], cols[3][done]) and all(same(a[k], b[k]) for k in KEYS)):
        diffs += 1
        print("DIFFERENT: per-task records of 2.D mct")
    print(f"{runs} runs compared with the kernel of {BEFORE}: {diffs} different")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv[1:]))
