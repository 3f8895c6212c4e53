"""The public API: the README's "Python API" section and docs/api.md run as printed; import is light."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path, section: str | None = None) -> list[str]:
    text = path.read_text()
    if section is not None:
        m = re.search(rf"^## {re.escape(section)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
        if m is None:
            return []
        text = m.group(1)
    return re.findall(r"```python\n(.*?)```", text, re.S)


def run_blocks(blocks: list[str]) -> None:
    code = "\n".join(blocks)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]


def test_docs_api_runs():
    blocks = python_blocks(ROOT / "docs" / "api.md")
    assert blocks
    run_blocks(blocks)


def test_readme_python_api_section_runs():
    blocks = python_blocks(ROOT / "README.md", "Python API")
    if not blocks:
        pytest.skip("README has no 'Python API' section yet")
    run_blocks(blocks)


def test_import_is_light_and_names_resolve():
    code = ("import sys, hetsched as hs; assert 'numba' not in sys.modules, 'numba loaded on import';"
            "assert hs.__version__; names = [n for n in hs.__all__ if n != '__version__'];"
            "[getattr(hs, n) for n in names if n != 'pull_policy']; print(len(names))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]


def test_solve_allocation_on_arrays_and_system_agree():
    import numpy as np

    import hetsched as hs

    s = hs.System.from_arrays(alpha=[1.0, 2.0], mu=[[3.0, 1.0], [2.0, 4.0]])
    a = hs.solve_allocation(s)
    b = hs.solve_allocation(s.mu, s.alpha_array)
    # by hand: machine 2 serves class 2 only, machine 1 splits x : 1-x; lambda = 3x = (2(1-x) + 4)/2 -> x = 3/4
    assert a.lam == pytest.approx(b.lam) == pytest.approx(2.25)
    assert np.allclose(a.delta, b.delta)


def test_simulate_refuses_bad_input():
    import hetsched as hs
    from hetsched.errors import ModelError

    with pytest.raises(ModelError, match="unknown policy"):
        hs.simulate("2.B", "nope", reps=1, horizon=10.0)
    with pytest.raises(ModelError, match="seed"):
        hs.simulate("2.B", "mct", reps=1, horizon=10.0, seed=-3, workers=1)
    with pytest.raises(ModelError, match="tie rule"):
        hs.simulate("2.B", "mct", reps=1, horizon=10.0, tie="middle", workers=1)
    with pytest.raises(ModelError, match="System or a scenario"):
        hs.simulate(42, "mct")


# ----------------------------------------------------------------------------- edges (issue 23, items 6 and 8)
def _cli_error(*args) -> str:
    """The one line ``hetsched simulate ARGS`` prints (exit 2), as the installed command does."""
    import contextlib
    import io

    from hetsched._cliutil import run
    from hetsched.cli import app

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run(app, ["simulate", *args])
    text = err.getvalue()
    assert code == 2 and "Traceback" not in text and text.startswith("error: "), text
    return text


@pytest.mark.parametrize("kw, cli, match", [
    ({"horizon": 5e-324}, ["--horizon", "5e-324"], "horizon must exceed warmup by at least 1e-09"),
    ({"reps": 10**20}, ["--reps", str(10**20)], "must be >= 1 and <= 10,000, got 100000000000000000000"),
    ({"scheduler": "tcp://127.0.0.1:1"}, ["--scheduler", "tcp://127.0.0.1:1"], "applies only with"),
])
def test_edges_are_the_projects_errors_in_api_and_cli(kw, cli, match):
    import hetsched as hs
    from hetsched.errors import ModelError

    with pytest.raises(ModelError, match=re.escape(match)):
        hs.simulate("2.B", "mct", **{"reps": 1, "horizon": 10.0, "workers": 1, **kw})
    assert match in _cli_error("2.B", "--policy", "mct", "--workers", "1", *cli)


def test_no_machine_can_run_a_class_and_the_smallest_rate():
    import hetsched as hs
    from hetsched.errors import ModelError

    off = hs.System.from_arrays(alpha=[1.0, 2.0], mu=[[1.0, 2.0], [3.0, 1.0]], availability=[0.0, 0.0],
                                class_names=["small", "big"])
    for pol in ("mct", "lpas", "met"):
        with pytest.raises(ModelError, match=r"class 1 \(small\): no machine can run it"):
            hs.simulate(off, pol, reps=1, horizon=10.0, workers=1)
    # the documented minimum rate, 1e-12: a number (the machine is useless), never a division by zero
    tiny = hs.System.from_arrays(alpha=[1e-12, 0.5], mu=[[1e-12, 2.0], [1e-12, 1.0]])
    res = hs.simulate(tiny, "mct", reps=2, horizon=100.0, workers=1)
    assert np.isfinite(res.mean) and res.success


def test_failure_cases_are_refused_by_mapping_policies():
    """3.A case 1 has no failures; cases 2 and 3 do, which the mapping model does not model (issue 23.8)."""
    import hetsched as hs
    from hetsched.errors import ModelError

    assert hs.simulate(hs.load("3.A", case=1), "mct", reps=1, horizon=5.0, workers=1).success
    for case in (2, 3):
        with pytest.raises(ModelError, match=rf"scenario '3.A' case {case} has machine failures"):
            hs.simulate(hs.load("3.A", case=case), "mct", reps=1, horizon=5.0, workers=1)
        assert "has machine failures" in _cli_error("3.A", "--policy", "mct", "--case", str(case), "--reps", "1")


def test_class_names_in_results_and_text():
    import json

    from typer.testing import CliRunner

    import hetsched as hs
    from hetsched.cli import app

    s = hs.System.from_arrays(alpha=[0.5, 0.5], mu=[[2.0, 1.0], [1.0, 2.0]], class_names=["web", "batch\x1b[2J"],
                              machine_names=["fast", "slow"])
    res = hs.simulate(s, "mct", reps=2, horizon=50.0, workers=1)
    assert res.extra["class_names"] == ["web", "batch\x1b[2J"] and res.extra["machine_names"] == ["fast", "slow"]
    plain = hs.simulate("2.B", "mct", reps=2, horizon=50.0, workers=1)
    assert plain.extra["class_names"] == ["1", "2"]
    r = CliRunner().invoke(app, ["simulate", "2.B", "--policy", "mct", "--reps", "2", "--horizon", "50",
                                 "--workers", "1", "--json"])
    assert json.loads(r.output)["class_names"] == ["1", "2"]
    from hetsched.sim.cli import _class_label

    assert _class_label(2, ["web", "batch\x1b[2J"]) == "class 2 (batch\\x1b[2J)"  # the escape is shown, not sent
    assert _class_label(1, ["1", "2"]) == "class 1"


def test_api_limits_are_the_command_lines():
    from hetsched import _cliutil, api

    assert (api.MAX_REPS, api.MAX_HORIZON, api.MAX_EVENTS) == (_cliutil.MAX_REPS, _cliutil.MAX_HORIZON,
                                                               _cliutil.MAX_EVENTS)
