"""Stochastic reward nets (SRN): nets, reachability, CTMC solution, rewards.

Public surface::

    from hetsched.srn import Net, mark, rate, reward, solve, read
    res = solve(net)                    # explore + eliminate + steady state + measures
    res.expect(mark("Q")), res.expect(rate("serve")), res.tokens, res.throughputs
    res = solve(read("model.PNPRO", page="FMS"))   # a PNML or GreatSPN file

See ``docs/srn.md``; the grid gang-scheduling model (Ro & Cao) is
:mod:`hetsched.srn.gang`.
"""

from __future__ import annotations

from .._lazy import lazy_names

# Names load their module on first use: importing ``hetsched.srn`` (e.g. by the
# CLI for an unrelated command) loads neither numba nor scipy.
_LAZY = {
    "SRNResult": "analysis", "solve": "analysis",
    **{name: "files" for name in ("read", "pages")}, "NetPage": "draft",
    "Measure": "expr", "parse_measure": "expr",
    **{name: "net" for name in ("MarkingView", "Net", "Reward", "mark", "rate", "reward")},
    **{name: "reach" for name in ("CTMC", "StateSpace", "explore", "to_ctmc")},
    **{name: "steady" for name in ("SteadyState", "expect", "steady_state", "transient")},
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)


__all__ = [
    "Net", "MarkingView", "Reward", "mark", "rate", "reward",
    "StateSpace", "CTMC", "explore", "to_ctmc",
    "SteadyState", "steady_state", "transient", "expect",
    "SRNResult", "solve", "read", "pages", "NetPage", "Measure", "parse_measure",
]
