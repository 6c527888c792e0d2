"""verl's metric names -> the run-folder row of docs/run_folder.md (same keys as the embedded path)."""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np

# _val_metrics_update names the per-set accuracy `val-core/<data_source>/acc/mean@<n>`.
_VAL = re.compile(r"^val-core/(?P<set>.+)/acc/mean@(?P<n>\d+)$")


def val_accuracies(metrics: Mapping[str, Any]) -> dict[str, float]:
    """{set: acc in [0, 1]} from verl's validation metrics (largest @n per set)."""
    best: dict[str, tuple[int, float]] = {}
    for key, value in metrics.items():
        m = _VAL.match(key)
        if m and (m["set"] not in best or int(m["n"]) > best[m["set"]][0]):
            best[m["set"]] = (int(m["n"]), float(value))
    return {s: v for s, (_, v) in sorted(best.items())}


def val_row(metrics: Mapping[str, Any]) -> dict[str, float]:
    """`val/<set>/acc` per set and `val/acc`, their mean; {} when this step did not validate."""
    accs = val_accuracies(metrics)
    if not accs:
        return {}
    row = {f"val/{s}/acc": a for s, a in accs.items()}
    row["val/acc"] = float(np.mean(list(accs.values())))
    return row


def train_row(metrics: Mapping[str, Any]) -> dict[str, float]:
    """actor/* losses as train/*, plus the mean sequence score and the advantage range of the trained batch."""
    row = {f"train/{k[len('actor/'):]}": float(v) for k, v in metrics.items()
           if k.startswith("actor/") and isinstance(v, (int, float, np.number))}
    if "critic/score/mean" in metrics:
        row["train/score_mean"] = float(metrics["critic/score/mean"])
    for stat in ("max", "min"):  # GRPO advantages of the trained batch: both 0 when no group mixes rewards
        if f"critic/advantages/{stat}" in metrics:
            row[f"train/advantage_{stat}"] = float(metrics[f"critic/advantages/{stat}"])
    return row
