"""Shared look of the figures: panel grids, saving (method labels and colours: pcbench/analysis/methods.py)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

KIND_COLORS = {"pilot": "#9ecae1", "commit": "#3182bd", "plain": "#969696"}
PANEL_W, PANEL_H = 5.2, 3.6
DPI = 150

plt.rcParams.update({"axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
                     "axes.spines.right": False, "legend.frameon": False, "font.size": 9,
                     "axes.titlesize": 10, "figure.titlesize": 11})


def unit_suffix(unit: str) -> str:
    return f" ({unit})" if unit else ""


def grid(n_rows: int, n_cols: int, sharey: bool = False):
    """A figure with n_rows x n_cols panels; axes always a 2-D array."""
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(PANEL_W * n_cols, PANEL_H * n_rows),
                             squeeze=False, sharey=sharey, layout="constrained")
    return fig, axes


def wrap(n_panels: int, max_cols: int = 3):
    """A figure of n_panels panels in rows of up to max_cols; unused panels are hidden."""
    n_cols = min(max(n_panels, 1), max_cols)
    n_rows = math.ceil(max(n_panels, 1) / n_cols)
    fig, axes = grid(n_rows, n_cols)
    flat = list(axes.flat)
    for ax in flat[n_panels:]:
        ax.set_visible(False)
    return fig, flat[:n_panels]


def save_figure(fig, table: pd.DataFrame, out_dir: Path, stem: str) -> list[Path]:
    """Write <stem>.pdf, <stem>.png and <stem>.csv (the plotted data) into out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.{ext}" for ext in ("pdf", "png", "csv")]
    fig.savefig(paths[0], bbox_inches="tight")  # keeps a legend placed beside the axes
    fig.savefig(paths[1], dpi=DPI, bbox_inches="tight")
    table.to_csv(paths[2], index=False)
    plt.close(fig)
    return paths
