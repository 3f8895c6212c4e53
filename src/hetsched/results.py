"""One result protocol for every public solver and simulator.

Every public result type of hetsched (the allocation LP, every simulator, the
MDP/CTMDP solvers, SRN and gang, co-allocation, MUSCLE, dispatch, experiments,
comparisons) follows the discipline of ``scipy.optimize.OptimizeResult`` and
offers the same reading surface, so a workflow written against one reads them
all:

``status``
    An integer; ``0`` always means a trustworthy answer. Each type documents its
    own table in the class attribute ``STATUS`` (code -> short meaning), as
    scipy documents one per function. Codes used across types keep one meaning:
    :data:`OK` (0) and :data:`UNSTABLE` (1, a simulated configuration whose
    queues grow: its numbers are not estimates of anything).
``success``
    ``status == 0``.
``message``
    One line saying why the status is what it is (never empty).
``seconds``
    Wall time of the computation itself (without start-up or compiling).
``as_dict()``
    The JSON object that ``--json`` prints: JSON-ready (numpy scalars to
    Python, NaN/inf to ``null``), with ``status``, ``success``, ``message``,
    ``seconds``.
``to_frame()``
    The answer as a tidy pandas DataFrame in **long format**: one row per
    measured quantity, columns (in this order, each present when it applies)
    :data:`FRAME_KEYS` (identifiers such as ``policy``, ``class``,
    ``class_name``, ``machine``, ``machine_name``, ``state``, ``rep``), then
    ``measure`` (the quantity's name), ``value``, ``ci_low``, ``ci_high`` and
    ``value_untrusted``. Classes and machines are numbered from 1 in every
    output (text, frames, plots); ``class_name``/``machine_name`` carry the
    user's names where given.
A short ``repr`` and ``_repr_html_``
    One headline line plus the status; Jupyter shows the headline, the status
    and the head of :meth:`to_frame`.

**Untrusted values are never in the field a user reads first.** For an
unstable run the estimate (``mean``, ``value`` in the frame) is ``NaN`` in
the API and ``null`` in JSON, and the number the run produced is kept under
``mean_untrusted`` / ``value_untrusted``.

Implementing the protocol: subclass (or mix in) :class:`Result`, define the
fields ``status``, ``message`` and ``seconds`` (a dataclass field or a
property), ``STATUS``, :meth:`Result.as_dict`, :meth:`Result._frame_rows`
and :meth:`Result._headline`. ``tests/test_result_protocol.py`` checks every
public result type against this contract.
"""

from __future__ import annotations

import html
import math
from typing import Any, ClassVar, Iterable, Mapping

import numpy as np

__all__ = ["Result", "OK", "UNSTABLE", "FRAME_KEYS", "FRAME_VALUES", "jsonable", "num", "fmt"]

OK, UNSTABLE = 0, 1

#: identifier columns of :meth:`Result.to_frame`, in this order when present
FRAME_KEYS = ("model", "scenario", "policy", "criterion", "class", "class_name", "machine", "machine_name",
              "state", "level", "rep")
#: value columns of :meth:`Result.to_frame`, after ``measure``
FRAME_VALUES = ("value", "ci_low", "ci_high", "value_untrusted", "unit")


def num(x: Any) -> Any:
    """JSON-friendly scalar: numpy scalars to Python, NaN/inf to ``None``."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def jsonable(x: Any) -> Any:
    """A JSON-ready copy of ``x``: dicts (keys to ``str``), lists, tuples, arrays and
    scalars; paths and other objects become their ``str``."""
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if x is None or isinstance(x, (str, int, float, bool, np.integer, np.floating, np.bool_)):
        return num(x)
    if hasattr(x, "as_dict") and callable(x.as_dict):
        return jsonable(x.as_dict())
    return str(x)


def fmt(x: Any, digits: int = 4) -> str:
    """A number for text: ``-`` for None/NaN, ``inf`` spelt out, else ``digits`` significant digits."""
    if x is None:
        return "-"
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(f):
        return "-"
    return f"{f:.{digits}g}"


class Result:
    """The protocol every public result implements (see the module docstring)."""

    #: status code -> meaning; subclasses extend it (0 always means success)
    STATUS: ClassVar[Mapping[int, str]] = {OK: "ok"}

    status: int
    message: str

    # ------------------------------------------------------------------ protocol
    @property
    def success(self) -> bool:
        return int(self.status) == OK

    def as_dict(self) -> dict[str, Any]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _frame_rows(self) -> Iterable[dict[str, Any]]:  # pragma: no cover - every subclass defines it
        """The long-format rows of :meth:`to_frame` (dicts with ``measure`` and ``value`` at least)."""
        raise NotImplementedError

    def _headline(self) -> str:
        return self.message

    def to_frame(self):
        """The answer in long format (see :data:`FRAME_KEYS`, :data:`FRAME_VALUES`)."""
        import pandas as pd

        rows = [dict(r) for r in self._frame_rows()]
        present: list[str] = []
        for r in rows:
            present += [c for c in r if c not in present]
        order = ([c for c in FRAME_KEYS if c in present] + ["measure"]
                 + [c for c in FRAME_VALUES if c in present]
                 + [c for c in present if c not in FRAME_KEYS and c not in FRAME_VALUES and c != "measure"])
        df = pd.DataFrame(rows, columns=order)
        if "value" in df:
            df["value"] = pd.to_numeric(df["value"], errors="coerce").astype(float)
        return df

    # ------------------------------------------------------------------ display
    def _status_line(self) -> str:
        meaning = self.STATUS.get(int(self.status), "")
        tail = "" if self.message == meaning else f": {self.message}"
        secs = getattr(self, "seconds", None)
        t = f"; {secs:.3g} s" if isinstance(secs, (int, float)) and math.isfinite(secs) else ""
        return f"status {int(self.status)} ({meaning or 'see message'}){tail}{t}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._headline()}\n  {self._status_line()})"

    def _repr_html_(self) -> str:
        e = html.escape
        color = "#070" if self.success else "#b00"
        table = ""
        try:
            df = self.to_frame()
        except Exception:  # a display must not raise
            df = None
        if df is not None and len(df):
            shown = df.head(40)
            table = shown.to_html(index=False, na_rep="-", float_format=lambda v: f"{v:.5g}", escape=True,
                                  border=0)
            if len(df) > len(shown):
                table += f"<div><i>{len(df) - len(shown)} more rows: .to_frame()</i></div>"
        return (f"<div><b>{e(type(self).__name__)}</b>: {e(self._headline())}<br>"
                f"<span style='color:{color}'>{e(self._status_line())}</span>{table}</div>")
