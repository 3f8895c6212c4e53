"""A net as a GSPN: constant rates, weights and arcs, no guards (for Storm and GreatSPN).

SRN features that a GSPN cannot hold - marking-dependent rates or weights, guards,
marking-dependent arc multiplicities, k-server and infinite-server semantics - are
either refused with an error that names every transition and feature
(``unfold=False``), or *unfolded* (default): a transition ``t`` whose functions
read the places ``S`` becomes one copy per set of values of ``S`` at which ``t`` is
enabled in some reachable marking, each copy pinned to those values by test arcs
(an input arc of multiplicity ``v`` given back by an output arc, and an inhibitor
arc of multiplicity ``v + 1``), with the constant rate, weight and arc
multiplicities the functions return there; runs of consecutive values of the last
place of ``S`` with the same effect share one copy (an interval test). Place
capacities become inhibitor arcs (a transition that adds ``a`` tokens to a place
of capacity ``c`` gets an inhibitor arc of multiplicity ``c - a + 1`` from it),
because Storm reads a capacity as a bound that must never be exceeded. On every
reachable marking a copy is enabled exactly where ``t`` is, with the same rate and
the same successor, so the reachability graph and the CTMC are the same
(``check=True`` re-explores the unfolded net and compares the chains). The
unfolding is exact for the reachable markings only: it is a model of *this*
initial marking, not of the net for every initial marking.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ModelError
from .net import Net, RecordingView
from .firing import enabling_degree
from .reach import StateSpace

__all__ = ["GSPNForm", "GSPNTransition", "gspn_form", "srn_features"]


# --------------------------------------------------------------------------- GSPN form


@dataclass(frozen=True)
class GSPNTransition:
    """One GSPN transition: constant rate (timed, single server) or weight (immediate)."""

    name: str
    timed: bool
    value: float
    priority: int
    inputs: dict[str, int]
    outputs: dict[str, int]
    inhibitors: dict[str, int]
    origin: str          # the net transition it comes from


@dataclass
class GSPNForm:
    """A net with constant rates, weights and arcs and no guards (a GSPN)."""

    name: str
    places: dict[str, int]              # initial marking
    bounds: dict[str, int]              # largest reachable token count of each place
    transitions: list[GSPNTransition] = field(default_factory=list)
    unfolded: dict[str, int] = field(default_factory=dict)   # net transition -> number of copies

    def to_net(self) -> Net:
        """The GSPN as a hetsched :class:`Net` (to check the unfolding)."""
        net = Net(self.name)
        for p, init in self.places.items():
            net.place(p, init)
        for t in self.transitions:
            arcs = dict(inputs=t.inputs, outputs=t.outputs, inhibitors=t.inhibitors)
            if t.timed:
                net.timed(t.name, t.value, **arcs)
            else:
                net.immediate(t.name, t.value, priority=t.priority, **arcs)
        return net


def srn_features(net: Net) -> dict[str, list[str]]:
    """The SRN-only features of each transition (empty for a GSPN).

    A marking-dependent rate, weight, guard or arc multiplicity has no GSPN
    counterpart (Storm's and GreatSPN's transitions have constant rates and
    constant arcs; Storm's timed transitions are single-server in PNML), nor do
    k-server and infinite-server semantics in PNML.
    """
    out: dict[str, list[str]] = {}
    for t in net.transitions:
        f = []
        if callable(t.value):
            f.append(f"marking-dependent {'rate' if t.timed else 'weight'}")
        if t.guard is not None:
            f.append("guard")
        if t.timed and t.servers != 1:
            f.append("infinite-server semantics" if t.servers == np.inf else f"{t.servers}-server semantics")
        for label, arcs in (("input", t.inputs), ("output", t.outputs), ("inhibitor", t.inhibitors)):
            md = [p for p, m in arcs if callable(m)]
            if md:
                f.append(f"marking-dependent {label} arc(s) {', '.join(md)}")
        if f:
            out[t.name] = f
    return out


def _evaluate(f, X, index, seen, what, tname) -> np.ndarray:
    """``f`` on the batch ``X`` (per marking if the batched call fails), recording the places read."""
    B = X.shape[0]
    if B == 0:
        return np.zeros(0)
    try:
        v = np.asarray(f(RecordingView(X, index, seen)))
        if v.shape == ():
            return np.broadcast_to(v, (B,))
        if v.shape == (B,):
            return v
    except ModelError:
        raise
    except Exception:  # noqa: BLE001 - scalar-only function: per marking below
        pass
    out = []
    for i in range(B):
        try:
            out.append(f(RecordingView(X[i], index, seen)))
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"{what} of transition {tname!r} raised {type(exc).__name__}: {exc}") from exc
    return np.asarray(out)


def _relevant_markings(space: StateSpace, timed: bool) -> np.ndarray:
    # timed transitions only fire in tangible markings; immediate ones are evaluated everywhere
    X = space.markings.astype(np.int64)
    return X[~space.vanishing] if timed else X


def _unfold_transition(t, X: np.ndarray, index: dict[str, int], bounds: dict[str, int],
                       taken: set[str]) -> list[GSPNTransition]:
    """Copies of SRN transition ``t`` that reproduce it on the markings ``X`` (see module docstring)."""
    seen: set[str] = set()
    B = X.shape[0]
    en = np.ones(B, dtype=bool)
    arc_vals: dict[tuple[str, str], np.ndarray] = {}
    for kind, arcs in (("in", t.inputs), ("inh", t.inhibitors)):
        for p, m in arcs:
            v = (np.full(B, m, np.int64) if not callable(m)
                 else _evaluate(m, X, index, seen, f"multiplicity of {kind} arc {p}", t.name).astype(np.int64))
            arc_vals[(kind, p)] = v
            col = X[:, index[p]]
            en &= (col >= v) if kind == "in" else ~((col >= v) & (v > 0))
    if t.guard is not None:
        rows = np.flatnonzero(en)
        g = _evaluate(t.guard, X[rows], index, seen, "guard", t.name).astype(bool)
        en[rows[~g]] = False
    rows = np.flatnonzero(en)
    if callable(t.value):
        val = np.asarray(_evaluate(t.value, X[rows], index, seen, "rate" if t.timed else "weight", t.name),
                         dtype=np.float64)
    else:
        val = np.full(rows.size, float(t.value))
    if t.timed and t.servers != 1:
        ins = [(index[p], arc_vals[("in", p)]) for p, _ in t.inputs]
        val = val * enabling_degree(t, ins, X[rows], rows, t.servers)
        seen.update(p for p, _ in t.inputs)
    keep = val > 0
    rows, val = rows[keep], val[keep]
    outs = {}
    for p, m in t.outputs:
        outs[p] = (np.full(rows.size, m, np.int64) if not callable(m)
                   else _evaluate(m, X[rows], index, seen, f"multiplicity of output arc {p}", t.name).astype(np.int64))
    S = [p for p in index if p in seen]          # net order
    sidx = [index[p] for p in S]
    ins_names = [p for p, _ in t.inputs]
    inh_names = [p for p, _ in t.inhibitors]
    out_names = [p for p, _ in t.outputs]
    # effect of each enabled marking: (in mults, inhibitor mults, out mults, value)
    eff = np.column_stack([*(arc_vals[("in", p)][rows] for p in ins_names),
                           *(arc_vals[("inh", p)][rows] for p in inh_names),
                           *(outs[p] for p in out_names), val.view(np.int64)]) if rows.size else np.zeros((0, 1))
    keys = X[rows][:, sidx] if rows.size else np.zeros((0, len(S)), np.int64)
    if rows.size == 0:
        return []
    uk, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    if not np.array_equal(eff, eff[first][inv]):
        raise ModelError(f"GSPN unfolding: transition {t.name!r}: a function returns different values for "
                         f"the same values of the places it reads ({', '.join(S) or 'none'}); it must be a "
                         f"pure function of the marking")
    ueff = eff[first]
    # observed keys on every relevant marking (enabled or not): a run of copies may not cover a key
    # at which t is never enabled. The place tested by an interval is the one giving the fewest copies.
    all_keys = np.unique(X[:, sidx], axis=0) if S else np.zeros((1, 0), np.int64)
    runs: list[tuple[tuple, int, int, int]] = [((), 0, 0, 0)]
    if S:
        best = None
        for last in range(len(S)):
            cols = [j for j in range(len(S)) if j != last] + [last]
            r = _runs(all_keys[:, cols], {tuple(k): i for i, k in enumerate(uk[:, cols].tolist())}, ueff)
            if best is None or len(r) < len(best[1]):
                best = (cols, r)
        cols, runs = best
        S = [S[j] for j in cols]
    copies = []
    for n, (grp, lo, hi, i) in enumerate(runs):
        e = ueff[i].tolist()
        k = 0
        ins = {}
        for p in ins_names:
            ins[p] = int(e[k]); k += 1
        inh = {}
        for p in inh_names:
            inh[p] = int(e[k]); k += 1
        out = {}
        for p in out_names:
            out[p] = int(e[k]); k += 1
        value = float(np.int64(e[k]).view(np.float64))
        # pin the places read: exact values for all but the last, an interval for the last
        tests = {p: (v, v) for p, v in zip(S[:-1], grp)}
        if S:
            tests[S[-1]] = (lo, hi)
        ins = {p: v for p, v in ins.items() if v > 0}
        inh = {p: v for p, v in inh.items() if v > 0}
        out = {p: v for p, v in out.items() if v > 0}
        for p, (a, b) in tests.items():
            need = max(ins.get(p, 0), a)
            extra = need - ins.get(p, 0)
            if need > 0:
                ins[p] = need
            if extra:
                out[p] = out.get(p, 0) + extra
            if b < bounds[p]:
                inh[p] = min(inh.get(p, b + 1), b + 1)
        name = t.name if len(runs) == 1 and not tests else f"{t.name}__{n}"
        while name in taken:
            name += "_"
        taken.add(name)
        copies.append(GSPNTransition(name, t.timed, value, int(t.priority), ins, out, inh, t.name))
    return copies


def _runs(all_keys: np.ndarray, enabled_key: dict, ueff: np.ndarray) -> list[tuple[tuple, int, int, int]]:
    """Maximal runs ``(group, lo, hi, key)`` of consecutive observed keys (last column varying)
    at which the transition is enabled with one effect."""
    runs = []
    order = np.lexsort(all_keys.T[::-1])
    cur = None
    for k in all_keys[order].tolist():
        grp, last = tuple(k[:-1]), k[-1]
        i = enabled_key.get(tuple(k))
        if i is not None and cur is not None and cur[0] == grp and np.array_equal(ueff[cur[3]], ueff[i]):
            cur[2] = last
            continue
        if cur is not None:
            runs.append(tuple(cur))
            cur = None
        if i is not None:
            cur = [grp, last, last, i]
    if cur is not None:
        runs.append(tuple(cur))
    return runs


def gspn_form(net: Net, *, unfold: bool = True, space: StateSpace | None = None,
              check: bool = True) -> GSPNForm:
    """The net as a GSPN (constant rates, weights and arcs, no guards).

    Parameters
    ----------
    net : Net
    unfold : bool
        ``False``: a net with SRN-only features (see :func:`srn_features`) raises
        :class:`~hetsched.errors.ModelError` naming each transition and feature.
        ``True`` (default): such transitions are unfolded over the reachable
        markings (module docstring); the chain is the same.
    space : StateSpace, optional
        The reachability graph of ``net`` if already explored.
    check : bool
        Explore the unfolded GSPN and check that it has the same tangible
        markings and the same generator (raises :class:`ModelError` otherwise).
    """
    from .reach import explore

    feats = srn_features(net)
    if feats and not unfold:
        what = "; ".join(f"{t}: {', '.join(f)}" for t, f in feats.items())
        raise ModelError(f"net {net.name!r} is not a GSPN (Storm and GreatSPN need constant rates, weights and "
                         f"arcs and no guards): {what}. Unfold it instead (the default; exact on the reachable markings)")
    space = space if space is not None else explore(net)
    names = net.place_names
    index = {p: j for j, p in enumerate(names)}
    bounds = {p: int(b) for p, b in zip(names, space.markings.max(axis=0))}
    form = GSPNForm(net.name, {p: int(v) for p, v in zip(names, net.initial_marking)}, bounds)
    taken = set(net.transition_names) | set(names)
    for t in net.transitions:
        if t.name not in feats:
            form.transitions.append(GSPNTransition(
                t.name, t.timed, float(t.value), int(t.priority), dict(t.inputs), dict(t.outputs),
                dict(t.inhibitors), t.name))
            continue
        taken.discard(t.name)
        copies = _unfold_transition(t, _relevant_markings(space, t.timed), index, bounds, taken)
        form.transitions.extend(copies)
        form.unfolded[t.name] = len(copies)
    caps = net.capacities
    if caps:
        form.transitions = [c for c in (_capacity_arcs(t, caps) for t in form.transitions) if c is not None]
    if check and (feats or caps):
        _check_same_chain(space, form)
    return form


def _capacity_arcs(t: GSPNTransition, caps: dict[str, int]) -> GSPNTransition | None:
    """``t`` with an inhibitor arc of multiplicity ``c - a + 1`` from each place of capacity ``c`` to
    which it adds ``a > 0`` tokens (None if it can never fire)."""
    inh = dict(t.inhibitors)
    for p, c in caps.items():
        a = t.outputs.get(p, 0) - t.inputs.get(p, 0)
        if a > 0:
            k = c - a + 1
            if k <= 0:
                return None
            inh[p] = min(inh.get(p, k), k)
    return replace(t, inhibitors=inh)


def _check_same_chain(space: StateSpace, form: GSPNForm) -> None:
    from .reach import explore, to_ctmc

    other = explore(form.to_net(), max_states=max(2 * space.n_states, 10))
    a, b = to_ctmc(space), to_ctmc(other)
    if a.n != b.n:
        raise ModelError(f"GSPN unfolding of {form.name!r} changed the chain: {a.n} tangible markings "
                         f"became {b.n} (a marking-dependent function is not a function of the marking?)")
    ka = {tuple(r): i for i, r in enumerate(a.markings.tolist())}
    try:
        perm = np.array([ka[tuple(r)] for r in b.markings.tolist()])
    except KeyError:
        raise ModelError(f"GSPN unfolding of {form.name!r} reaches other markings than the net") from None
    Qa = a.Q.tocsr()[perm][:, perm]
    d = abs(Qa - b.Q).max() if b.Q.nnz else 0.0
    if d > 1e-9 * max(1.0, abs(b.Q).max()):
        raise ModelError(f"GSPN unfolding of {form.name!r} changed the generator (max difference {d:.3g})")


