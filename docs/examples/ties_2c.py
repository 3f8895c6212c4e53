"""Tie rules on Systems 2.C1 and 2.C2 (groups of identical machines): lowest index vs random.

Run: ``python docs/examples/ties_2c.py`` (30 replications x 20,000 time units,
seed 2009, as Table 2.1). Prints one line per system, policy and tie rule.
"""

import hetsched as hs

KBAR = {"2.C1": 14, "2.C2": 14}
for sid in ("2.C1", "2.C2"):
    system = hs.load(sid)
    for policy in ("mct", "kpb", "lpas"):
        for tie in ("lowest", "random"):
            kw = {"k": KBAR[sid]} if policy == "kpb" else {}
            r = hs.simulate(system, policy, reps=30, horizon=20_000, seed=2009, tie=tie, workers=2, **kw)
            state = "UNSTABLE" if r.unstable else f"{r.mean:8.3f}  [{r.ci[0]:.3f}, {r.ci[1]:.3f}]"
            print(f"{sid:5s} {policy:5s} tie={tie:7s} Qbar {state}", flush=True)
