"""Exact comparison of plain numeric answers, without sympy.

Most math answers (AIME, AMC, DeepMath) are integers or simple fractions. Comparing them
with ``fractions.Fraction`` is exact, takes microseconds, and cannot hang, so it runs
before math-verify. Only a deliberately small grammar is accepted: an optional sign and
an integer, a decimal, ``a/b`` or ``\\frac{a}{b}`` (``\\frac12`` shorthand too). Anything
else returns None and goes to math-verify. Strings are never evaluated; the numbers are
matched by regex and converted by ``int``/``Fraction`` on ASCII digits only.
"""

from __future__ import annotations

import re
from fractions import Fraction

# Python refuses int(str) above 4300 digits by default; stay below it. Longer integers
# are still compared exactly, digit string against digit string.
MAX_FRACTION_DIGITS = 4000

# Spacing and sizing commands that never change a value.
_NOISE = re.compile(r"\\[!,;:> ]|\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])|\s+")
_FRAC_ALIASES = re.compile(r"\\[dt]frac(?![A-Za-z])")
# A text-like group at either end is a unit or a phrase around the number ("5 cm",
# "Answer: 5"). Only the ends are stripped: "5\text{ or }6" must not become 56.
_TEXT_CMD = r"\\(?:text|textbf|textrm|mathrm|mbox|operatorname)\{[^{}]*\}"
_LEADING_TEXT = re.compile(rf"^(?:{_TEXT_CMD})+")
_TRAILING_TEXT = re.compile(rf"(?:{_TEXT_CMD})+$")
# Degrees and percent are written as units of the number in the answer key conventions
# of MATH-style data, so they are stripped like units.
_TRAILING_UNIT = re.compile(r"(?:\^\{?\\circ\}?|\\circ|\\%|%|\.)+$")
# "1,000" and "1{,}000" are thousands separators only in this strict shape; "1,2" stays
# a pair and is left to math-verify.
_THOUSANDS = re.compile(r"^[+-]?[0-9]{1,3}(?:(?:,|\{,\})[0-9]{3})+(?:\.[0-9]+)?$")

_SPACED_DIGITS = re.compile(r"[0-9][ \t\n]+[0-9]")

_NUM = r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+"
_INT_RE = re.compile(r"([+-]?)([0-9]+)")
_NUMBER_RE = re.compile(rf"([+-]?)({_NUM})")
_SLASH_RE = re.compile(rf"([+-]?)({_NUM})/({_NUM})")
_FRAC_RE = re.compile(
    rf"([+-]?)\\frac(?:\{{([+-]?(?:{_NUM}))\}}|([0-9]))(?:\{{([+-]?(?:{_NUM}))\}}|([0-9]))"
)


def normalize_answer(text: str) -> str:
    """Strip the decorations that never change a numeric value (see module docstring)."""
    s = text.replace("$", "")
    s = _NOISE.sub("", s)
    s = _FRAC_ALIASES.sub(r"\\frac", s)
    s = _LEADING_TEXT.sub("", s)
    s = _TRAILING_TEXT.sub("", s)
    s = _TRAILING_UNIT.sub("", s)
    if s.startswith("{") and s.endswith("}") and s.count("{") == 1:
        s = s[1:-1]  # "{5}" is 5; "{1,2}" is left alone below because it is not a number
    if _THOUSANDS.match(s):
        s = s.replace("{,}", "").replace(",", "")
    return s


def _fraction(num: str) -> Fraction | None:
    if len(num) > MAX_FRACTION_DIGITS:
        return None
    return Fraction(num)


def _frac_parts(s: str) -> tuple[str, str, str] | None:
    """(sign, numerator, denominator) strings of ``a/b`` or ``\\frac{a}{b}``, else None."""
    m = _SLASH_RE.fullmatch(s)
    if m is not None:
        return m.group(1), m.group(2), m.group(3)
    m = _FRAC_RE.fullmatch(s)
    if m is not None:
        return m.group(1), m.group(2) or m.group(3), m.group(4) or m.group(5)
    return None


def parse_plain_number(text: str) -> Fraction | str | None:
    """The exact value of a plain numeric answer, or None when it is not one.

    Integers come back as a canonical digit string (sign, no leading zeros) so that a
    10,000-digit integer compares exactly without int() conversion; other numbers come
    back as a Fraction. Division by zero is not a number (None).
    """
    if _SPACED_DIGITS.search(text):
        return None  # "1 2" is not obviously 12: let math-verify read it
    s = normalize_answer(text)
    if not s or not s.isascii():
        return None  # fullwidth digits etc. are not folded into ASCII ones
    m = _INT_RE.fullmatch(s)
    if m is not None:
        digits = m.group(2).lstrip("0") or "0"
        sign = "-" if m.group(1) == "-" and digits != "0" else ""
        return sign + digits
    m = _NUMBER_RE.fullmatch(s)
    if m is not None:
        value = _fraction(m.group(2))
        return None if value is None else (-value if m.group(1) == "-" else value)
    parts = _frac_parts(s)
    if parts is None:
        return None
    sign, num_s, den_s = parts
    num, den = _fraction(num_s), _fraction(den_s)
    if num is None or den is None or den == 0:
        return None
    value = num / den
    return -value if sign == "-" else value


def _as_fraction(value: Fraction | str) -> Fraction | None:
    if isinstance(value, Fraction):
        return value
    return Fraction(value) if len(value) <= MAX_FRACTION_DIGITS else None


def fast_equal(pred: str, gold: str) -> bool | None:
    """True/False when both sides are plain numbers, None when math-verify must decide."""
    a, b = parse_plain_number(pred), parse_plain_number(gold)
    if a is None or b is None:
        return None
    if isinstance(a, str) and isinstance(b, str):
        return a == b  # canonical integer strings: equal iff equal values
    fa, fb = _as_fraction(a), _as_fraction(b)
    if fa is None or fb is None:
        return False  # an integer too long to convert cannot equal a short non-integer
    return fa == fb
