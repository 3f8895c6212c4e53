"""The explicit formats of PRISM and Storm (``.tra``, ``.lab``, ``.sta``, reward files): see :mod:`hetsched.mdp.files`."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from .filemodel import KINDS, MarkovModel, _finish, _nums, _open_text


def _data_lines(text: str) -> list[str]:
    """Non-empty lines that are not ``#`` comments (PRISM 4.7+ writes ``# Reward structure ...``)."""
    return [ln for ln in (x.strip() for x in text.splitlines()) if ln and not ln.startswith("#")]


def _table(lines: list[str], width: int, where: str) -> list[list[str]]:
    """Split lines into ``width`` tokens (a fast path when every line has exactly ``width``)."""
    toks = " ".join(lines).split()
    if len(toks) == width * len(lines):
        return [toks[j::width] for j in range(width)]
    rows = [ln.split() for ln in lines]
    bad = next((r for r in rows if len(r) < width), None)
    if bad is not None:
        raise ModelError(f"{where}: line {' '.join(bad)!r} has {len(bad)} fields, expected {width}")
    return [[r[j] for r in rows] for j in range(width)] + [[" ".join(r[width:]) for r in rows]]


def _ints(tokens: list[str], where: str, what: str) -> np.ndarray:
    try:
        return np.array(tokens, dtype=np.int64)
    except ValueError:
        bad = next(x for x in tokens if not x.lstrip("-").isdigit())
        raise ModelError(f"{where}: {what} {bad!r} is not an integer") from None


def _read_tra(path: Path, text: str, kind: str | None) -> MarkovModel:
    where = str(path)
    lines = _data_lines(text)
    if not lines:
        raise ModelError(f"{where}: empty transition file")
    first = lines[0].split()
    notes: list[str] = []
    if first[0].lstrip("-").isdigit():
        # PRISM's header: "S T" (chain) or "S C T" (MDP), T = the number of transition lines below
        if not (len(first) in (2, 3) and all(x.isdigit() for x in first) and int(first[0]) >= 1
                and int(first[-1]) == len(lines) - 1):
            raise ModelError(f"{where}: the first line {lines[0]!r} is neither a model type ({', '.join(KINDS)}) "
                             "nor PRISM's header (states [choices] transitions, matching the lines below)")
        fmt = "prism-explicit"
        file_kind = "mdp" if len(first) == 3 else None
        n_states = int(first[0])
        body = lines[1:]
    else:
        fmt = "storm-explicit"
        file_kind = first[0].lower()
        if file_kind not in KINDS:
            raise ModelError(f"{where}: model type {first[0]!r} is not one of {', '.join(KINDS)}")
        n_states = None
        body = lines[1:]
    if kind is not None:
        kind = kind.lower()
        if kind not in KINDS:
            raise ModelError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
        if file_kind is not None and kind != file_kind and {kind, file_kind} != {"mdp", "ctmdp"}:
            raise ModelError(f"kind: {kind!r} contradicts the file's {file_kind!r} ({where})")
    kind = kind or file_kind
    if kind == "ma":
        return _read_ma_tra(path, body, notes)
    nondet = kind in ("mdp", "ctmdp") or (kind is None and fmt == "prism-explicit" and len(first) == 3)
    width = 4 if nondet else 3
    cols_ = _table(body, width, where) if body else [[] for _ in range(width)]
    src = _ints(cols_[0], where, "state")
    S = max(n_states or 0, int(src.max()) + 1 if src.size else 0,
            int(_ints(cols_[width - 2], where, "target").max()) + 1 if src.size else 0)
    tgt = _ints(cols_[width - 2], where, "target")
    vals = _nums(cols_[width - 1], f"{where}: value")
    if np.any(np.diff(src) < 0):
        order = np.lexsort((_ints(cols_[1], where, "choice") if nondet else tgt, src))
        src, tgt, vals = src[order], tgt[order], vals[order]
        cols_ = [[c[i] for i in order] for c in cols_]
    choice_labels = None
    if nondet:
        ch = _ints(cols_[1], where, "choice")
        n_ch = np.zeros(S, dtype=np.int64)
        np.maximum.at(n_ch, src, ch + 1)
        n_ch = np.maximum(n_ch, 1)  # a state without transitions keeps one (absorbing) choice
        state_ptr = np.concatenate(([0], np.cumsum(n_ch))).astype(np.int64)
        rows = state_ptr[src] + ch
        if ch.size and ch.min() < 0:
            raise ModelError(f"{where}: choice numbers must be >= 0")
        if len(cols_) > width and any(cols_[width]):
            lab = [""] * int(state_ptr[-1])
            for r, a in zip(rows, cols_[width]):
                lab[r] = a
            choice_labels = lab
    else:
        state_ptr = np.arange(S + 1, dtype=np.int64)
        rows = src
    if kind is None:  # PRISM's chain file does not say discrete or continuous time
        sums = np.bincount(rows, weights=vals, minlength=S)
        has = np.bincount(rows, minlength=S) > 0
        kind = "dtmc" if np.all(np.abs(sums[has] - 1) <= 1e-6) else "ctmc"
        notes.append(f"PRISM's .tra does not give the model type: read as a {kind.upper()} (rows "
                     f"{'all' if kind == 'dtmc' else 'do not all'} sum to 1; kind= overrides)")
    M = _finish(kind, state_ptr, rows, tgt, vals, where, notes)
    return MarkovModel(kind, state_ptr, M, np.zeros(0, dtype=np.int64), {}, {}, None, choice_labels, None,
                       str(path), fmt, notes)


def _read_ma_tra(path: Path, body: list[str], notes: list[str]) -> MarkovModel:
    """Storm's explicit Markov automaton: ``s label`` opens a choice (``!`` = Markovian, rates), ``* t v`` lines."""
    where = str(path)
    ch_state: list[int] = []
    ch_label: list[str] = []
    rows: list[int] = []
    tgt: list[str] = []
    vals: list[str] = []
    for ln in body:
        parts = ln.split()
        if parts[0] == "*":
            if len(parts) != 3 or not ch_state:
                raise ModelError(f"{where}: line {ln!r} is not '* target value' after a choice")
            rows.append(len(ch_state) - 1)
            tgt.append(parts[1])
            vals.append(parts[2])
        else:
            if len(parts) != 2:
                raise ModelError(f"{where}: line {ln!r} is not 'state action'")
            ch_state.append(int(_ints([parts[0]], where, "state")[0]))
            ch_label.append(parts[1])
    st = np.array(ch_state, dtype=np.int64)
    if np.any(np.diff(st) < 0):
        raise ModelError(f"{where}: states must be listed in increasing order")
    tg = _ints(tgt, where, "target") if tgt else np.zeros(0, dtype=np.int64)
    S = max(int(st.max()) + 1 if st.size else 0, int(tg.max()) + 1 if tg.size else 0)
    mk_choice = np.array([lab == "!" for lab in ch_label], bool)
    # maximal progress: a state with an instantaneous choice leaves no time for its Markovian one
    has_prob = np.zeros(S, bool)
    has_prob[st[~mk_choice]] = True
    drop = mk_choice & has_prob[st]
    if drop.any():
        notes.append(f"{int(drop.sum())} Markovian choice(s) beside instantaneous ones dropped (maximal progress)")
    keep = ~drop
    new_index = np.cumsum(keep) - 1
    r = np.array(rows, dtype=np.int64)
    sel = keep[r] if r.size else np.zeros(0, bool)
    n_ch = np.bincount(st[keep], minlength=S)
    empty = np.flatnonzero(n_ch == 0)
    state_ptr = np.concatenate(([0], np.cumsum(np.maximum(n_ch, 1)))).astype(np.int64)
    # global choice index of kept choices (states without any choice get one absorbing choice)
    gidx = state_ptr[st[keep]] + (np.arange(keep.sum()) - np.concatenate(([0], np.cumsum(n_ch)))[st[keep]])
    markovian = np.zeros(S, bool)
    markovian[st[keep & mk_choice]] = True
    markovian[empty] = True  # no choice at all: absorbing (no rate)
    M = _finish("ma", state_ptr, gidx[new_index[r[sel]]], tg[sel], _nums([v for v, s in zip(vals, sel) if s],
                f"{where}: value"), where, notes, markovian)
    labels = [ch_label[i] for i in np.flatnonzero(keep)]
    full = [""] * int(state_ptr[-1])
    for g, lab in zip(gidx, labels):
        full[g] = lab
    return MarkovModel("ma", state_ptr, M, np.zeros(0, dtype=np.int64), {}, {}, markovian, full, None, str(path),
                       "storm-explicit", notes)


def _read_labels(path: Path, S: int) -> dict[str, np.ndarray]:
    where = str(path)
    text = _open_text(path, "labels")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    out: dict[str, list[int]] = {}
    if lines and lines[0].upper() == "#DECLARATION":  # Storm
        try:
            end = [ln.upper() for ln in lines].index("#END")
        except ValueError:
            raise ModelError(f"{where}: '#DECLARATION' without '#END'") from None
        declared = " ".join(lines[1:end]).split()
        out = {name: [] for name in declared}
        for ln in lines[end + 1:]:
            parts = ln.split()
            s = int(_ints(parts[:1], where, "state")[0])
            for lab in parts[1:]:
                if lab not in out:
                    raise ModelError(f"{where}: label {lab!r} of state {s} is not declared")
                out[lab].append(s)
    elif lines:  # PRISM: 0="init" 1="deadlock" then "s: 0 1"
        decl = {int(i): n for i, n in re.findall(r'(\d+)="([^"]*)"', lines[0])}
        if not decl:
            raise ModelError(f"{where}: the first line must declare labels (PRISM: 0=\"init\" ...; "
                             "Storm: #DECLARATION)")
        out = {name: [] for name in decl.values()}
        for ln in lines[1:]:
            s_txt, _, rest = ln.partition(":")
            s = int(_ints([s_txt.strip()], where, "state")[0])
            for tok in rest.split():
                j = int(_ints([tok], where, "label number")[0])
                if j not in decl:
                    raise ModelError(f"{where}: label number {j} of state {s} is not declared")
                out[decl[j]].append(s)
    res = {k: np.array(sorted(v), dtype=np.int64) for k, v in out.items()}
    for k, v in res.items():
        if v.size and (v.min() < 0 or v.max() >= S):
            raise ModelError(f"{where}: label {k!r} names state {int(v.max())}, but the model has states 0..{S - 1}")
    return res


def _strip_header(lines: list[str], S: int, width: int) -> list[str]:
    """Drop PRISM's count header (its first number is the number of states, never a state index)."""
    if lines:
        f = lines[0].split()
        if len(f) in (2, 3) and f[0].isdigit() and int(f[0]) == S:
            return lines[1:]
    return lines


def _read_state_rewards(path: Path, S: int) -> np.ndarray:
    where = str(path)
    lines = _strip_header(_data_lines(_open_text(path, "state rewards")), S, 2)
    out = np.zeros(S)
    if lines:
        c = _table(lines, 2, where)
        s = _ints(c[0], where, "state")
        if s.min() < 0 or s.max() >= S:
            raise ModelError(f"{where}: reward for state {int(s.max())}, but the model has states 0..{S - 1}")
        np.add.at(out, s, _nums(c[1], f"{where}: reward"))
    return out


def _read_transition_rewards(path: Path, m: MarkovModel) -> sp.csr_matrix:
    where = str(path)
    S = m.n_states
    nondet = m.kind in ("mdp", "ctmdp", "ma")
    width = 4 if nondet else 3
    lines = _strip_header(_data_lines(_open_text(path, "transition rewards")), S, width)
    if not lines:
        return sp.csr_matrix((m.n_choices, S))
    c = _table(lines, width, where)
    s = _ints(c[0], where, "state")
    rows = m.state_ptr[s] + (_ints(c[1], where, "choice") if nondet else 0)
    t = _ints(c[width - 2], where, "target")
    v = _nums(c[width - 1], f"{where}: reward")
    if s.min() < 0 or s.max() >= S or t.min() < 0 or t.max() >= S:
        raise ModelError(f"{where}: a reward names a state outside 0..{S - 1}")
    R = sp.csr_matrix((v, (rows, t)), shape=(m.n_choices, S))
    missing = R.multiply(m.matrix > 0) if R.nnz else R
    if R.nnz and abs(missing.sum() - R.sum()) > 1e-9 * max(abs(R).sum(), 1.0):
        raise ModelError(f"{where}: a transition reward is given for a transition the model does not have")
    return R


def _companions(stem: Path) -> tuple[dict[str, Path], dict[str, Path]]:
    """State and transition reward files next to ``stem.tra``, by reward name (module docstring)."""
    srew: dict[str, Path] = {}
    trew: dict[str, Path] = {}
    for f in sorted(stem.parent.glob(stem.name + ".*")):
        rest = f.name[len(stem.name):]
        for suffixes, table in (((".srew", ".state.rew", ".rew"), srew), ((".trew", ".trans.rew"), trew)):
            for suf in suffixes:
                if rest.endswith(suf) and not (suf == ".rew" and rest.endswith((".state.rew", ".trans.rew"))):
                    name = rest[1:-len(suf)] if len(rest) > len(suf) else ""
                    table.setdefault(name, f)
                    break
            else:
                continue
            break
    return srew, trew


def _read_sta(path: Path, S: int) -> list[str]:
    lines = _data_lines(_open_text(path, "states"))
    out = [""] * S
    head = lines[0] if lines else ""
    names = head.strip("()").split(",") if head.startswith("(") else []
    for ln in lines[1:]:
        s_txt, _, val = ln.partition(":")
        s = int(_ints([s_txt.strip()], str(path), "state")[0])
        if 0 <= s < S:
            vals = val.strip().strip("()").split(",")
            out[s] = " & ".join(f"{n}={v}" for n, v in zip(names, vals)) if len(names) == len(vals) else val
    return out
