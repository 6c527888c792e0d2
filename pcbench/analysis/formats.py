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


def decimal(value, digits: int = 2) -> str:
    """A plain number as '1.23'; NA when missing or not finite."""
    return NA if value is None or not math.isfinite(float(value)) else f"{float(value):.{digits}f}"


def fmt_rollouts(value) -> str:
    """Rollout counts as docs/method.md#results writes them: 10.6M from 1e6 up, 123.4K from 1e3 up, else raw."""
    if value is None:
        return NA
    if abs(value) >= 1e6:
        return f"{value / 1e6:.1f}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.1f}K"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _interval_end(value, digits: int, missing: str) -> str:
    """One end of an interval: `missing` for None or NaN, 'inf' for an unbounded end."""
    if value is None or math.isnan(float(value)):
        return missing
    return "inf" if math.isinf(float(value)) else f"{float(value):.{digits}f}"


def interval_text(low, high, digits: int = 2, missing_low: str = NA, missing_high: str = "inf") -> str:
    """'[0.80, 1.25]'. An infinite end reads 'inf'; a missing one (None, NaN) `missing_low` /
    `missing_high`: in the reports' JSON a high of None is an unbounded end, hence 'inf' by default."""
    return f"[{_interval_end(low, digits, missing_low)}, {_interval_end(high, digits, missing_high)}]"


def ratio_text(point, digits: int = 2, unit: str = "x") -> str:
    """A ratio as '1.23x'; NA when missing or not finite."""
    if point is None or not math.isfinite(float(point)):
        return NA
    return f"{float(point):.{digits}f}{unit}"


def ratio_with_interval(point, low=None, high=None, ci: bool = True, digits: int = 2, interval_digits: int | None = None,
                        missing_low: str = NA, missing_high: str = "inf", unit: str = "x") -> str:
    """A ratio with its interval, '1.23x [0.80, inf]' (NA when there is no ratio); ci=False: the ratio alone.
    Every report prints a ratio and its interval through this function (or ratio_entry_text)."""
    if point is None:
        return NA
    text = ratio_text(point, digits, unit)
    if not ci:
        return text
    return f"{text} {interval_text(low, high, digits if interval_digits is None else interval_digits, missing_low, missing_high)}"


def ratio_entry_text(entry: dict | None, point: str = "ratio", missing_low: str = "?", missing_high: str = "?",
                     unit: str = "x") -> str:
    """A ratio as the reports' JSON holds it, {ratio, low, high, high_inf} (scoring.ratio_record, the A/A of
    targets.aa_check; point="speedup" for a survival speedup {speedup, low, high}), as '1.23x [0.80, inf]';
    NA when there is none. `high_inf` reads 'inf'; a missing end reads `missing_low` / `missing_high`."""
    if not entry or entry.get(point) is None:
        return NA
    high = math.inf if entry.get("high_inf") else entry.get("high")
    return ratio_with_interval(entry[point], entry.get("low"), high, missing_low=missing_low,
                               missing_high=missing_high, unit=unit)


def md_table(header, rows=(), right_from: int | None = None) -> list[str]:
    """A markdown table's lines: '| a | b |', the '|---|---|' rule, then one line per row (cells as str).
    right_from: the columns from this index on are right-aligned ('---:')."""
    header = list(header)
    rule = ["---:" if right_from is not None and i >= right_from else "---" for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "|" + "".join(f"{r}|" for r in rule),
            *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)]


def rollouts_with_interval(rec: dict) -> tuple[str, str]:
    if rec["target"] is None:
        return NA, NA
    point = DID_NOT_REACH if rec["rollouts_to_target"] is None else fmt_rollouts(rec["rollouts_to_target"])
    low, high = rec["rtt_ci_low"], rec["rtt_ci_high"]
    if low is None and high is None:
        return point, NA
    ci = f"[{fmt_rollouts(low) if low is not None else NA}, {fmt_rollouts(high) if high is not None else 'inf'}]"
    return point, ci


def percent(x, digits: int = 1) -> str:
    """A share as '21.4%' (digits=0: '21%'); NA when missing or not finite."""
    return NA if x is None or not math.isfinite(float(x)) else f"{100 * x:.{digits}f}%"


def accuracy_with_interval(r: dict) -> str:
    if r.get("acc_at_budget") is None:
        return NA
    return f"{percent(r['acc_at_budget'])} [{100 * r['acc_at_budget_ci_low']:.1f}, {100 * r['acc_at_budget_ci_high']:.1f}]"
