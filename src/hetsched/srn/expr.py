"""A small, safe parser for GreatSPN's expression language (never ``eval``).

Net files write marking-dependent delays, weights, guards and arc multiplicities,
initial markings, constants and performance measures as expressions. This module
parses the part of GreatSPN's ``ExprLang`` grammar that describes an uncoloured
stochastic net, checks every name, and compiles the result to a function of a
*batch* of markings (NumPy arrays, as :class:`hetsched.srn.Net` expects).

Syntax (GreatSPN editor, ``ExprLang.g4``)::

    numbers      3   2.5   .5   1e-3   2.000000e+00
    places       #P   #(P.1)          (the second form, as PIPE writes it, allows any name)
    constants    N   lambda1          (constants and templates of the file, or --param values)
    arithmetic   + - * / and unary -, parentheses
    functions    Min[a,b] Max[a,b] Mod[a,b] Pow[a,b] Fract[a,b] Binomial[n,k] Abs[x] Factorial[n]
                 Ceil[x] Floor[x] Round[x] Sqrt[x] Exp[x] Log[x] Sin Cos Tan Asin Acos Atan
                 (square brackets as GreatSPN writes them, or round ones; names in any case)
    conditions   If[cond, a, b]    when cond : a ; ever b ;
    booleans     True False ! && || -> <->  and  == != < <= > >=
    measures     E{expr}  E{expr / cond}  P{cond}  X{T}  X{T / cond}, a number in front as a
                 factor, joined by + and -        (GreatSPN's performance indices)
    servers      Infinite, or an integer expression

Division is real division where the value is a real (delays, weights, guards,
measures) and integer division truncated toward zero where it is an integer
(initial markings, multiplicities, priorities, numbers of servers, INTEGER
constants) - see ``docs/assumptions.md``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import ModelError

__all__ = ["Expr", "Measure", "parse", "parse_measure", "KINDS"]

KINDS = ("int", "real", "bool", "servers")
MAX_LENGTH = 20_000
MAX_DEPTH = 50   # nesting (each level costs ~9 Python frames of the recursive descent)

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<hashp>\#\s*\((?P<pname>[^()]+)\))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><->|->|&&|\|\||==|!=|<=|>=|[-+*/()\[\],!<>#:;{}])
""", re.VERBOSE)

_UNARY = {
    "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "ceil": np.ceil,
    "floor": np.floor, "round": lambda x: np.floor(np.asarray(x, dtype=float) + 0.5),
    "factorial": lambda x: _factorial(x),
}
_BINARY = {
    "min": np.minimum, "max": np.maximum, "mod": np.mod, "pow": lambda a, b: np.power(np.asarray(a, float), b),
    "binomial": lambda n, k: _binomial(n, k),
    "fract": lambda a, b: np.true_divide(a, b),
}
_INT_RESULT = {"abs", "ceil", "floor", "round", "factorial", "min", "max", "mod", "binomial"}


def _factorial(x):
    from scipy.special import gamma

    return np.round(gamma(np.asarray(x, dtype=float) + 1.0))


def _binomial(n, k):
    from scipy.special import comb

    return np.round(comb(n, k))


@dataclass
class _Node:
    """An AST node: ``op`` and children; ``kind`` is "int", "real" or "bool"."""

    op: str
    args: tuple = ()
    value: Any = None
    kind: str = "real"


class _Parser:
    def __init__(self, text: str, what: str, consts: dict[str, Any], places, transitions=()):
        if not isinstance(text, str):
            raise ModelError(f"{what}: expected an expression, got {text!r}")
        if len(text) > MAX_LENGTH:
            raise ModelError(f"{what}: expression longer than {MAX_LENGTH} characters")
        self.text, self.what = text, what
        self.consts = consts
        self.places = set(places)
        self.transitions = set(transitions)
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                self.fail(f"unexpected character {text[pos]!r}", pos)
            if not m.group("ws"):
                kind = m.lastgroup if m.lastgroup != "pname" else "hashp"
                val = m.group("pname").strip() if kind == "hashp" else m.group(0)
                self.toks.append((kind, val, pos))
            pos = m.end()
        self.toks.append(("end", "", len(text)))
        self.i = 0
        self.depth = 0
        self.read: set[str] = set()

    # -- helpers -------------------------------------------------------------
    def fail(self, msg: str, pos: int | None = None):
        at = f" at position {pos + 1}" if pos is not None else ""
        raise ModelError(f"{self.what}: {msg}{at} in {self.text!r}")

    def peek(self, k: int = 0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, val: str) -> bool:
        t = self.peek()
        if t[0] in ("op", "id") and t[1] == val:
            self.i += 1
            return True
        return False

    def expect(self, val: str):
        if not self.accept(val):
            t = self.peek()
            self.fail(f"expected {val!r}, found {t[1] or 'the end'!r}", t[2])

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"expression nested deeper than {MAX_DEPTH} levels")

    # -- grammar: precedence climbing ------------------------------------------
    def parse_expr(self) -> _Node:
        return self.biimply()

    def biimply(self) -> _Node:
        a = self.imply()
        while self.accept("<->"):
            a = self._bool("<->", a, self.imply())
        return a

    def imply(self) -> _Node:
        a = self.orx()
        if self.accept("->"):
            a = self._bool("->", a, self.imply())
        return a

    def orx(self) -> _Node:
        a = self.andx()
        while self.accept("||"):
            a = self._bool("||", a, self.andx())
        return a

    def andx(self) -> _Node:
        a = self.compare()
        while self.accept("&&"):
            a = self._bool("&&", a, self.compare())
        return a

    def _bool(self, op, a, b) -> _Node:
        for x in (a, b):
            if x.kind != "bool":
                self.fail(f"{op!r} needs true/false operands")
        return _Node(op, (a, b), kind="bool")

    def compare(self) -> _Node:
        a = self.additive()
        t = self.peek()
        if t[0] == "op" and t[1] in ("==", "!=", "<", "<=", ">", ">="):
            self.next()
            b = self.additive()
            if a.kind == "bool" or b.kind == "bool":
                if t[1] not in ("==", "!=") or a.kind != b.kind:
                    self.fail(f"cannot compare a condition with a number using {t[1]!r}", t[2])
            return _Node(t[1], (a, b), kind="bool")
        return a

    def additive(self) -> _Node:
        a = self.term()
        while self.peek()[0] == "op" and self.peek()[1] in ("+", "-"):
            op = self.next()[1]
            a = self._arith(op, a, self.term())
        return a

    def term(self) -> _Node:
        a = self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in ("*", "/"):
            op = self.next()[1]
            a = self._arith(op, a, self.unary())
        return a

    def _arith(self, op, a, b) -> _Node:
        if a.kind == "bool" or b.kind == "bool":
            self.fail(f"{op!r} needs numbers, not conditions")
        kind = "int" if a.kind == b.kind == "int" else "real"
        return _Node(op, (a, b), kind=kind)

    def unary(self) -> _Node:
        self.enter()
        try:
            if self.accept("-"):
                a = self.unary()
                if a.kind == "bool":
                    self.fail("unary '-' needs a number")
                return _Node("neg", (a,), kind=a.kind)
            if self.accept("+"):
                return self.unary()
            if self.accept("!"):
                a = self.unary()
                if a.kind != "bool":
                    self.fail("'!' needs a condition")
                return _Node("!", (a,), kind="bool")
            return self.primary()
        finally:
            self.depth -= 1

    def primary(self) -> _Node:
        kind, val, pos = self.next()
        if kind == "num":
            if re.fullmatch(r"\d+", val):
                return _Node("const", value=int(val), kind="int")
            v = float(val)
            if not math.isfinite(v):
                self.fail(f"number {val} is not finite", pos)
            return _Node("const", value=v, kind="real")
        if kind == "hashp":
            return self._place(val, pos)
        if kind == "op" and val == "#":
            t = self.next()
            if t[0] != "id":
                self.fail("'#' must be followed by a place name", t[2])
            return self._place(t[1], t[2])
        if kind == "op" and val == "(":
            a = self.parse_expr()
            self.expect(")")
            return a
        if kind == "id":
            low = val.lower()
            if val in ("True", "False"):
                return _Node("const", value=(val == "True"), kind="bool")
            if val == "If" or low == "if":
                close = self._open()
                c = self.parse_expr()
                self.expect(",")
                a = self.parse_expr()
                self.expect(",")
                b = self.parse_expr()
                self.expect(close)
                return self._cond(c, a, b, pos)
            if val == "when":
                c = self.parse_expr()
                self.expect(":")
                a = self.parse_expr()
                self.expect(";")
                self.expect("ever")
                b = self.parse_expr()
                self.accept(";")
                return self._cond(c, a, b, pos)
            if low in _UNARY or low in _BINARY:
                nxt = self.peek()
                if nxt[0] == "op" and nxt[1] in ("[", "("):
                    close = self._open()
                    args = [self.parse_expr()]
                    while self.accept(","):
                        args.append(self.parse_expr())
                    self.expect(close)
                    want = 1 if low in _UNARY else 2
                    if len(args) != want:
                        self.fail(f"{val} takes {want} argument(s), got {len(args)}", pos)
                    if any(a.kind == "bool" for a in args):
                        self.fail(f"{val} needs numbers", pos)
                    ints = all(a.kind == "int" for a in args)
                    k = "int" if (low in _INT_RESULT and (ints or low in ("ceil", "floor", "round"))) else "real"
                    return _Node("fn", tuple(args), value=low, kind=k)
            if val in self.consts:
                v = self.consts[val]
                if isinstance(v, bool):
                    return _Node("const", value=v, kind="bool")
                is_int = isinstance(v, (int, np.integer))
                return _Node("const", value=int(v) if is_int else float(v), kind="int" if is_int else "real")
            if val in self.places:
                self.fail(f"place {val!r} must be written #{val} (its number of tokens)", pos)
            known = ", ".join(sorted(self.consts)) or "none"
            self.fail(f"unknown name {val!r} (constants and parameters: {known})", pos)
        self.fail(f"unexpected {val or 'end of expression'!r}", pos)

    def _open(self) -> str:
        t = self.next()
        if t[0] != "op" or t[1] not in ("[", "("):
            self.fail("expected '[' or '('", t[2])
        return "]" if t[1] == "[" else ")"

    def _cond(self, c, a, b, pos) -> _Node:
        if c.kind != "bool":
            self.fail("the condition of If/when must be true/false", pos)
        if (a.kind == "bool") != (b.kind == "bool"):
            self.fail("both branches of If/when must be numbers, or both conditions", pos)
        kind = "bool" if a.kind == "bool" else ("int" if a.kind == b.kind == "int" else "real")
        return _Node("if", (c, a, b), kind=kind)

    def _place(self, name: str, pos: int) -> _Node:
        if name not in self.places:
            self.fail(f"unknown place {name!r}", pos)
        self.read.add(name)
        return _Node("place", value=name, kind="int")


def _compile(node: _Node, int_div: bool) -> Callable:
    """A function of a marking view computing ``node`` (NumPy arrays over a batch)."""
    op = node.op
    if op == "const":
        v = node.value
        return lambda m: v
    if op == "place":
        name = node.value
        return lambda m: m[name]
    fs = [_compile(a, int_div) for a in node.args]
    if op == "neg":
        f = fs[0]
        return lambda m: -f(m)
    if op == "!":
        f = fs[0]
        return lambda m: np.logical_not(f(m))
    if op == "if":
        c, a, b = fs
        return lambda m: np.where(c(m), a(m), b(m))
    if op == "fn":
        fn = _UNARY.get(node.value) or _BINARY[node.value]
        if len(fs) == 1:
            f = fs[0]
            return lambda m: fn(f(m))
        f, g = fs
        return lambda m: fn(f(m), g(m))
    a, b = fs
    if op == "/":
        if int_div and node.kind == "int":
            def div(m):
                x, y = np.asarray(a(m)), np.asarray(b(m))
                if np.any(y == 0):
                    raise ZeroDivisionError("integer division by zero")
                return np.trunc(x / y).astype(np.int64)
            return div
        return lambda m: np.true_divide(a(m), b(m))
    binops = {
        "+": np.add, "-": np.subtract, "*": np.multiply,
        "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
        ">=": np.greater_equal, "&&": np.logical_and, "||": np.logical_or,
        "->": lambda x, y: np.logical_or(np.logical_not(x), y), "<->": np.equal,
    }
    fn = binops[op]
    return lambda m: fn(a(m), b(m))


@dataclass
class Expr:
    """A parsed expression: ``fn(view)`` evaluates it on a batch of markings.

    ``places`` are the places it reads (empty for a constant expression, whose value
    is ``value``); ``kind`` is "int", "real" or "bool"; ``infinite`` marks the
    number of servers ``Infinite``.
    """

    text: str
    kind: str
    places: frozenset
    fn: Callable | None = None
    value: Any = None
    infinite: bool = False

    @property
    def constant(self) -> bool:
        return not self.places


def parse(text: str, kind: str, *, what: str, consts: dict[str, Any] | None = None, places=()) -> Expr:
    """Parse ``text`` as an expression of ``kind`` ("int", "real", "bool" or "servers").

    ``consts`` maps constant and parameter names to numbers; ``places`` are the place
    names that ``#P`` may read. Raises :class:`~hetsched.errors.ModelError` naming
    ``what``, the position and the text on any error.
    """
    if kind not in KINDS:
        raise ValueError(kind)
    text = "" if text is None else str(text)
    if kind == "servers" and text.strip() in ("Infinite", ""):
        return Expr(text, "servers", frozenset(), value=math.inf, infinite=True)
    p = _Parser(text, what, consts or {}, places)
    if p.peek()[0] == "end":
        p.fail("empty expression")
    node = p.parse_expr()
    t = p.peek()
    if t[0] != "end":
        p.fail(f"unexpected {t[1]!r} after the expression", t[2])
    want = "int" if kind == "servers" else kind
    if want == "bool" and node.kind != "bool":
        p.fail("expected a condition (true/false)")
    if want in ("int", "real") and node.kind == "bool":
        p.fail("expected a number, got a condition")
    if want == "int" and node.kind != "int" and not p.read:
        pass  # a real-valued constant in an integer place: checked by the caller when evaluated
    fn = _compile(node, int_div=(want == "int"))
    e = Expr(text, kind, frozenset(p.read), fn=fn)
    if e.constant:
        try:
            with np.errstate(all="raise"):
                v = fn(None)
        except (ZeroDivisionError, FloatingPointError, ValueError, OverflowError) as exc:
            p.fail(f"cannot be evaluated ({exc})")
        v = np.asarray(v).item()
        if want == "int":
            if isinstance(v, float):
                if not v.is_integer():
                    p.fail(f"expected an integer, the value is {v!r}")
                v = int(v)
        elif want == "real":
            v = float(v)
            if not math.isfinite(v):
                p.fail(f"the value {v!r} is not finite")
        e.value = v
    return e


@dataclass
class Measure:
    """A GreatSPN performance index: ``sum(coef * E{expr / cond} | P{cond} | X{T / cond})``."""

    text: str
    terms: list = field(default_factory=list)   # (coef, "E"|"P"|"X", Expr | transition name, Expr | None)

    @property
    def places(self) -> frozenset:
        out = set()
        for _, _, a, c in self.terms:
            if isinstance(a, Expr):
                out |= a.places
            if c is not None:
                out |= c.places
        return frozenset(out)


def parse_measure(text: str, *, what: str, consts: dict[str, Any] | None = None, places=(),
                  transitions=()) -> Measure:
    """Parse a performance index ``E{..}``, ``P{..}``, ``X{T}`` (module docstring)."""
    if not isinstance(text, str) or not text.strip():
        raise ModelError(f"{what}: empty measure")
    out = Measure(text)
    # split at the top-level braces: coefficient, letter, body
    pos, n, sign = 0, len(text), 1.0
    pat = re.compile(r"\s*([-+]?)\s*((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z0-9_]*)?\s*\*?\s*([EPX])\{")
    first = True
    while pos < n:
        if not text[pos:].strip():
            break
        m = pat.match(text, pos)
        if not m or (not first and not m.group(1)):
            raise ModelError(f"{what}: expected E{{...}}, P{{...}} or X{{...}} at position {pos + 1} in {text!r}")
        first = False
        sign = -1.0 if m.group(1) == "-" else 1.0
        coef = 1.0
        if m.group(2):
            c = m.group(2)
            if c[0].isdigit() or c[0] == ".":
                coef = float(c)
            elif c in (consts or {}):
                coef = float((consts or {})[c])
            else:
                raise ModelError(f"{what}: unknown factor {c!r} in {text!r}")
        letter = m.group(3)
        depth, j = 1, m.end()
        while j < n and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        if depth:
            raise ModelError(f"{what}: unbalanced braces in {text!r}")
        body = text[m.end():j - 1]
        cond = None
        main, slash, rest = _split_condition(body)
        if slash:
            cond = parse(rest, "bool", what=f"{what} (condition)", consts=consts, places=places)
        if letter == "X":
            name = main.strip()
            if name not in set(transitions):
                raise ModelError(f"{what}: X{{{name}}} names no transition of the net")
            out.terms.append((sign * coef, "X", name, cond))
        elif letter == "P":
            if slash:
                raise ModelError(f"{what}: P{{..}} takes no '/ condition'")
            out.terms.append((sign * coef, "P", parse(main, "bool", what=what, consts=consts, places=places), None))
        else:
            out.terms.append((sign * coef, "E", parse(main, "real", what=what, consts=consts, places=places), cond))
        pos = j
    if not out.terms:
        raise ModelError(f"{what}: empty measure")
    return out


def _split_condition(body: str) -> tuple[str, bool, str]:
    """``expr / cond`` at the last top-level '/' followed by a condition (GreatSPN's conditional
    measures); a plain division inside ``E{..}`` has no comparison after it."""
    depth = 0
    for k in range(len(body) - 1, -1, -1):
        ch = body[k]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            depth -= 1
        elif ch == "/" and depth == 0:
            rest = body[k + 1:]
            if re.search(r"==|!=|<=|>=|<|>|&&|\|\||\bTrue\b|\bFalse\b|!", rest):
                return body[:k], True, rest
            return body, False, ""
    return body, False, ""
