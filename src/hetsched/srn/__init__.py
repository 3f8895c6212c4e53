"""Stochastic reward nets (SRN): nets, reachability, CTMC solution, rewards.

Public surface::

    from hetsched.srn import Net, mark, rate, reward, solve
    res = solve(net)                    # explore + eliminate + steady state
    res.expect(mark("Q")), res.expect(rate("serve"))

See ``docs/srn.md``; the grid gang-scheduling model (Ro & Cao) is
:mod:`hetsched.srn.gang`.
"""

from .analysis import SRNResult, solve
from .net import MarkingView, Net, Reward, mark, rate, reward
from .reach import CTMC, StateSpace, explore, to_ctmc
from .solve import SteadyState, expect, steady_state, transient

__all__ = [
    "Net", "MarkingView", "Reward", "mark", "rate", "reward",
    "StateSpace", "CTMC", "explore", "to_ctmc",
    "SteadyState", "steady_state", "transient", "expect",
    "SRNResult", "solve",
]
