"""The Storm reference for :func:`hetsched.mdp.solve` (optional dependency ``stormpy``).

What Storm runs, by criterion (:func:`storm_values`):

* **long-run average** (``R{"r"}min=? [ LRA ]`` or ``max``; ``R{"r"}=? [ LRA ]`` on a
  chain): Storm's *exact* engine (``stormpy.environments.exact()``) on the model
  read with rational numbers (``build_model_from_drn[stormpy.Rational]``; a Storm
  explicit file is read by Storm, exported by Storm to DRN and read back as
  rationals). The values are fractions, converted to floats.
* **discounted, discrete time** (``R{"r"}min=? [ Cdiscount=gamma ]``): Storm has no
  exact engine for discounted objectives ("Exact solving of discounted total reward
  objectives is currently not supported"), so its *sound* environment runs with
  precision ``1e-12``.
* **discounted, CTMC**: Storm has no discounted property for continuous-time
  models; the reference takes the CTMC exactly as Storm read it (rates, exit
  rates, reward vectors from stormpy) and solves ``(beta I - Q) J = c`` by a
  sparse direct LU (scipy). CTMDPs and Markov automata have no discounted
  reference.

Storm reads DRN and its own explicit format (first line a model type), not
PRISM's explicit files (their first line counts states and transitions): those
are compared with Storm reading the same model in another format.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError

__all__ = ["storm_values", "storm_model"]


def _stormpy():
    try:
        import stormpy
    except ImportError:  # pragma: no cover - stormpy is installed by `make test`
        raise ModelError("the Storm reference needs stormpy (pip install stormpy)") from None
    return stormpy


def storm_model(path: str | Path, exact: bool = False, state_rewards: str | Path | None = None,
                transition_rewards: str | Path | None = None, labels: str | Path | None = None):
    """Storm's model of a ``.drn`` or Storm-explicit ``.tra`` file (rationals when ``exact``)."""
    stormpy = _stormpy()
    path = Path(path)
    if path.suffix == ".drn":
        return stormpy.build_model_from_drn[stormpy.Rational](str(path)) if exact else \
            stormpy.build_model_from_drn(str(path))
    lab = Path(labels) if labels else path.with_suffix(".lab")
    kw = {}
    if state_rewards:
        kw["state_rewards"] = str(state_rewards)
    if transition_rewards:
        kw["transition_rewards"] = str(transition_rewards)
    model = stormpy.build_model_from_explicit(str(path), str(lab), **kw)
    if not exact:
        return model
    with tempfile.TemporaryDirectory() as tmp:  # Storm's own conversion to DRN, read back exactly
        drn = Path(tmp) / "model.drn"
        stormpy.io.export_to_drn(model, str(drn))
        return stormpy.build_model_from_drn[stormpy.Rational](str(drn))


def _reward_ref(model, reward: str | None) -> str:
    names = list(model.reward_models)
    if reward is None or (reward == "" and names == [""]):
        return ""
    if reward not in names:
        raise ModelError(f"reward: Storm's model has reward models {names}, not {reward!r}")
    return f'{{"{reward}"}}'


def storm_values(path: str | Path, criterion: str, discount: float | None = None, maximise: bool = False,
                 reward: str | None = None, exact: bool = True, **files: Any) -> dict[str, Any]:
    """Storm's optimal value of every state (module docstring): ``{"values", "setting", "seconds"}``.

    ``exact=False`` runs the long-run average with Storm's sound engine (default precision
    1e-6 relative) instead of the exact one, for models where the exact engine fails.
    """
    stormpy = _stormpy()
    exact = exact and criterion == "average"
    model = storm_model(path, exact=exact, **files)
    nondet = model.is_nondeterministic_model
    ref = _reward_ref(model, reward)
    opt = ("max" if maximise else "min") if nondet else ""
    ctime = not model.is_discrete_time_model
    if criterion == "average":
        prop = f"R{ref}{opt}=? [ LRA ]"
        env = stormpy.environments.exact() if exact else stormpy.environments.sound()
        setting = f"Storm {prop}, " + ("exact engine on rationals" if exact else "sound engine (precision 1e-6)")
    elif criterion == "discounted" and not ctime:
        prop = f"R{ref}{opt}=? [ Cdiscount={float(discount)!r} ]"
        env = stormpy.environments.sound()
        env.solver().min_max().precision = stormpy.Rational("1/1000000000000")
        setting = f"Storm {prop}, sound engine, precision 1e-12 (no exact engine for discounting)"
    elif criterion == "discounted" and model.model_type == stormpy.models.ModelType.CTMC:
        t0 = time.perf_counter()
        vals = _ctmc_discounted(model, reward, float(discount))
        return {"values": vals, "seconds": time.perf_counter() - t0,
                "setting": "Storm's CTMC (rates, exit rates, rewards) solved by (beta I - Q) J = c, sparse LU"}
    else:
        raise ModelError(f"no Storm reference for the discounted criterion on a {model.model_type}")
    t0 = time.perf_counter()
    res = stormpy.model_checking(model, stormpy.parse_properties(prop)[0], only_initial_states=False,
                                 environment=env)
    secs = time.perf_counter() - t0
    vals = np.array([float(v) for v in res.get_value_vector()])
    return {"values": vals, "seconds": secs, "setting": setting}


def _matrix(model) -> Any:
    import scipy.sparse as sp

    tm = model.transition_matrix
    rows, cols, vals = [], [], []
    for r in range(tm.nr_rows):
        for e in tm.get_row(r):
            rows.append(r)
            cols.append(e.column)
            vals.append(float(e.value))
    return sp.csr_matrix((vals, (rows, cols)), shape=(tm.nr_rows, tm.nr_columns))


def _ctmc_discounted(model, reward: str | None, beta: float) -> np.ndarray:
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    R = _matrix(model)  # a CTMC's transition matrix holds rates (self-loops included)
    exit_rate = np.asarray(model.exit_rates, dtype=float)
    names = list(model.reward_models)
    rm = model.reward_models[reward if reward is not None else names[0]]
    n = R.shape[0]
    c = np.zeros(n)
    if rm.has_state_rewards:
        c += np.asarray(rm.state_rewards, dtype=float)
    if rm.has_state_action_rewards:
        c += exit_rate * np.asarray(rm.state_action_rewards, dtype=float)
    if rm.has_transition_rewards:
        raise ModelError("transition rewards: not in the CTMC discounted reference")
    Q = R - sp.diags(np.asarray(R.sum(axis=1)).ravel())
    return spla.spsolve((beta * sp.identity(n) - Q).tocsc(), c)
