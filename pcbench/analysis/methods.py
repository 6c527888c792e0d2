"""The one table of methods for every table and figure: label, colour and order.

analysis/speedup.py (tables), analysis/figures.py (legends, colours) and pcbench.bench (the
benchmark's tables, its method list) all read it. A method not listed here (a newly registered
allocator) appears under its registered name, after the listed ones in alphabetical order, in
a colour of FALLBACK_COLORS; listing it is optional and only changes how it is shown.
"""

from __future__ import annotations

# name: (label, colour). The paper's three first, in the order tables list them; then the
# others alphabetically (their colours are the ones the fallback cycle gave them before).
METHODS = {
    "grpo": ("GRPO", "#1f77b4"),
    "dapo": ("DAPO", "#ff7f0e"),
    "pilot_commit": ("Pilot-Commit", "#2ca02c"),
    "greso": ("GRESO", "#d62728"),
    "mopps": ("MoPPS", "#9467bd"),
    "oracle": ("Oracle", "#8c564b"),
    "pilot_commit_bayes": ("Pilot-Commit (Bayes)", "#e377c2"),
    "pods": ("PODS", "#7f7f7f"),
    "speed_rl": ("SPEED-RL", "#bcbd22"),
}
GRPO, DAPO, PC = "grpo", "dapo", "pilot_commit"  # the paper's three, by their registered names
PAPER_METHODS = (GRPO, DAPO, PC)
FALLBACK_COLORS = ("#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173")


def method_order(methods) -> list[str]:
    """grpo, dapo, pilot_commit first, then any other method alphabetically."""
    methods = set(methods)
    return [m for m in PAPER_METHODS if m in methods] + sorted(methods - set(PAPER_METHODS))


def label(method: str) -> str:
    return METHODS[method][0] if method in METHODS else method


def method_colors(methods) -> dict[str, str]:
    """Every listed method keeps its colour; other names take the fallback cycle in alphabetical
    order (so every figure of one invocation agrees)."""
    colors = {name: color for name, (_, color) in METHODS.items()}
    others = sorted(set(methods) - set(colors))
    colors.update({m: FALLBACK_COLORS[i % len(FALLBACK_COLORS)] for i, m in enumerate(others)})
    return colors
