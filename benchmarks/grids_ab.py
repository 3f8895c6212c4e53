"""A/B kernel speed of the desktop-grid and decentralized kernels against the mapping kernel.

Events per CPU second (medians of ``R`` replications after one warm-up), printed as JSON with each
figure's ratio to the mapping kernel (2.C1, LPAS) measured in the same process. Run it once per source
tree at the same time to compare two versions, e.g. a checkout of an older commit:
``git worktree add /tmp/old <commit>`` then ``PYTHONPATH=/tmp/old/src python benchmarks/grids_ab.py``
beside ``python benchmarks/grids_ab.py`` (both share the machine's load, so the two runs see the same
noise).

usage: python benchmarks/grids_ab.py [R]
"""

from __future__ import annotations

import json
import statistics
import sys

import numpy as np


def _rate(fn, R):
    fn()
    rs = []
    for _ in range(R):
        o = fn()
        rs.append(o["events"] / max(o["cpu"], 1e-9))
    return statistics.median(rs)


def main(R: int = 3) -> dict:
    from hetsched.scenarios import load
    from hetsched.sim.decentral import prepare as dprep
    from hetsched.sim.decentral import replication as drep
    from hetsched.sim.desktop import prepare, replication
    from hetsched.sim.mapping import prepare as mprep
    from hetsched.sim.mapping import replication as mrep

    mp = mprep(load("2.C1"), "lpas", horizon=20_000.0)
    res = {"mapping 2.C1 lpas": _rate(lambda: mrep(np.random.SeedSequence(1), mp), R)}
    for label, s, pol, H in (("desktop 3.F c1 gcmu", load("3.F", case=1), "gcmu", 10.0),
                             ("desktop 3.A c1 fcfs", load("3.A", arrivals="alpha1", case=1), "fcfs", 1000.0),
                             ("desktop 3.A c3 lpas-dg", load("3.A", arrivals="alpha1", case=3), "lpas-dg", 1000.0)):
        p = prepare(s, pol, horizon=H)
        res[label] = _rate(lambda: replication(np.random.SeedSequence(1), p), R)
    s = load("4.A")
    for pol, k in (("mct", None), ("kpb", 3), ("lpas-dec", None)):
        p = dprep(s, pol, k=k, horizon=5000.0)
        res[f"decentral 4.A {pol}"] = _rate(lambda: drep(np.random.SeedSequence(1), p), R)
    m = res["mapping 2.C1 lpas"]
    return {k: {"events_per_cpu_s": v, "ratio_to_mapping": v / m} for k, v in res.items()}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3), indent=1))
