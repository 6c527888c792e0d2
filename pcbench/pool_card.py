"""The pool card: per tier, how a pool's prompts spread over pass-rate classes at the RL settings.

A mean pass rate hides what allocation works with: a tier at 0.5 may be all mid-band prompts or
half solved, half never. The card counts prompts per class instead (pure functions, numpy only):

    solved       p >= 0.99          (most groups all-correct at n <= 32)
    near_solved  0.75 <= p < 0.99
    band         0.125 <= p < 0.75  the paper's band, where a pilot keeps a prompt
    hard         0 < p < 0.125
    never        p = 0              (exact rates: p < 1e-6, the softmax's tail)

The pass-rate report of a pool (pcbench.backends.embedded.warmstart.pass_rate_report), the regime
card (pcbench.analysis.regime) and the pre-run prediction (pcbench.predict) show it; the warm-start spread
(pcbench.reports.warmstart_spread) compares it across warm starts.
"""

from __future__ import annotations

import numpy as np

# (name, lower bound inclusive, upper bound exclusive): solved's 1.01 keeps p = 1 (and float
# rounding just above it) in; never's 1e-6 takes exact rates that are 0 but for the softmax's tail
CLASSES = (("solved", 0.99, 1.01), ("near_solved", 0.75, 0.99), ("band", 0.125, 0.75),
           ("hard", 1e-6, 0.125), ("never", -1.0, 1e-6))
CLASS_NOTE = "solved p >= 0.99, near-solved [0.75, 0.99), band [0.125, 0.75), hard (0, 0.125), never ~0"
POOL = "all"  # the card's key for the whole pool (rendered as "pool")


def pool_card(rates, tiers) -> dict:
    """{"all" | tier: {"n", "mean", and the share of prompts in each class of CLASSES}}, the whole
    pool first, then the tiers sorted by name. rates: (N,) pass rates in [0, 1]; tiers: (N,) names."""
    rates, tiers = np.asarray(rates, dtype=float), np.asarray(tiers)
    if rates.shape != tiers.shape or rates.ndim != 1:
        raise ValueError(f"pool_card: rates {rates.shape} and tiers {tiers.shape} must be two (N,) arrays")
    if rates.size == 0:
        raise ValueError("pool_card: no prompts (rates is empty)")
    out = {}
    for t in [POOL, *sorted(set(tiers.tolist()))]:
        r = rates if t == POOL else rates[tiers == t]
        out[t] = {"n": int(r.size), "mean": round(float(r.mean()), 4),
                  **{name: round(float(np.mean((r >= lo) & (r < hi))), 4) for name, lo, hi in CLASSES}}
    return out


def labelled_card(rates, tiers, measure: str, temperature: float, top_p: float) -> dict:
    """The card with how its rates were measured: measure "exact" (one forward pass per prompt,
    no sampling noise) or "sampled, k=8" (k rollouts per prompt), at (temperature, top_p)."""
    return {"measure": measure, "temperature": float(temperature), "top_p": float(top_p),
            "tiers": pool_card(rates, tiers)}


def card_caption(card: dict) -> str:
    """'pass rates: exact, at T 1, top_p 1' (or 'sampled, k=8, ...') for a labelled_card."""
    return f"pass rates: {card['measure']}, at T {card['temperature']:g}, top_p {card['top_p']:g}"


def card_rows(tiers: dict) -> tuple[list[str], list[list[str]]]:
    """(column names, one row of cells per tier by name, then the pool) of pool_card's result."""
    cols = ["tier", "n", "mean", *(name.replace("_", "-") for name, *_ in CLASSES)]
    order = sorted(t for t in tiers if t != POOL) + ([POOL] if POOL in tiers else [])  # JSON may sort "all" first
    rows = [["pool" if t == POOL else t, str(tiers[t]["n"]), f"{tiers[t]['mean']:.3f}",
             *(f"{100 * tiers[t][name]:.1f}%" for name, *_ in CLASSES)] for t in order]
    return cols, rows


def card_md(tiers: dict) -> list[str]:
    """Markdown table lines of pool_card's result: one row per tier, then "pool"."""
    cols, rows = card_rows(tiers)
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols), *("| " + " | ".join(r) + " |" for r in rows)]


def card_text(tiers: dict) -> list[str]:
    """The same table as card_md, in aligned plain-text columns."""
    cols, rows = card_rows(tiers)
    w = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    return ["  ".join(v.ljust(w[i]) for i, v in enumerate(r)).rstrip() for r in [cols, *rows]]
