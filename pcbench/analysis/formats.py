"""How numbers leave the analysis: the one rule for a JSON value that may be inf or NaN.

Every result file writes a missing or unbounded number (a censored median, an interval's open end)
as null, so the same number reads the same in every file.
"""

from __future__ import annotations

import math


def finite_or_none(value) -> float | None:
    """JSON-ready: None for inf, NaN or None, else the value as a float (numpy scalars too)."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value)
