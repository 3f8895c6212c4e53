"""Tables 3.3-3.6 under the three tie rules (docs/_parts/assumptions-desktop.md quotes this).

Usage: python benchmarks/desktop_ties.py [REPS] [HORIZON]   (default 4 x 5,000, seed 2009)
Prints, per cell and policy, W with tie=lowest and tie=random and their difference in CI half-widths.
"""

from __future__ import annotations

import sys


def main(reps: int = 4, horizon: float = 5_000.0) -> list[dict]:
    from hetsched.experiments.thesis_ch3 import _SYS, _cases
    from hetsched.scenarios import load
    from hetsched.sim.desktop import simulate

    rows = []
    for num in ("3.3", "3.4", "3.5", "3.6"):
        sid, ac = _SYS[num]
        for cfg in _cases(sid, ac):
            s = load(sid, arrivals=cfg["arrivals"], case=cfg["case"])
            for pol in ("fcfs", "gcmu", "lpas-dg"):
                r = {t: simulate(s, pol, reps=reps, horizon=horizon, seed=2009, workers=1, tie=t)
                     for t in ("lowest", "random")}
                hw = max((r[t].ci[1] - r[t].ci[0]) / 2 for t in r)
                row = {"table": num, "system": sid, "arrivals": cfg["arrivals"], "case": cfg["case"], "policy": pol,
                       "W_lowest": r["lowest"].mean, "W_random": r["random"].mean,
                       "diff_in_halfwidths": (r["random"].mean - r["lowest"].mean) / hw if hw > 0 else float("nan")}
                rows.append(row)
                print(f"{num} {sid} {cfg['arrivals']} case {cfg['case']} {pol:8s} lowest {row['W_lowest']:.4f} "
                      f"random {row['W_random']:.4f} diff {row['diff_in_halfwidths']:+.2f} hw", flush=True)
    return rows


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]) if a else 4, float(a[1]) if len(a) > 1 else 5_000.0)
