"""Markov chains and MDPs from the files of other tools: Storm's DRN and the explicit formats of PRISM and Storm.

:func:`read` returns a :class:`MarkovModel`: the model exactly as the file states
it (probabilities for discrete-time models, rates for continuous-time ones,
self-loops kept), its initial states, labels, reward structures and state
descriptions. :func:`hetsched.mdp.solve` maps it to the CTMDP solver.

Formats
-------
``.drn`` (Storm's *direct encoding*, what ``storm --exportbuild`` and
``stormpy.export_to_drn`` write): ``@type`` DTMC, CTMC, MDP, Markov Automaton
(``MA``) or CTMDP; ``@reward_models`` names the reward structures, whose values
are listed per state (``state s [r1, r2]``: state rewards) and per choice
(``action a [r1, r2]``: action rewards); ``!rate`` gives a Markov automaton's
exit rate (its transitions are then probabilities) or a CTMC's (ignored: the
transitions are rates); labels follow the state; ``//[...]`` lines after a state
are its valuation. Values may be decimals or fractions (``1/3``). Parametric,
interval, partially observable and game models are refused by name.

``.tra`` (explicit): PRISM's, whose first line counts states and transitions
(``S T`` for a DTMC or CTMC, ``S C T`` for an MDP), or Storm's, whose first line
names the type (``dtmc``, ``ctmc``, ``mdp``, ``ctmdp``, ``ma``). Lines are ``s t
v`` (chains), ``s c t v [action]`` (MDP, CTMDP), or for Storm's MA ``s label``
followed by ``* t v`` lines (the label ``!`` marks the Markovian choice, its
values are rates). PRISM's file does not say whether a chain is discrete or
continuous: rows that all sum to 1 are read as a DTMC, otherwise a CTMC (``kind=``
overrides; the choice is in :attr:`MarkovModel.notes`). Companion files next to
``NAME.tra`` are found by name: ``NAME.lab`` (labels, PRISM's ``0="init" ...`` /
``s: 0 1`` or Storm's ``#DECLARATION``), ``NAME.sta`` (state descriptions),
state rewards ``NAME.srew``, ``NAME.R.srew``, ``NAME.R.state.rew``,
``NAME.R.rew``, and transition rewards ``NAME.trew``, ``NAME.R.trew``,
``NAME.R.trans.rew`` (``R`` names the reward structure); PRISM's count headers and
``#`` comment lines in them are skipped.

A state without transitions is made absorbing (a self-loop of probability 1 in a
discrete-time model, no rate in a continuous-time one), as PRISM and Storm do,
and :attr:`MarkovModel.notes` says which.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ModelError
from .drn import _read_drn
from .explicit import _companions, _read_labels, _read_sta, _read_state_rewards, _read_tra, _read_transition_rewards
from .filemodel import KINDS, MarkovModel, Reward, _open_text

__all__ = ["MarkovModel", "Reward", "read", "KINDS"]


def read(path: str | Path, *, kind: str | None = None, labels: str | Path | None = None,
         state_rewards: str | Path | dict[str, str | Path] | None = None,
         transition_rewards: str | Path | dict[str, str | Path] | None = None,
         states: str | Path | None = None) -> MarkovModel:
    """Read a DTMC, CTMC, MDP, CTMDP or Markov automaton from a ``.drn`` or ``.tra`` file (module docstring).

    For ``.tra`` the companion files are found by name unless given: ``labels``
    (``.lab``), ``states`` (``.sta``), ``state_rewards`` / ``transition_rewards``
    (one path, or ``{name: path}``). ``kind`` overrides the model type PRISM's
    ``.tra`` leaves open (``dtmc`` or ``ctmc``). Errors name the file, the line and
    the value (:class:`~hetsched.errors.ModelError`).
    """
    path = Path(path)
    text = _open_text(path, "model file")
    if path.suffix.lower() == ".drn" or text.lstrip().startswith(("@type", "//")) and "@model" in text:
        if any(x is not None for x in (labels, state_rewards, transition_rewards, states)):
            raise ModelError(f"{path}: a DRN file holds its own labels and rewards; companion files apply to .tra")
        m = _read_drn(path, text)
        if kind is not None and kind.lower() != m.kind:
            raise ModelError(f"kind: {kind!r} contradicts the file's @type ({m.kind.upper()})")
        return m
    if path.suffix.lower() != ".tra":
        raise ModelError(f"{path}: expected a .drn (Storm) or .tra (PRISM/Storm explicit) file")
    m = _read_tra(path, text, kind)
    stem = path.with_suffix("")
    S = m.n_states
    lab = Path(labels) if labels is not None else Path(f"{stem}.lab")
    if labels is not None or lab.exists():
        m.labels = _read_labels(lab, S)
    m.initial = m.labels.get("init", np.zeros(1, dtype=np.int64))
    if "init" not in m.labels:
        m.notes.append("no 'init' label: state 0 is taken as initial")
    sta = Path(states) if states is not None else Path(f"{stem}.sta")
    if states is not None or sta.exists():
        m.valuations = _read_sta(sta, S)
    found_s, found_t = _companions(stem)
    if state_rewards is not None:
        found_s = state_rewards if isinstance(state_rewards, dict) else {"": state_rewards}
    if transition_rewards is not None:
        found_t = transition_rewards if isinstance(transition_rewards, dict) else {"": transition_rewards}
    for name in list(dict.fromkeys([*found_s, *found_t])):
        r = Reward()
        if name in found_s:
            r.state = _read_state_rewards(Path(found_s[name]), S)
        if name in found_t:
            r.transition = _read_transition_rewards(Path(found_t[name]), m)
        m.rewards[name] = r
    return m
