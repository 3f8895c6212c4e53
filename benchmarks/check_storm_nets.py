"""Every net of a set of PNML/PNPRO files: hetsched reads and solves it, Storm solves it too (docs/srn.md).

    python benchmarks/check_storm_nets.py [FILE_OR_DIR ...] [--timeout S] [--max-states N] [--markdown]

Default input: the shipped third-party nets in ``tests/data/nets/``. For each net
page: ``hetsched srn solve`` (expected tokens of every place, throughput of every
transition); if it is refused, the one-line reason. Otherwise Storm's steady
state with its exact sparse LU (``solver="sparselu"``) by two routes: Storm
reading the file itself (where its parser gives a GSPN with the same names) and
Storm reading hetsched's GSPN export of the net. Reported: tangible markings of
each, and the largest relative difference over expected tokens and timed
throughputs (values below 1e-12 compared absolutely). Each net runs in its own
subprocess with a time limit, because Storm may crash or run out of memory (it
never stops on an unbounded net).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CMD = "python benchmarks/check_storm_nets.py"

_CHILD = r"""
import json, sys, time
from hetsched.errors import HetschedError
from hetsched.srn import read, solve
f, page, route, max_states = sys.argv[1], sys.argv[2] or None, sys.argv[3], int(sys.argv[4])
out = {}
try:
    net = read(f, page=page)
    t = time.perf_counter()
    r = solve(net, max_states=max_states)
    out.update(ok=True, states=r.space.n_tangible, vanishing=r.space.n_vanishing, seconds=time.perf_counter() - t,
               classes=r.steady.closed_classes, status=r.status)
except HetschedError as e:
    out.update(ok=False, refused=str(e))
print(json.dumps(out), flush=True)
if out.get("ok") and route != "none":
    from hetsched.srn.storm import storm_net_steady_state
    t = time.perf_counter()
    s = storm_net_steady_state(net, path=f, route=route, space=r.space)
    def rel(a, b):
        return abs(a - b) if abs(b) < 1e-12 else abs(a - b) / abs(b)
    et = max([rel(r.tokens[p], v) for p, v in s["tokens"].items()] or [0.0])
    ex = max([rel(r.throughputs[k], v) for k, v in s["throughput"].items()] or [0.0])
    print(json.dumps({"route": s["route"], "storm_states": s["states"], "tokens": et, "throughput": ex,
                      "storm_seconds": time.perf_counter() - t}), flush=True)
"""


def _run(args: list[str], timeout: float) -> tuple[list[dict], str]:
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return [json.loads(x) for x in out.splitlines() if x.startswith("{")], f"timeout ({timeout:.0f} s)"
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    err = "" if p.returncode == 0 else (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:160]
    return lines, err


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", default=[str(ROOT / "tests" / "data" / "nets")])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--max-states", type=int, default=2_000_000)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()

    from hetsched.errors import HetschedError
    from hetsched.srn import pages

    files = []
    for p in map(Path, a.paths):
        files += sorted(x for x in p.rglob("*") if x.suffix.lower() in (".pnml", ".pnpro")) if p.is_dir() else [p]
    rows = []
    t0 = time.perf_counter()
    for f in files:
        try:
            nets = [pg.name for pg in pages(f) if pg.kind == "net"]
        except HetschedError as e:
            rows.append((f.name, "", f"refused: {e}", "", "", ""))
            continue
        for page in nets:
            arg = page if len(nets) > 1 or f.suffix.lower() == ".pnpro" else ""
            cells = {}
            for route in ("file", "export"):
                res, err = _run([str(f), arg, route, str(a.max_states)], a.timeout)
                ours = res[0] if res else {}
                if not ours.get("ok"):
                    why = ours.get("refused") or err
                    cells = {"ours": f"refused: {why}"}
                    break
                cells["ours"] = f"{ours['states']} ({ours['vanishing']} vanishing), {ours['classes']} class(es)"
                if len(res) > 1:
                    s = res[1]
                    if s["route"].startswith("none"):
                        cells[route] = "nothing can fire (no Storm run needed)"
                    elif s["route"] == route:
                        cells[route] = (f"{s['storm_states']} states, tokens {s['tokens']:.1e}, "
                                        f"throughputs {s['throughput']:.1e}")
                else:
                    cells[route] = f"Storm failed: {err}"
            rows.append((f.name, page, cells.get("ours", ""), cells.get("file", "-"), cells.get("export", "-")))
    head = ("file", "page", "hetsched: tangible markings", "Storm reads the file (sparse LU)",
            "Storm reads hetsched's export (sparse LU)")
    if a.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(str(c).replace("|", "/") for c in r) + " |")
    else:
        for r in rows:
            print("  ".join(str(c) for c in r))
    print(f"{len(rows)} nets in {len(files)} files, {time.perf_counter() - t0:.0f} s ({CMD})")


if __name__ == "__main__":
    main()
