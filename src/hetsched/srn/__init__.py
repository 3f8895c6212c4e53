"""Stochastic reward nets (SRN): nets, reachability, CTMC solution, rewards.

Public surface::

    from hetsched.srn import Net, mark, rate, reward, solve
    res = solve(net)                    # explore + eliminate + steady state
    res.expect(mark("Q")), res.expect(rate("serve"))

See ``docs/srn.md``; the grid gang-scheduling model (Ro & Cao) is
:mod:`hetsched.srn.gang`.
"""

from __future__ import annotations

# Names load their module on first use: importing ``hetsched.srn`` (e.g. by the
# CLI for an unrelated command) loads neither numba nor scipy.
_LAZY = {
    "SRNResult": "analysis", "solve": "analysis",
    **{name: "net" for name in ("MarkingView", "Net", "Reward", "mark", "rate", "reward")},
    **{name: "reach" for name in ("CTMC", "StateSpace", "explore", "to_ctmc")},
    **{name: "solve" for name in ("SteadyState", "expect", "steady_state", "transient")},
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        import inspect

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        if inspect.ismodule(globals().get("solve")):
            # importing the submodule ``solve`` bound the package's ``solve`` to it: the public
            # ``solve`` is analysis.solve (as with the former eager imports)
            del globals()["solve"]
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Net", "MarkingView", "Reward", "mark", "rate", "reward",
    "StateSpace", "CTMC", "explore", "to_ctmc",
    "SteadyState", "steady_state", "transient", "expect",
    "SRNResult", "solve",
]
