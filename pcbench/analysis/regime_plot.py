"""The regime card as a figure: one row per method.

Columns: (1) per step, the seed-mean shares of all-correct / all-wrong / mixed among the groups
the method sampled before any filter (GRPO's groups, Pilot-Commit's pilots); (2) the same for
the groups it trained on; (3) the pass-rate histogram of sampled groups over the first and
the last steps; (4) seed-mean accuracy per validation set at the first and last evaluation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pcbench.ledger import PASS_BINS

COLORS = {"all_correct": "#4daf4a", "all_wrong": "#e41a1c", "mixed": "#377eb8"}
SMOOTH = 5  # steps: a batch of 16 groups moves a share in steps of 6.25%, so shares are pooled over 5 steps


def _shares(rows: pd.DataFrame, total: str, right: str, wrong: str) -> pd.DataFrame:
    g = rows.groupby("step")[[total, right, wrong]].sum().rolling(SMOOTH, min_periods=1).sum()
    den = g[total].replace(0, np.nan)
    return pd.DataFrame({"all_correct": g[right] / den, "all_wrong": g[wrong] / den,
                         "mixed": (g[total] - g[right] - g[wrong]) / den}).fillna(0.0)


def _stack(ax, shares: pd.DataFrame, title: str) -> None:
    ax.stackplot(shares.index, *[100 * shares[k] for k in COLORS], colors=list(COLORS.values()), alpha=0.8,
                 labels=["all correct", "all wrong", "mixed"])
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"step (pooled over the last {SMOOTH} steps and all seeds)")
    ax.set_ylabel("% of groups")


def _hist(ax, summary: dict) -> None:
    labels = [label for *_, label in PASS_BINS]
    x = np.arange(len(labels))
    ax.bar(x - 0.2, [100 * summary["hist_start"][k] for k in labels], 0.4, label="start", color="#999999")
    ax.bar(x + 0.2, [100 * summary["hist_end"][k] for k in labels], 0.4, label="end", color="#984ea3")
    ax.set_xticks(x, [f"p={k}" if "-" not in k else k for k in labels], rotation=35, fontsize=7)
    ax.set_ylabel("% of sampled groups")
    ax.set_title(f"pass rate of sampled groups ({summary['sampled_kind'] or 'none'})", fontsize=9)
    ax.legend(fontsize=7)


def _sets(ax, summary: dict) -> None:
    names = list(summary["per_set"])
    x = np.arange(len(names))
    ax.bar(x - 0.2, [100 * summary["per_set"][k][0] for k in names], 0.4, label="first eval", color="#999999")
    ax.bar(x + 0.2, [100 * summary["per_set"][k][1] for k in names], 0.4, label="last eval", color="#ff7f00")
    ax.set_xticks(x, names, rotation=35, fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy %")
    ax.set_title("accuracy per set (seed mean)", fontsize=9)
    ax.legend(fontsize=7)


def draw_regime_card(table: pd.DataFrame, summaries: list[dict], out_dir: Path, stem: str = "regime_card") -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(summaries), 4, figsize=(16, 3.1 * len(summaries)), squeeze=False)
    for row, s in zip(axes, summaries):
        rows = table[table["method"] == s["method"]]
        _stack(row[0], _shares(rows, "sampled", "sampled_all_correct", "sampled_all_wrong"),
               f"{s['method']}: sampled groups ({s['sampled_kind'] or 'none'})")
        _stack(row[1], _shares(rows, "groups", "all_correct", "all_wrong"), f"{s['method']}: trained groups")
        _hist(row[2], s)
        _sets(row[3], s)
    axes[0][0].legend(loc="lower left", fontsize=7)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return paths
