"""A Markov chain or MDP as read from a file (:class:`MarkovModel`), and the checks every reader shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError

__all__ = ["MarkovModel", "Reward", "KINDS"]

#: model kinds: discrete time (probabilities) or continuous time (rates), with or without choices
KINDS = ("dtmc", "ctmc", "mdp", "ctmdp", "ma")


@dataclass(eq=False)
class Reward:
    """One reward structure: state rewards ``(S,)``, action rewards ``(K,)``, transition rewards ``(K, S)``."""

    state: np.ndarray | None = None
    action: np.ndarray | None = None
    transition: sp.csr_matrix | None = None


@dataclass(eq=False)
class MarkovModel:
    """A model read from a file (see the module docstring); choices are numbered ``0..K-1``, by state.

    ``matrix`` (``K x S``, CSR) holds probabilities for ``dtmc``/``mdp`` and rates for
    ``ctmc``/``ctmdp``; for ``ma`` the Markovian choices hold rates and the others
    probabilities (``markovian`` marks the Markovian states, which have one choice).
    """

    kind: str
    state_ptr: np.ndarray
    matrix: sp.csr_matrix
    initial: np.ndarray
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    rewards: dict[str, Reward] = field(default_factory=dict)
    markovian: np.ndarray | None = None
    choice_labels: list[str] | None = None
    valuations: list[str] | None = None
    path: str = ""
    format: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def n_states(self) -> int:
        return int(self.state_ptr.size - 1)

    @property
    def n_choices(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def n_transitions(self) -> int:
        return int(self.matrix.nnz)

    @property
    def continuous_time(self) -> bool:
        return self.kind in ("ctmc", "ctmdp", "ma")

    @property
    def choice_state(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_states, dtype=np.int64), np.diff(self.state_ptr))

    def __repr__(self) -> str:
        rw = ", ".join(self.rewards) or "none"
        return (f"MarkovModel({self.kind.upper()} from {Path(self.path).name or '?'} ({self.format}): "
                f"{self.n_states} states, {self.n_choices} choices, {self.n_transitions} transitions, "
                f"rewards: {rw})")

    def solve(self, criterion: str = "average", **kw: Any):
        """Shortcut for :func:`hetsched.mdp.solve` on this model."""
        from .filesolve import solve

        return solve(self, criterion=criterion, **kw)


# --------------------------------------------------------------------------- numbers and checks


def _num(tok: str, where: str) -> float:
    try:
        if "/" in tok:
            a, b = tok.split("/", 1)
            return float(a) / float(b)
        return float(tok)
    except (ValueError, ZeroDivisionError):
        raise ModelError(f"{where}: {tok!r} is not a number") from None


def _nums(tokens: Sequence[str], where: str) -> np.ndarray:
    try:
        return np.array(tokens, dtype=float)
    except ValueError:
        return np.array([_num(t, where) for t in tokens], dtype=float)


#: largest model file read (bytes): a DRN of a million states and ten million transitions is about 200 MB
MAX_MODEL_BYTES = 2 * 1024**3


def _open_text(path: Path, what: str) -> str:
    """The file's text through the project's safe reader (regular files only, size checked first)."""
    from ..safeio import read_input

    return read_input(path, what=what, max_bytes=MAX_MODEL_BYTES)


def _finish(kind: str, state_ptr: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
            where: str, notes: list[str], markovian: np.ndarray | None = None) -> sp.csr_matrix:
    """The ``K x S`` matrix, checked: targets in range, values finite and >= 0, probabilities summing to 1."""
    S, K = state_ptr.size - 1, int(state_ptr[-1])
    if cols.size and (cols.min() < 0 or cols.max() >= S):
        bad = int(cols[(cols < 0) | (cols >= S)][0])
        raise ModelError(f"{where}: transition to state {bad}, but the model has states 0..{S - 1}")
    if vals.size and (not np.all(np.isfinite(vals)) or vals.min() < 0):
        bad = vals[~np.isfinite(vals) | (vals < 0)][0]
        raise ModelError(f"{where}: probabilities and rates must be finite and >= 0, got {bad!r}")
    M = sp.csr_matrix((vals, (rows, cols)), shape=(K, S))
    M.sum_duplicates()
    prob_rows = np.ones(K, bool) if kind in ("dtmc", "mdp") else np.zeros(K, bool)
    if kind == "ma":
        cs = np.repeat(np.arange(S), np.diff(state_ptr))
        prob_rows = ~markovian[cs]
    sums = np.asarray(M.sum(axis=1)).ravel()
    empty = np.flatnonzero(np.diff(M.indptr) == 0)
    if empty.size:
        cs = np.repeat(np.arange(S), np.diff(state_ptr))
        if np.any(prob_rows[empty]):
            M = M.tolil()
            for k in empty[prob_rows[empty]]:
                M[k, cs[k]] = 1.0
            M = M.tocsr()
            sums = np.asarray(M.sum(axis=1)).ravel()
        st = np.unique(cs[empty])
        notes.append(f"{st.size} state(s) without transitions made absorbing (first: {int(st[0])})")
    off = prob_rows & (np.abs(sums - 1.0) > 1e-6)
    if off.any():
        k = int(np.flatnonzero(off)[0])
        s = int(np.searchsorted(state_ptr, k, side="right") - 1)
        raise ModelError(f"{where}: the probabilities of state {s}, choice {k - int(state_ptr[s])} sum to "
                         f"{sums[k]:.10g}, not 1")
    return M
