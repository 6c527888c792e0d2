"""How numbers leave the analysis: in JSON (null for a missing or unbounded number) and in markdown
(a ratio with its interval, rollouts with theirs, a percentage), so a number reads the same in
every report."""

from __future__ import annotations

import math

NA = "-"  # a cell with no number
DID_NOT_REACH = "did not reach"


def finite_or_none(value) -> float | None:
    """JSON-ready: None for inf, NaN or None, else the value as a float (numpy scalars too)."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value)


def fmt_rollouts(value) -> str:
    """Rollout counts as docs/method.md#results writes them: 10.6M from 1e6 up, 123.4K from 1e3 up, else raw."""
    if value is None:
        return NA
    if abs(value) >= 1e6:
        return f"{value / 1e6:.1f}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.1f}K"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"

def ratio_with_interval(point, low=None, high=None, ci=True) -> str:
    if point is None:
        return NA
    if not ci:
        return f"{point:.2f}x"
    lo = f"{low:.2f}" if low is not None else NA
    hi = f"{high:.2f}" if high is not None else "inf"
    return f"{point:.2f}x [{lo}, {hi}]"


def rollouts_with_interval(rec: dict) -> tuple[str, str]:
    if rec["target"] is None:
        return NA, NA
    point = DID_NOT_REACH if rec["rollouts_to_target"] is None else fmt_rollouts(rec["rollouts_to_target"])
    low, high = rec["rtt_ci_low"], rec["rtt_ci_high"]
    if low is None and high is None:
        return point, NA
    ci = f"[{fmt_rollouts(low) if low is not None else NA}, {fmt_rollouts(high) if high is not None else 'inf'}]"
    return point, ci


def percent(x) -> str:
    return NA if x is None else f"{100 * x:.1f}%"


def accuracy_with_interval(r: dict) -> str:
    if r.get("acc_at_budget") is None:
        return NA
    return f"{percent(r['acc_at_budget'])} [{100 * r['acc_at_budget_ci_low']:.1f}, {100 * r['acc_at_budget_ci_high']:.1f}]"
