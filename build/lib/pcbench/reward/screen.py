"""Reject answers that would make sympy hang before sympy ever sees them.

A signal-based timeout only interrupts Python bytecode. ``9^{9^{9}}`` makes sympy call
CPython's big-integer ``pow`` once, in C, for minutes and gigabytes; no alarm stops it
(a worker process can be killed, but the main-thread path has no worker). So answers are
screened statically first:

* length and nesting depth caps (deep nesting also overflows the recursive LaTeX parser);
* control characters (NUL and friends are never part of a real answer);
* a numeric-magnitude estimate: a tiny recursive-descent pass over the LaTeX that tracks
  an upper bound of log10|value| for every numeric sub-expression and rejects powers,
  factorials and binomials whose exact evaluation would be huge. Symbols are "unknown"
  and never evaluated, so ``e^{x^2}`` passes while ``x^{9^{9^9}}`` is rejected for its
  numeric exponent.

The estimate is deliberately conservative (it may reject an exotic but harmless answer
like ``x^{10^{6}}``); such answers then score as wrong, which is the safe direction.
"""

from __future__ import annotations

import math
import re

MAX_ANSWER_CHARS = 10_000
MAX_NESTING = 50
MAX_EXPONENT = 1e5  # numeric exponents above this are never evaluated
MAX_RESULT_LOG10 = 1e5  # a power or factorial with more decimal digits than this is huge
MAX_FACTORIAL_ARG = 1e4
MAX_BINOM_ARG = 1e5

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TOKEN = re.compile(
    r"\s+|(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)|(?P<cmd>\\[A-Za-z]+|\\.)|\*\*|(?P<ch>.)",
    re.DOTALL,
)
_MUL_CMDS = {"\\cdot", "\\times", "\\ast"}
_FRAC_CMDS = {"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"}
_BINOM_CMDS = {"\\binom", "\\dbinom", "\\tbinom"}
_SKIP_CMDS = {"\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "\\displaystyle"}
_OPEN = {"(": ")", "{": "}", "[": "]"}
_STOP = {")", "}", "]", ",", "=", "<", ">", "&", "+", "-", None}

# Magnitudes: float log10 upper bound of |value|, or None for "not a known number".
Mag = float | None


class TooBig(Exception):
    """Raised inside the estimate when an exact evaluation would explode."""


def _tokens(text: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok.isspace() or tok in _SKIP_CMDS:
            continue
        out.append("^" if tok == "**" else tok)
    return out


def _num_mag(tok: str) -> float:
    """log10 of a literal (0 for |x| <= 1); exact enough that ``2^{3^{4}}`` passes."""
    int_part = tok.split(".")[0].lstrip("0")
    if len(int_part) > 15:
        return float(len(int_part))  # digit count bounds log10 from above
    value = float(tok) if tok != "." else 0.0
    return math.log10(value) if value > 1.0 else 0.0


class _Estimator:
    """Recursive descent over tokens; recursion depth is bounded by MAX_NESTING."""

    def __init__(self, toks: list[str]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str | None:
        tok = self.peek()
        self.i += 1
        return tok

    def run(self) -> None:
        while self.peek() is not None:
            self.expr()
            self.i += 1  # skip a stray closer or separator and keep scanning

    def expr(self) -> Mag:
        """Sums, lists and relations: the magnitude of the largest part, plus one digit."""
        mags = [self.term()]
        while self.peek() in {"+", "-", ",", "=", "<", ">", "&"}:
            self.take()
            mags.append(self.term())
        if any(m is None for m in mags):
            return None
        return max(mags) + math.log10(len(mags))  # type: ignore[type-var]

    def term(self) -> Mag:
        """Products, explicit or implicit: magnitudes add. Division keeps the dividend."""
        mag = self.power()
        while self.peek() not in _STOP:
            tok = self.peek()
            if tok in _MUL_CMDS or tok == "*":
                self.take()
                rhs = self.power()
            elif tok == "/" or tok == "\\div":
                self.take()
                self.power()
                continue  # |a/b| <= |a| for |b| >= 1; a bound, not a value
            else:
                rhs = self.power()
            mag = None if mag is None or rhs is None else mag + rhs
        return mag

    def power(self) -> Mag:
        """``a^b^c`` is right-associative; collected iteratively so long chains cannot
        exhaust the Python stack."""
        operands = [self.postfix()]
        while self.peek() in {"^", "_"}:
            op = self.take()
            sub = self.postfix()
            if op == "^":
                operands.append(sub)
        mag = operands.pop()
        while operands:
            mag = _pow_mag(operands.pop(), mag)
        return mag

    def postfix(self) -> Mag:
        mag = self.unary()
        while self.peek() == "!":
            self.take()
            mag = _factorial_mag(mag)
        return mag

    def unary(self) -> Mag:
        while self.peek() in {"-", "+"}:
            self.take()
        return self.primary()

    def primary(self) -> Mag:
        tok = self.take()
        if tok is None:
            return 0.0
        if tok in _OPEN:
            mag = self.expr()
            if self.peek() == _OPEN[tok] or self.peek() in {")", "}", "]"}:
                self.take()  # closers need not match: (0,1] is an interval
            return mag
        if tok in _FRAC_CMDS:
            num = self.primary()
            self.primary()
            return num
        if tok in _BINOM_CMDS:
            return _binom_mag(self.primary(), self.primary())
        if tok[0].isdigit() or tok[0] == ".":
            return _num_mag(tok)
        return None  # a symbol, a function name, a stray character: not a number


def _pow_mag(base: Mag, exp: Mag) -> Mag:
    if exp is None:
        return None  # symbolic exponent: sympy keeps the power unevaluated
    if exp > math.log10(MAX_EXPONENT):
        raise TooBig("numeric exponent too large")
    if base is None:
        return None
    result = (10.0**exp) * max(base, 0.0)
    if result > MAX_RESULT_LOG10:
        raise TooBig("power too large")
    return result


def _factorial_mag(arg: Mag) -> Mag:
    if arg is None:
        return None
    if arg > math.log10(MAX_FACTORIAL_ARG):
        raise TooBig("factorial argument too large")
    n = 10.0**arg
    return n * math.log10(n + 1.0)  # log10(n!) <= n log10(n + 1)


def _binom_mag(n: Mag, k: Mag) -> Mag:
    if n is None or k is None:
        return None
    if max(n, k) > math.log10(MAX_BINOM_ARG):
        raise TooBig("binomial argument too large")
    return (10.0**n) * math.log10(2.0)


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch in "{([":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "})]":
            depth = max(depth - 1, 0)
    return deepest


def screen_answer(text: str) -> str | None:
    """Why ``text`` must not reach sympy, or None when it may.

    Linear in ``len(text)``; callers pass at most MAX_ANSWER_CHARS characters.
    """
    if len(text) > MAX_ANSWER_CHARS:
        return "too_long"
    if _CONTROL.search(text):
        return "control_char"
    if _nesting_depth(text) > MAX_NESTING:
        return "too_deep"
    try:
        _Estimator(_tokens(text)).run()
    except TooBig as err:
        return str(err)
    except (RecursionError, OverflowError):
        return "unscreenable"
    return None
