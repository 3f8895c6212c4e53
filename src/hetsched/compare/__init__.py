"""Compare policies on one system: ``hs.compare`` and ``hetsched compare`` (issue 22).

* :mod:`.core` -- :func:`compare`: resolve the policies and their model, run
  every policy x replication in one batch on common random numbers, the
  registry of exact solvers (:data:`EXACT`);
* :mod:`.stats` -- paired differences (paired-t), Welch's unpaired interval,
  the ranking with ties;
* :mod:`.metrics` -- the metrics and one value per replication or trace window;
* :mod:`.result` -- :class:`CompareResult` (the project's result protocol);
* :mod:`.text`, :mod:`.plots` -- text, HTML and figures of a result;
* :mod:`.policyfile` -- ``--policy-file FILE.py:NAME``;
* :mod:`.cli` -- the ``compare`` command.

``hetsched.compare`` is both this package and the function: importing a
submodule (``hetsched.compare.stats``) binds the package under the name of
the public function in :mod:`hetsched`, so the package itself is callable and
calling it calls :func:`compare`.
"""

from __future__ import annotations

import sys
import types

from .._lazy import lazy_names

__all__ = ["compare", "CompareResult", "PolicyOutcome", "PairedDifference", "paired_difference",
           "welch_interval", "rank_with_ties", "load_policy", "ExactAnswer", "EXACT", "register_exact", "METRICS"]

_WHERE = {"compare": "core", "ExactAnswer": "core", "EXACT": "core", "register_exact": "core",
          "CompareResult": "result", "PolicyOutcome": "result", "PairedDifference": "result",
          "paired_difference": "stats", "welch_interval": "stats", "rank_with_ties": "stats",
          "load_policy": "policyfile", "METRICS": "metrics"}

__getattr__, __dir__ = lazy_names(__name__, globals(), _WHERE)


class _CallablePackage(types.ModuleType):
    """``hetsched.compare(...)`` works whether the name holds the function or this package."""

    def __call__(self, *args, **kwargs):
        from .core import compare

        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
