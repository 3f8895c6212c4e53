"""The exact optimal routing of small mapping systems (issue 22 item 6): how far from optimal is a heuristic?

* :mod:`.model` — the routing problem as a CTMDP: the exact state (the class
  sequence at each machine under FCFS with class-dependent rates; queue
  lengths where rates depend on the machine only), its truncation, the arrays;
* :mod:`.solve` — :func:`optimal_routing` (solved with the project's
  average-cost solver, the truncation measured), :func:`exact_answer` (the
  policy ``optimal`` of :func:`hetsched.compare`), :func:`routing_size`;
* :mod:`.result` — :class:`OptimalRouting` (the project's result protocol);
* :mod:`.policy` — the optimal table as a user mapping policy (counts only);
* :mod:`.text`, :mod:`.cli` — text output and ``hetsched optimal``.
"""

from .._lazy import lazy_names

_LAZY = {
    "optimal_routing": "solve",
    "exact_answer": "solve",
    "routing_size": "solve",
    "OptimalRouting": "result",
    "routing_space": "model",
    "build_model": "model",
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

__all__ = list(_LAZY)
