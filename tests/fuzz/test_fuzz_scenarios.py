"""Generated bad scenario files through the validation layer (in-process, fast) and through `lp`.

Truths checked: the loader returns a valid System or raises ScenarioError with one
line that starts with the file; nothing else escapes; a non-finite number anywhere
is refused naming exactly the field it was put in; an accepted System satisfies
the model's invariants (finite rates within the limits, every class runnable).
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from fuzz_runner import STATS, assert_clean, run_fork
from fuzz_strategies import NONFINITE, fmt_path, fuzz_settings, mutated_scenarios
from hypothesis import given

from hetsched.errors import ScenarioError
from hetsched.scenarios import load
from hetsched.system import MAX_CELLS, MAX_MACHINES, MAX_RATE, MIN_RATE

pytestmark = pytest.mark.fuzz


@pytest.fixture(scope="module")
def workdir():
    d = Path(tempfile.mkdtemp(prefix="hs-fuzz-scn-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _nonfinite(v) -> bool:
    return isinstance(v, float) and not math.isfinite(v)


def _invariants(s) -> None:
    a, mu = s.alpha_array, s.mu
    assert np.isfinite(a).all() and (a >= MIN_RATE).all() and (a <= MAX_RATE).all()
    assert np.isfinite(mu).all() and (mu >= 0).all() and (mu <= MAX_RATE).all()
    assert ((mu == 0) | (mu >= MIN_RATE)).all()
    assert (mu > 0).any(axis=1).all(), "a class no machine can run"
    assert 1 <= s.M <= MAX_MACHINES and s.N * s.M <= MAX_CELLS
    av = s.a
    assert np.isfinite(av).all() and (av >= 0).all() and (av <= 1).all()
    if s.failures is not None:
        assert math.isfinite(s.failures.mean_down) and s.failures.mean_down > 0
    if s.alpha_matrix is not None:
        A = np.asarray(s.alpha_matrix)
        assert A.shape == (s.N, s.M) and np.isfinite(A).all() and (A >= 0).all()


@fuzz_settings(700)
@given(m=mutated_scenarios())
def test_mutated_files_load_or_refuse_in_one_line(workdir, m):
    path = workdir / "scn.toml"
    path.write_bytes(m.text)
    t0 = time.perf_counter()
    try:
        s = load(str(path))
    except ScenarioError as exc:
        msg = str(exc)
        STATS[("scenario file (validation layer)", "refused")] += 1
        assert "\n" not in msg and msg.startswith(f"{path}: "), (m.describe(), msg)
        if _nonfinite(m.value):
            assert f"field '{fmt_path(m.path)}'" in msg, (m.describe(), msg)
    except Exception as exc:  # noqa: BLE001 - the point of the test
        STATS[("scenario file (validation layer)", "traceback")] += 1
        raise AssertionError(f"{m.describe()}: uncaught {type(exc).__name__}: {exc}") from exc
    else:
        STATS[("scenario file (validation layer)", "accepted")] += 1
        assert not _nonfinite(m.value), f"{m.describe()}: non-finite value accepted"
        _invariants(s)
    assert time.perf_counter() - t0 < 10, f"{m.describe()}: slow validation"


@fuzz_settings(120)
@given(m=mutated_scenarios(kinds=("value", "nonfinite", "delete", "ragged", "add_key", "text")))
def test_lp_on_mutated_files(workdir, m):
    path = workdir / f"lp-{m.sid}.toml"
    path.write_bytes(m.text)
    o = run_fork(["lp", str(path), "--json"], timeout=60)
    assert_clean(o, str(path))
    if _nonfinite(m.value):
        assert o.code == 2 and f"field '{fmt_path(m.path)}'" in o.err, o.show()


def test_every_nonfinite_leaf_of_every_shipped_file_is_refused(workdir):
    """Exhaustive (not generated): NaN put in each numeric leaf of each shipped file."""
    import tomllib

    import tomli_w
    from fuzz_strategies import _get, _walk, shipped_ids, shipped_text

    n = 0
    for sid in shipped_ids():
        doc = tomllib.loads(shipped_text(sid))
        leaves = [p for p in _walk(doc) if isinstance(_get(doc, p), (int, float)) and not isinstance(_get(doc, p), bool)]
        for p in leaves[:: max(1, len(leaves) // 25)]:  # at most ~25 leaves per file
            d = tomllib.loads(shipped_text(sid))
            _get(d, p[:-1])[p[-1]] = NONFINITE[n % 3]
            f = workdir / "nan.toml"
            f.write_text(tomli_w.dumps(d))
            with pytest.raises(ScenarioError, match=f"field '{fmt_path(p)}'".replace("[", "\\[").replace("]", "\\]")):
                load(str(f))
            n += 1
    STATS[("scenario file (exhaustive NaN)", "refused")] += n
    assert n > 300
