"""What every model's policies share: tie rules, and the plumbing of user-written policies.

A user policy is a plain Python function that a model's compiled kernel calls
per decision (:func:`hetsched.mapping_policy`, :func:`hetsched.pull_policy`).
:class:`UserPolicy` holds what does not depend on the model: the arity check,
a name and a process-unique token (the kernel cache key), pickling by value
with numba's cloudpickle (so the policy travels to worker processes), and the
one-time numba compilation with an integer-return check. A model's subclass
states its arguments (``ARGS``), the numba signature (:meth:`signature`) and
what the returned integer indexes (``RETURNS``).

Plain Python: importing this module loads no numba.
"""

from __future__ import annotations

import inspect
import itertools
import os
import pickle

from ..errors import ModelError

__all__ = ["TIE_RULES", "DEFAULT_TIE", "tie_code", "UserPolicy"]

#: ties between equally good choices: lowest index, highest index, or uniform at random (the default)
TIE_RULES = {"lowest": 0, "highest": 1, "random": 2}
DEFAULT_TIE = "random"

_TOKENS = itertools.count()


def tie_code(rule: str) -> int:
    """Integer code of a tie rule (``lowest``, ``highest``, ``random``)."""
    key = str(rule).strip().lower()
    if key not in TIE_RULES:
        raise ModelError(f"tie rule {rule!r} unknown; choose one of {', '.join(TIE_RULES)}")
    return TIE_RULES[key]


class UserPolicy:
    """Base of the user-written policies of every model (see the module docstring)."""

    KIND = "policy"          #: e.g. "mapping policy" (used in messages)
    ARGS = ()                #: the function's argument names, in order
    READ_ONLY = ()           #: the array arguments typed read-only in :meth:`signature` (named in the error)
    RETURNS = "an index"     #: what the returned integer means (used in messages)

    def __init__(self, fn, name: str | None = None, _token: str | None = None):
        call = f"f({', '.join(self.ARGS)})"
        if not callable(fn):
            raise ModelError(f"{self.KIND.replace(' ', '_')} needs a function {call}, got {fn!r}")
        try:
            params = [p for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        self.fn = fn
        self.name = str(name or getattr(fn, "__name__", f"user-{self.KIND.replace(' ', '-')}"))
        if len(params) != len(self.ARGS):
            raise ModelError(f"{self.KIND} {self.name!r}: expected {call} with {len(self.ARGS)} arguments, "
                             f"got {len(params)}")
        self._params = params
        self.token = _token or f"{os.getpid()}-{next(_TOKENS)}-{id(fn)}"
        self._compiled = None
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self) -> str:
        return f"<{self.KIND} {self.name!r}>"

    # pickling by value: the function travels with cloudpickle, the subclass's own options as keywords
    def _options(self) -> dict:
        return {}

    def __reduce__(self):
        from numba import cloudpickle

        return (_rebuild, (type(self), cloudpickle.dumps(self.fn), self.name, self.token, self._options()))

    def signature(self):
        """The numba argument types of the function (a tuple)."""
        raise NotImplementedError  # every model's subclass states its own

    def compiled(self):
        """The numba-compiled function (bounds-checked), checked once: it compiles for :meth:`signature`
        (so it does not write to the arguments typed read-only there) and returns an integer."""
        if self._compiled is None:
            from numba import njit, types
            from numba.core.errors import NumbaError

            # bounds-checked indexing and Python's division semantics: a bad index or a division by zero is an
            # exception the engine reports, never a write outside an array
            disp = njit(boundscheck=True, error_model="python")(getattr(self.fn, "py_func", self.fn))
            try:
                disp.compile(self.signature())
            except NumbaError as exc:
                text = str(exc)
                if self.READ_ONLY and "readonly" in text.lower() and "setitem" in text:
                    raise ModelError(f"{self.KIND} {self.name!r} writes to one of its arguments "
                                     f"{', '.join(self.READ_ONLY)}, which are read-only (the engine's state)") from None
                first = [ln for ln in text.strip().splitlines() if ln.strip()]
                raise ModelError(f"{self.KIND} {self.name!r} does not compile with numba (nopython mode): "
                                 f"{first[0] if first else exc}") from None
            rtype = disp.nopython_signatures[-1].return_type
            if not isinstance(rtype, types.Integer):
                raise ModelError(f"{self.KIND} {self.name!r} must return {self.RETURNS} (an integer), "
                                 f"but returns {rtype}")
            self._compiled = disp
        return self._compiled


def _rebuild(cls, blob: bytes, name: str, token: str, options: dict):
    return cls(pickle.loads(blob), name, _token=token, **options)
