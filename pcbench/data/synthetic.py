"""The embedded backend's synthetic task as verl parquet (data=embedded-verl).

The rows are made from a built `SyntheticTask` (pcbench/backends/embedded/task.py), the object
the embedded trainer itself trains and validates on, so the two backends see the same problems
whatever the task's generation does: the RL pool in pool order (row i is prompt id i, so verl's
PromptStream over row indices visits prompts in the embedded stream's order), the validation
problems each written `data.val_samples` times (verl samples once per row: val_kwargs.n=1), the
prompt text as it is (`47+35=`, one user turn: the exported tokenizer's chat template turns it
into the embedded `[bos] + prompt` ids), and the ground truth the embedded reward checks, through
the same `\\boxed{}` reward (pcbench.reward via verl_compute_score).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd

TRAIN, VAL = "synthetic_train", "synthetic_val"  # file stems; VAL is also the data_source: val/synthetic_val/acc


def verl_rows(problems: Iterable, data_source: str, split: str, repeat: int = 1) -> pd.DataFrame:
    """verl's RL schema (pcbench/data/prepare.py) for embedded Problems; extra_info keeps pid and tier."""
    problems = list(problems)
    rows = [{"data_source": data_source,
             "prompt": [{"role": "user", "content": p.prompt}],
             "ability": "arithmetic",
             "reward_model": {"style": "rule", "ground_truth": p.answer},
             "extra_info": {"index": int(p.pid), "split": split, "repeat": r, "tier": p.tier}}
            for r in range(repeat) for p in problems]
    return pd.DataFrame(rows)


def task_frames(task, val_samples: int) -> dict[str, pd.DataFrame]:
    """{file stem: frame} of the RL pool and the validation set of `task`."""
    pids = [p.pid for p in task.train]
    if pids != list(range(len(pids))):  # verl indexes prompts by row; the embedded stream by pid
        raise ValueError("the task's RL prompt ids are not 0..N-1 in pool order; the verl rows would "
                         "not line up with the embedded prompt stream")
    return {TRAIN: verl_rows(task.train, TRAIN, "train"), VAL: verl_rows(task.val, VAL, "test", val_samples)}


def write_frames(frames: dict[str, pd.DataFrame], root: str | Path) -> list[Path]:
    """root/<stem>.parquet for each frame, each written whole or not at all."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for stem, frame in frames.items():
        path = root / f"{stem}.parquet"
        tmp = path.with_suffix(".parquet.tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(path)
        out.append(path)
    return out
