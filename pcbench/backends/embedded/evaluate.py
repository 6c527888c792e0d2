"""Validation: one sample per problem (paper: temperature 1.0, top_p 0.7), accuracy per set."""

from __future__ import annotations

import numpy as np
import torch

from pcbench.allocators.base import Request
from pcbench.backends.embedded.generation import EmbeddedRollouts


@torch.no_grad()
def evaluate(model, tok, val_sets: dict, cfg, step: int) -> dict[str, float]:
    """-> {"val/<set>/acc": fraction, ..., "val/acc": mean over sets}. Its rng depends only on
    (seed, step), so evaluating never perturbs the training sample stream."""
    gen = torch.Generator().manual_seed(int(cfg.seed) * 1_000_003 + step)
    out: dict[str, float] = {}
    for name, problems in val_sets.items():
        roll = EmbeddedRollouts(model, tok, {p.pid: p for p in problems}, max_new_tokens=int(cfg.data.max_response_tokens),
                                temperature=float(cfg.train.val_temperature), top_p=float(cfg.train.val_top_p),
                                generator=gen)
        res = roll.generate([Request(p.pid, 1, "plain") for p in problems])
        out[f"val/{name}/acc"] = float(np.mean([r.acc[0] for r in res]))
    out["val/acc"] = float(np.mean([out[f"val/{name}/acc"] for name in val_sets]))
    return out
