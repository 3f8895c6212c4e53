"""Storm on the full-size gang exports: does it load them and give hetsched's SRT? (docs/srn.md)

    python benchmarks/check_storm_exports.py [--policy LC2] [--arrival-rate 3.0] [--skip-pnml]
                                             [--solver sparselu|eigen|default]

Writes the three exports of ``hetsched srn export gang`` to a temporary
directory, has Storm load each one, and compares the state count and SRT
(eq. 2) with ``hetsched srn gang``. The PNML route (Storm builds the chain from
the unfolded GSPN and eliminates the vanishing states itself) takes minutes on
the paper's model; ``--skip-pnml`` leaves it out. ``--solver``: Storm's steady-state
solver on that route (``sparselu``, its exact sparse LU, by default; ``eigen``: Eigen's
default GMRES+ILU at 1e-6). Needs ``stormpy``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="LC2")
    ap.add_argument("--arrival-rate", default="3.0")
    ap.add_argument("--skip-pnml", action="store_true")
    ap.add_argument("--solver", default="sparselu", choices=("sparselu", "eigen", "default"))
    a = ap.parse_args()

    import stormpy

    from hetsched.cli import app
    from hetsched.srn.storm import storm_gspn_steady_state

    model = ["--policy", a.policy, "--arrival-rate", a.arrival_rate]
    ref = json.loads(CliRunner().invoke(app, ["srn", "gang", *model, "--json"]).stdout)
    print(f"hetsched: {ref['states']} tangible states, SRT {ref['SRT']:.9f}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for fmt, out in (("prism-explicit", d / "g"), ("drn", d / "g.drn"), ("pnml", d / "g.pnml")):
            if fmt == "pnml" and a.skip_pnml:
                continue
            r = CliRunner().invoke(app, ["srn", "export", "gang", *model, "--format", fmt, "-o", str(out)])
            assert r.exit_code == 0, r.output
        t = time.perf_counter()
        m = stormpy.build_model_from_explicit(str(d / "g.tra"), str(d / "g.lab"), state_rewards=str(d / "g.queue.rew"))
        q = stormpy.model_checking(m, stormpy.parse_properties("R=? [ LRA ]")[0]).get_value(m.initial_states[0])
        g = stormpy.build_model_from_drn(str(d / "g.drn"))
        x = stormpy.model_checking(g, stormpy.parse_properties('R{"gangs"}=? [ LRA ]')[0]).get_value(g.initial_states[0])
        srt = q / x
        print(f"Storm, explicit + DRN: {m.nr_states} / {g.nr_states} states, SRT {srt:.9f} "
              f"(rel. diff {abs(srt / ref['SRT'] - 1):.1e}), {time.perf_counter() - t:.0f} s")
        if not a.skip_pnml:
            t = time.perf_counter()
            C = ref["params"]["capacity"]
            n = ref["params"]["servers"][0]
            bounds = {"GQ": C, "LQ1": n, "LQ2": n}
            out = storm_gspn_steady_state(d / "g.pnml", bounds, list(bounds), solver=a.solver)
            E = out["mark"]
            XT = float(a.arrival_rate) * (1 - out["dist"]["GQ"][C])
            srt = (E["LQ1"] + E["LQ2"] + E["GQ"]) / XT
            print(f"Storm, PNML (unfolded GSPN, solver {a.solver}): {out['states']} states, {out['eliminated']} "
                  f"vanishing eliminated, SRT {srt:.9f} (rel. diff {abs(srt / ref['SRT'] - 1):.1e}), "
                  f"{time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
