"""The public API: the README's "Python API" section and docs/api.md run as printed; import is light."""

import re
import subprocess
import sys
from pathlib import Path

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
