"""Seed 003's claims under each reading of the gang model, and a search over the unstated rates.

The paper (Ro & Cao 2010, Section 5.2) states three results:

* **C1** "when lambda < 3.0, LC-2 gets better [SRT] than that of LS and LC-1": LC-2 has
  the lowest SRT at every swept lambda below 3 (1.0, 1.5, 2.0, 2.5);
* **C2** "with lambda increasing ... LS gets better than these two dynamic policies":
  LS has the lowest SRT at the largest lambda (5.5);
* **C3** "with lambda increasing, the ST of dynamic scheduling such as LC-1 or LC-2
  gets better than that in static scheduling such as LS": at the largest lambda
  both LC-1 and LC-2 have a higher ST than LS.

:func:`sweep` solves the three policies over lambda for one reading and a set of
rates; the reachability graph of each policy is built once per reading and every
rate (lambda, the local arrival rate, the task rate, mu1 = mu2) only rescales the
rates of its transitions (``StateSpace.scale_rate``), each solve warm-started from
the previous one. :func:`claims` checks C1-C3 on the rows; :func:`search` runs a
grid of unstated rates for each reading.
"""

from __future__ import annotations

import itertools
from typing import Any

from .gang import POLICIES, GangParams, gang_measures, gang_net

__all__ = ["sweep", "claims", "search", "LOW", "HIGH", "SEARCH_GRID"]

LOW = (1.0, 1.5, 2.0, 2.5)        # the swept lambdas below 3 (C1)
HIGH = 5.5                         # the largest swept lambda (C2, C3)
#: the unstated rates searched (the defaults, 1.0, are in the middle)
SEARCH_GRID = {"mu": (0.5, 1.0, 2.0), "task_rate": (0.5, 1.0, 2.0), "local_rate": (0.5, 1.0, 2.0)}


def _scaled(space, net, base: GangParams, p: GangParams):
    names = set(net.transition_names)
    sp = space
    factors = []
    if p.arrival != "mu*pcont":
        factors.append((("T",), p.arrival_rate / base.arrival_rate))
    else:
        factors.append((("T",), p.arrival_mu / base.arrival_mu))
    factors += [(("LT1", "LT2"), p.local_rate[0] / base.local_rate[0]),
                (("t1", "t2"), p.task_rate / base.task_rate),
                (("GS1", "GS2", "GS11", "GS21"), p.mu[0] / base.mu[0])]
    for ts, f in factors:
        if f != 1.0:
            for t in ts:
                if t in names:
                    sp = sp.scale_rate(t, f)
    return sp


class _Model:
    """One policy of one reading: its reachability graph, solved at any rates (warm-started)."""

    def __init__(self, base: GangParams):
        from .reach import explore

        self.base = base
        self.net = gang_net(base)
        self.space = explore(self.net)
        self.x = None

    def solve(self, lam: float, r: dict[str, float]) -> dict[str, Any]:
        from .analysis import SRNResult
        from .reach import to_ctmc
        from .steady import steady_state

        p = self.base.with_(arrival_rate=lam, mu=(r["mu"],) * 2, task_rate=r["task_rate"],
                            local_rate=(r["local_rate"],) * 2)
        space = _scaled(self.space, self.net, self.base, p)
        ctmc = to_ctmc(space)
        st = steady_state(ctmc, x0=self.x)
        self.x = st.pi if st.success else None
        m = gang_measures(SRNResult(space, ctmc, st), p)
        return {"policy": p.policy, "lambda": lam, **r, "states": space.n_tangible,
                **{k: m[k] for k in ("ST", "SRT", "UoS", "GoS")}, "residual": st.residual, "success": st.success}


def sweep(base: GangParams, lambdas, rates: list[dict[str, float]], policies=POLICIES) -> list[dict[str, Any]]:
    """Rows ``{policy, lambda, mu, task_rate, local_rate, ST, SRT, UoS, GoS, states, residual, success}`` for
    every policy, rate setting and lambda (module docstring). ``base`` fixes the reading; its rates must
    be > 0 (they are the reference the others are scaled from)."""
    rows = []
    for pol in policies:
        model = _Model(base.with_(policy=pol))
        for r in rates:
            for lam in lambdas:
                rows.append(model.solve(lam, r))
    return rows


def claims(rows: list[dict[str, Any]], low=LOW, high=HIGH) -> dict[str, bool | None]:
    """C1, C2, C3 (module docstring) on the rows of one rate setting (C1 is None without the low lambdas)."""
    def get(pol, lam, key):
        for r in rows:
            if r["policy"] == pol and r["lambda"] == lam:
                return r[key]
        raise KeyError((pol, lam))

    have_low = all(any(r["lambda"] == lam for r in rows) for lam in low)
    c1 = (all(get("LC2", lam, "SRT") < min(get("LS", lam, "SRT"), get("LC1", lam, "SRT")) for lam in low)
          if have_low else None)
    c2 = get("LS", high, "SRT") < min(get("LC1", high, "SRT"), get("LC2", high, "SRT"))
    c3 = min(get("LC1", high, "ST"), get("LC2", high, "ST")) > get("LS", high, "ST")
    return {"C1": c1, "C2": c2, "C3": c3, "all": bool(c1 and c2 and c3)}


def search(readings: list[dict[str, Any]], grid: dict[str, tuple] = SEARCH_GRID, low=LOW, high=HIGH,
           base: GangParams | None = None, progress=None) -> list[dict[str, Any]]:
    """For each reading (GangParams keyword arguments) and each point of the rate grid: which of C1-C3
    hold. The largest lambda is solved first; C1 (four more lambdas) is evaluated only where C2 and
    C3 both hold - elsewhere the setting cannot satisfy all three and C1 is None. One row per
    (reading, rates) with the claims and the SRT and ST at ``high``."""
    base = base or GangParams()
    keys = list(grid)
    rates = [dict(zip(keys, v)) for v in itertools.product(*(grid[k] for k in keys))]
    out = []
    for rd in readings:
        models = {pol: _Model(base.with_(policy=pol, **rd)) for pol in POLICIES}
        for r in rates:
            rows = [models[pol].solve(high, r) for pol in POLICIES]
            c = claims(rows, low, high)
            if c["C2"] and c["C3"]:
                rows += [models[pol].solve(lam, r) for pol in POLICIES for lam in low]
                c = claims(rows, low, high)
            at = {f"{k} {x['policy']}": x[k] for x in rows if x["lambda"] == high for k in ("SRT", "ST")}
            out.append({**rd, **r, **c, **at, "solved": all(x["success"] for x in rows)})
            if progress is not None:
                progress()
    return out
