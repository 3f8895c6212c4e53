"""Start-up of ``hetsched.mdp`` and the JSON of ``hetsched mdp coalloc`` (issue 17, CTMDP row).

Truths: the set of modules a fresh interpreter has loaded (``sys.modules``), and the
library's own solution of the same model for the command's one-line JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from hetsched.mdp.coalloc import CoallocParams, solve_coalloc


def test_package_import_loads_no_numba_scipy_and_names_resolve():
    code = ("import sys, hetsched.mdp as m\n"
            "heavy = [k for k in ('numba', 'scipy', 'scipy.optimize') if k in sys.modules]\n"
            "names = sorted(n for n in m.__all__ if getattr(m, n) is None)\n"
            "print(heavy, names, 'scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    # before any name is used nothing heavy is loaded; every public name then resolves,
    # and even the full solver stack does not need scipy.optimize (its import costs ~0.3 s)
    assert out.stdout.split("\n")[0] == "[] [] False"


def test_cli_and_model_packages_load_no_numba_until_used():
    """The CLI (every command's start-up) and the srn/muscle packages import nothing heavy; their names resolve."""
    code = ("import sys, hetsched.cli, hetsched.srn as s, hetsched.muscle as mu\n"
            "heavy = [k for k in ('numba', 'scipy') if k in sys.modules]\n"
            "missing = [n for m in (s, mu) for n in m.__all__ if getattr(m, n, None) is None]\n"
            "print(heavy, missing, callable(s.solve), callable(mu.simulate))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split("\n")[0] == "[] [] True True"


def test_coalloc_json_is_one_line_with_the_library_tables():
    out = subprocess.run([sys.executable, "-m", "hetsched.cli", "mdp", "coalloc", "--delta", "6", "--rho", "0.7",
                          "--json"], capture_output=True, text=True, check=True, timeout=300)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    d = json.loads(lines[0])
    sol = solve_coalloc(CoallocParams.from_loads(0.7, delta=6))
    assert d["states"] == sol.model.ctmdp.n_states == 6 * 7 * 13
    for key in ("x1=0", "x1=1"):
        assert np.array_equal(np.array(d["tables"][key]), sol.tables[key])
        assert np.allclose(np.array(d["margins"][key]), sol.margins[key], atol=1e-6)
        assert np.array_equal(np.array(d["certified"][key]), sol.certified[key])
    assert d["stable"] is True and d["success"] is True
