"""Metrics go to the run folder's metrics.jsonl (always) and to wandb (optional, offline by default)."""

from __future__ import annotations

import os

from omegaconf import OmegaConf

from pcbench.rundir import RunDir


class MetricsLogger:
    def __init__(self, rundir: RunDir, cfg):
        self.rundir = rundir
        self.last_val = float("nan")
        for row in rundir.read_metrics():
            self.last_val = row.get("val/acc", self.last_val)
        self.wandb = None
        if cfg.logging.wandb:
            os.environ.setdefault("WANDB_MODE", str(cfg.logging.wandb_mode))
            import wandb  # optional dependency: pip install -e .[wandb]
            self.wandb = wandb.init(project=str(cfg.logging.wandb_project), name=rundir.path.name,
                                    dir=str(rundir.path), config=OmegaConf.to_container(cfg, resolve=True),
                                    id=rundir.path.name, resume="allow")

    def log(self, row: dict) -> None:
        self.rundir.append_metrics(row)
        self.last_val = row.get("val/acc", self.last_val)
        if self.wandb is not None:
            self.wandb.log({k: v for k, v in row.items() if k != "step"}, step=int(row["step"]))

    def close(self) -> None:
        if self.wandb is not None:
            self.wandb.finish()
