"""math-verify under a wall-clock deadline, in a main thread.

math-verify's own ``parsing_timeout`` / ``timeout_seconds`` arm ``signal.alarm`` per
operation, in whole seconds (``alarm(int(0.5))`` disarms), so one call may spend
several budgets (parse gold, parse pred, then every gold x pred comparison). We pass
``None`` to both and arm a single ``ITIMER_REAL`` for the whole call instead: one
budget, float resolution, and the exception is a BaseException so that the many
``except Exception`` blocks in sympy and math-verify cannot swallow it.

Signals only work in the main thread of the main interpreter; off it, callers use the
process guard (``procguard.py``), whose workers run this same function in their own
main thread. Only LaTeX extraction is enabled: math-verify's plain-expression
extraction goes through ``sympy.parse_expr``, which calls ``eval``.
"""

from __future__ import annotations

import functools
import logging
import re
import signal
import sys
import threading
import time
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Iterator, NamedTuple


class Verdict(NamedTuple):
    acc: bool
    timed_out: bool
    parse_failed: bool


class Deadline(BaseException):
    """The wall-clock budget ran out (BaseException: see module docstring)."""


class _DropNoTimeoutWarning(logging.Filter):
    """math-verify warns once that timeouts are disabled; here the deadline replaces
    them, so the warning would only mislead whoever reads the training log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


@functools.lru_cache(maxsize=1)
def _math_verify() -> SimpleNamespace:
    # Imported lazily (about 1 s: sympy) and always outside any deadline.
    from math_verify import LatexExtractionConfig, parse, verify
    from sympy import Basic, MatrixBase

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_DropNoTimeoutWarning())
    return SimpleNamespace(
        parse=parse, verify=verify, LATEX_ONLY=[LatexExtractionConfig()], sympy_types=(Basic, MatrixBase)
    )


def can_use_signals() -> bool:
    return threading.current_thread() is threading.main_thread()


# After the deadline fires the timer re-arms at this period, so a Deadline swallowed by
# library code (e.g. raised inside a ``__del__``, where Python only prints it) recurs.
_REFIRE_S = 0.05


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise Deadline in the main thread after ``seconds``; restores any previous timer.

    Restoring happens in an inner ``finally`` that first disarms the handler, so a
    Deadline landing in the cleanup itself cannot leave our handler installed.
    """
    state = {"armed": True}

    def _on_alarm(signum: int, frame: object) -> None:
        if state["armed"]:
            signal.setitimer(signal.ITIMER_REAL, _REFIRE_S)
            raise Deadline()

    old_hook = sys.unraisablehook

    def _drop_deadline(unraisable) -> None:
        # A Deadline swallowed by a __del__ is expected (the re-fire catches up with it): drop it at
        # once. A test runner's hook formats a traceback, and a re-fire landing inside that (seen
        # under pytest: an xdist worker crashed) would escape from the hook instead.
        if not isinstance(unraisable.exc_value, Deadline):
            old_hook(unraisable)

    old_handler = signal.signal(signal.SIGALRM, _on_alarm)
    sys.unraisablehook = _drop_deadline
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))
    start = time.monotonic()
    try:
        yield
    finally:
        try:
            state["armed"] = False
        finally:
            state["armed"] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_handler if old_handler is not None else signal.SIG_DFL)
            sys.unraisablehook = old_hook
            if old_delay > 0:  # someone else's timer was pending: give it back its rest
                rest = max(old_delay - (time.monotonic() - start), 1e-6)
                signal.setitimer(signal.ITIMER_REAL, rest, old_interval)


_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str) -> tuple:
    # A group of n rollouts shares one gold answer; sympy objects are immutable.
    mv = _math_verify()
    return tuple(mv.parse(f"${gold}$", extraction_config=mv.LATEX_ONLY, parsing_timeout=None))


def _verify_unguarded(pred: str, gold: str) -> Verdict:
    mv = _math_verify()
    gold_parsed = list(_parse_gold(gold))
    boxed = "\\boxed{" + _UNESCAPED_DOLLAR.sub("", pred) + "}"
    pred_parsed = mv.parse(boxed, extraction_config=mv.LATEX_ONLY, parsing_timeout=None)
    parse_failed = not any(isinstance(p, mv.sympy_types) for p in pred_parsed)
    if not pred_parsed or not gold_parsed:
        return Verdict(False, False, True)
    acc = bool(mv.verify(gold_parsed, pred_parsed, timeout_seconds=None))
    return Verdict(acc, False, parse_failed)


def verify_in_main_thread(pred: str, gold: str, timeout_s: float) -> Verdict:
    """Compare a (screened) boxed answer with a gold answer via math-verify.

    Must be called in the main thread. Errors inside math-verify count as a failed parse;
    running out of ``timeout_s`` (the whole call) counts as a timeout.
    """
    prepare()
    try:
        with deadline(timeout_s):
            return _verify_unguarded(pred, gold)
    except Deadline:
        return Verdict(False, True, False)
    except Exception:  # includes RecursionError from the recursive LaTeX parser
        return Verdict(False, False, True)


@functools.lru_cache(maxsize=1)
def prepare() -> None:
    """Import math-verify and pay sympy's first-call costs (lazy imports, caches) once,
    outside any deadline, so the first real call is not a spurious timeout."""
    _math_verify()
    _verify_unguarded("\\frac{\\pi}{2}", "\\pi/2")
    _verify_unguarded("(0,1]", "\\{1,2\\}")
    _verify_unguarded("x^2+1", "1+x^{2}")
