"""Solving a model read from a file: every kind mapped exactly to the CTMDP solver, and the result.

Mappings (``r`` the reward of a step or a state-action pair: state reward + action
reward + expected transition reward; ``-r`` when maximising, since the solver
minimizes cost):

* **DTMC / MDP, discounted** with factor ``gamma`` in (0, 1) (Storm's
  ``Cdiscount=gamma``: ``sum_k gamma^k r_k``, the first step undiscounted): the
  CTMDP with rates ``P(s, a, .)`` (self-loops dropped: they change nothing in
  continuous time), cost rate ``r / gamma`` and discount rate
  ``beta = (1 - gamma) / gamma``. Uniformized at ``nu = 1`` it is the file's chain
  with discount ``1 / (1 + beta) = gamma``, so its ``J`` equals the discrete value.
* **DTMC / MDP, long-run average** (``lim (1/n) E sum_{k<n} r_k``): the same
  rates with cost rate ``r``; ``P = I + Q`` makes the stationary laws (and the
  recurrent classes) of every policy the same, so the gains are equal.
* **CTMC / CTMDP**: the rates as given; the cost rate is the state reward plus,
  for impulses, ``E(s, a) x`` the action reward (``E`` the exit rate *with*
  self-loops: each jump collects it, as Storm counts) plus ``sum_t q(s, a, t)
  x`` the transition reward. Discounted with rate ``beta = discount``
  (``E int e^{-beta t} dC(t)``), or long-run average per time unit.
* **Markov automata** (instantaneous choices beside exponential delays): policy
  iteration over the instantaneous choices, each policy evaluated on the CTMC left
  after eliminating the instantaneous states (:mod:`hetsched.mdp.automata`);
  models whose instantaneous choices can loop forever without time passing (Zeno)
  are refused by name.

Solvers (``method="auto"``): average, multichain policy iteration at every size
(:func:`hetsched.mdp.average.average_policy_iteration`: the optimal gain of every
state; its linear systems are solved by sparse LU up to 2,000 unknowns and by
ILU-preconditioned Krylov solvers, residual-checked, beyond:
:func:`hetsched.mdp.operators.linsolve`). Discounted: up to :data:`LU_MAX_STATES`
states policy iteration, certified by the MacQueen bound; beyond, compiled
Gauss-Seidel value iteration (same certificate). Relative value iteration (Odoni
bounds) is available by ``method`` for unichain or communicating models only; on
a multichain model it does not converge and the result says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping

import numpy as np

from ..errors import ModelError
from ..results import Result, fmt, jsonable
from .filemodel import MarkovModel, Reward
from .model import CTMDP
from .result import MDPResult

__all__ = ["FileSolution", "solve", "to_ctmdp", "CRITERIA"]

CRITERIA = ("discounted", "average")
#: above this many states the default discounted solver is value iteration (certified bound), not policy
#: iteration (SuperLU's fill-in on a 36,000-state CTMC of the flexible manufacturing system exhausted 16 GB)
LU_MAX_STATES = 20_000
#: iteration limit of relative value iteration under method="auto"
RVI_MAX_ITER = 200_000


def _reward(m: MarkovModel, name: str | None) -> tuple[str, Reward]:
    if not m.rewards:
        raise ModelError(f"reward: {m.path or 'the model'} defines no reward structure, so there is nothing to "
                         "optimise (a DRN file lists them under @reward_models; a .tra file needs a .srew/.trew/.rew "
                         "file next to it)")
    if name is None:
        if len(m.rewards) > 1:
            raise ModelError(f"reward: the model has {len(m.rewards)} reward structures "
                             f"({', '.join(repr(k) for k in m.rewards)}); choose one with --reward NAME")
        name = next(iter(m.rewards))
    if name not in m.rewards:
        raise ModelError(f"reward: {name!r} is not one of the model's reward structures "
                         f"({', '.join(repr(k) for k in m.rewards)})")
    return name, m.rewards[name]


def _pair_reward(m: MarkovModel, r: Reward, impulse_rate: np.ndarray | None) -> np.ndarray:
    """Reward of each choice: state reward + action and transition rewards (times the jump rate in CT)."""
    cs = m.choice_state
    K = m.n_choices
    total = np.zeros(K)
    if r.state is not None:
        total += r.state[cs]
    imp = np.zeros(K)
    if r.action is not None:
        imp += r.action
    if r.transition is not None:
        # expected transition reward per step (DT) or rate of transition reward per time (CT, below)
        trans = np.asarray(m.matrix.multiply(r.transition).sum(axis=1)).ravel()
    else:
        trans = np.zeros(K)
    if impulse_rate is None:  # discrete time: per step
        return total + imp + trans
    return total + impulse_rate * imp + trans


def _check_discount(m: MarkovModel, criterion: str, discount: float | None) -> None:
    if criterion not in CRITERIA:
        raise ModelError(f"criterion: expected one of {', '.join(CRITERIA)}, got {criterion!r}")
    if criterion != "discounted":
        return
    if discount is None:
        raise ModelError("discount: the discounted criterion needs --discount (a factor in (0, 1) for a DTMC or "
                         "MDP, a rate > 0 for a CTMC, CTMDP or Markov automaton)")
    d = float(discount)
    if m.continuous_time and not (d > 0 and np.isfinite(d)):
        raise ModelError(f"discount: a continuous-time model needs a discount rate > 0, got {discount!r}")
    if not m.continuous_time and not 0 < d < 1:
        raise ModelError(f"discount: a discrete-time model needs a discount factor in (0, 1), got {discount!r}")


def to_ctmdp(m: MarkovModel, reward: str | None = None, criterion: str = "average", discount: float | None = None,
             maximise: bool = False) -> dict[str, Any]:
    """The CTMDP equivalent to ``m`` under ``criterion`` (module docstring) and how to map its answer back.

    Returns ``{"model": CTMDP, "beta": ..., "reward": name, "mapping": text, "notes": [...], "sign": +-1}``.
    """
    name, r = _reward(m, reward)
    _check_discount(m, criterion, discount)
    notes: list[str] = []
    sign = -1.0 if maximise else 1.0
    beta = None
    cs = m.choice_state
    if m.kind == "ma":
        raise ModelError("a Markov automaton has no single equivalent CTMDP: hetsched.mdp.solve solves it by policy "
                         "iteration over its instantaneous choices (hetsched.mdp.automata)")
    local = np.arange(m.n_choices) - m.state_ptr[cs]
    if m.continuous_time:
        jump = np.asarray(m.matrix.sum(axis=1)).ravel()  # exit rate with self-loops: each jump collects
        c = _pair_reward(m, r, jump)
        beta = discount
        mapping = (f"{m.kind.upper()}: rates as given, cost rate = state reward + exit rate x action reward + "
                   "rate-weighted transition reward"
                   + (f"; discount rate beta = {discount:g}" if beta is not None else "; average per time unit"))
    else:
        c = _pair_reward(m, r, None)
        if criterion == "discounted":
            beta = (1 - discount) / discount
            c = c / discount
            mapping = (f"{m.kind.upper()}: rates = transition probabilities, cost rate = reward / gamma, "
                       f"beta = (1 - gamma) / gamma = {beta:.6g} (gamma = {discount:g})")
        else:
            mapping = f"{m.kind.upper()}: rates = transition probabilities, cost rate = reward per step"
    model = CTMDP.from_pairs(cs, local, m.matrix, sign * c, m.n_states)
    return {"model": model, "beta": beta, "reward": name, "mapping": mapping, "notes": notes, "sign": sign}


@dataclass(repr=False)
class FileSolution(Result):
    """The optimal values of a model read from a file (discounted value or long-run average per state).

    ``values[s]``: the optimal discounted reward/cost from state ``s`` (discounted)
    or its optimal long-run average (average: the gain, which may differ between
    states of a multichain model); ``value``: at the initial state (``None`` when
    the file has several); ``policy[s]``: the choice taken in ``s`` (numbered from
    0 within the state, as in the file); ``actions``: their labels where the file names them.
    """

    STATUS: ClassVar[Mapping[int, str]] = MDPResult.STATUS

    path: str
    kind: str
    format: str
    criterion: str
    maximise: bool
    discount: float | None
    reward: str
    values: np.ndarray
    policy: np.ndarray
    initial: np.ndarray
    mapping: str
    solver: MDPResult
    n_choices: int = 0
    actions: list[str] | None = None
    valuations: list[str] | None = None
    bias: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    message: str = ""

    def __post_init__(self) -> None:
        if not self.message:
            self.message = self.solver.message

    @property
    def status(self) -> int:
        return int(self.solver.status)

    @property
    def n_states(self) -> int:
        return int(self.values.size)

    @property
    def value(self) -> float | None:
        return float(self.values[self.initial[0]]) if self.initial.size == 1 else None

    @property
    def multichain(self) -> bool:
        v = self.values
        return self.criterion == "average" and v.size > 0 and float(v.max() - v.min()) > 1e-9 * max(
            float(np.abs(v).max()), 1e-300)

    def as_dict(self) -> dict[str, Any]:
        return jsonable({
            "status": self.status, "success": self.success, "message": self.message, "seconds": self.seconds,
            "path": self.path, "kind": self.kind, "format": self.format, "criterion": self.criterion,
            "maximise": self.maximise, "discount": self.discount, "reward": self.reward,
            "states": self.n_states, "choices": self.n_choices, "initial": self.initial,
            "value": self.value, "initial_values": self.values[self.initial], "multichain": self.multichain,
            "method": self.solver.method, "iterations": self.solver.iterations,
            "error_bound": self.solver.error_bound, "mapping": self.mapping, "notes": self.notes,
            "values": self.values, "policy": self.policy, "actions": self.actions,
        })

    def _frame_rows(self) -> Iterable[dict[str, Any]]:
        meas = "value" if self.criterion == "discounted" else "gain"
        for s in range(self.n_states):
            yield {"criterion": self.criterion, "state": s, "measure": meas, "value": float(self.values[s])}
            yield {"criterion": self.criterion, "state": s, "measure": "choice", "value": float(self.policy[s])}

    def _headline(self) -> str:
        what = ("max" if self.maximise else "min") + (" discounted" if self.criterion == "discounted" else
                                                        " long-run average")
        rw = repr(self.reward) if self.reward else "(unnamed)"
        at = (f"{fmt(self.value, 10)} at initial state {int(self.initial[0])}" if self.value is not None
              else f"initial states {self.initial.tolist()}: {[fmt(v, 8) for v in self.values[self.initial]]}")
        return (f"{Path(self.path).name or 'model'} ({self.kind.upper()}, {self.n_states} states): {what} reward "
                f"{rw} = {at}" + ("; multichain" if self.multichain else ""))


def solve(model: MarkovModel | str | Path, criterion: str = "average", *, discount: float | None = None,
          maximise: bool = False, reward: str | None = None, method: str = "auto", eps: float | None = None,
          kind: str | None = None) -> FileSolution:
    """Optimal discounted or long-run average reward (or cost) of a file's model, per state.

    ``model``: a :class:`MarkovModel` or a path (read with :func:`hetsched.mdp.read`,
    ``kind`` passed on). ``criterion``: ``"discounted"`` (with ``discount``: a factor
    in (0, 1) for DTMC/MDP, a rate > 0 for CTMC/CTMDP/MA) or ``"average"``.
    ``maximise``: maximise the reward (default: minimise it, as a cost). ``reward``:
    the reward structure's name (needed when the file has several). ``method``:
    ``"auto"``; discounted ``"policy-iteration"`` or ``"value-iteration"``; average
    ``"policy-iteration"`` (multichain) or ``"relative-value-iteration"``
    (unichain/communicating only). The mapping to the CTMDP is exact (module
    docstring) and stated in the result's ``mapping``.
    """
    from .average import average_policy_iteration, relative_value_iteration
    from .discounted import policy_iteration, value_iteration
    from .files import read

    t0 = time.perf_counter()
    m = model if isinstance(model, MarkovModel) else read(model, kind=kind)
    sign = -1.0 if maximise else 1.0
    if m.kind == "ma":
        from .automata import solve_automaton

        name, r = _reward(m, reward)
        _check_discount(m, criterion, discount)
        if method not in ("auto", "policy-iteration"):
            raise ModelError(f"method: a Markov automaton is solved by policy iteration, got {method!r}")
        out = solve_automaton(m, r, criterion, None if discount is None else float(discount), sign)
        res = MDPResult(status=out["status"], message=out["message"], policy=out["policy"], values=out["values"],
                        method="markov-automaton-policy-iteration", criterion=criterion,
                        iterations=out["iterations"], seconds=out["seconds"], error_bound=float("nan"),
                        beta=discount if criterion == "discounted" else None)
        if out["n_classes"] is not None:
            res.extra["n_classes"] = out["n_classes"]
        conv = {"reward": name, "notes": [f"policy iteration over the instantaneous choices; "
                                          f"{out['n_markovian']} Markovian states"],
                "mapping": ("Markov automaton: instantaneous states eliminated under each choice of policy "
                            "iteration (hetsched.mdp.automata); "
                            + (f"discount rate beta = {float(discount):g}" if criterion == "discounted"
                               else "long-run average per time unit"))}
        values = sign * out["values"]
        policy = np.asarray(out["policy"], dtype=np.int64)
    else:
        conv = to_ctmdp(m, reward, criterion, discount, maximise)
        c: CTMDP = conv["model"]
        if criterion == "discounted":
            beta = conv["beta"]
            scale = float(np.abs(c.cost).max()) / beta if c.n_pairs else 1.0
            tol = 1e-10 * max(scale, 1e-300) if eps is None else float(eps)
            if method == "auto":
                method = "policy-iteration" if c.n_states <= LU_MAX_STATES else "value-iteration"
            if method == "policy-iteration":
                res = policy_iteration(c, beta, eps=tol)
            elif method == "value-iteration":
                res = value_iteration(c, beta, eps=tol, max_iter=1_000_000)
            else:
                raise ModelError(f"method: expected auto, policy-iteration or value-iteration, got {method!r}")
            vals_c = res.values
        else:
            if method == "auto":
                method = "policy-iteration"  # multichain; its linear solves are iterative beyond 2,000 unknowns
            if method == "policy-iteration":
                res = average_policy_iteration(c)
            elif method == "relative-value-iteration":
                res = relative_value_iteration(c, max_iter=RVI_MAX_ITER)
                if res.success:
                    res.gains = np.full(c.n_states, float(res.gain))
                else:  # no certified gain: no value is reported (NaN), the bounds stay in lower/upper
                    res.gain, res.gains = None, None
                    res.message += ("; relative value iteration needs a unichain or communicating model "
                                    "(--method policy-iteration handles multichain models)")
            else:
                raise ModelError(f"method: expected auto, policy-iteration or relative-value-iteration, "
                                 f"got {method!r}")
            vals_c = res.gains if res.gains is not None else np.full(c.n_states, np.nan)
        values = sign * vals_c
        policy = np.asarray(res.policy, dtype=np.int64)
    values = values + 0.0  # no -0.0 from a negated zero
    actions = None
    if m.choice_labels is not None:
        actions = [m.choice_labels[int(m.state_ptr[s] + policy[s])] for s in range(m.n_states)]
    msg = res.message
    if res.status == 0 and criterion == "average":
        lo, hi = float(values.min()), float(values.max())
        if hi - lo > 1e-9 * max(abs(lo), abs(hi), 1e-300):
            ncls = int(res.extra["classes"].max()) + 1 if "classes" in res.extra else res.extra.get("n_classes")
            msg = (f"converged: multichain, the optimal long-run average ranges over {lo:.10g} .. {hi:.10g} by "
                   "state" + ("" if ncls is None else f" ({ncls} recurrent classes under the optimal policy)"))
        else:
            msg = f"converged: the optimal long-run average is {lo:.10g} in every state"
    bias = None if criterion == "discounted" or m.kind == "ma" else sign * np.asarray(res.values)
    return FileSolution(path=m.path, kind=m.kind, format=m.format, criterion=criterion, maximise=bool(maximise),
                        discount=None if discount is None else float(discount), reward=conv["reward"],
                        values=values, policy=policy, initial=np.asarray(m.initial, dtype=np.int64),
                        mapping=conv["mapping"], solver=res, n_choices=m.n_choices, actions=actions,
                        valuations=m.valuations, bias=bias,
                        notes=list(m.notes) + list(conv["notes"]), seconds=time.perf_counter() - t0, message=msg)
