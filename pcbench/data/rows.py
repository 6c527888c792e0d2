"""verl's RL rows from (question, answer) pairs: the prompt template and schema every data set
shares (the built-in sets of pcbench/data/prepare.py and your own file, pcbench/data/own.py)."""

from __future__ import annotations

import pandas as pd

from pcbench.data.specs import PROMPT_TEMPLATE, DatasetSpec


def chat_prompt(spec: DatasetSpec, question: str) -> list[dict]:
    """The prompt's turns: each worked example of the spec (user asks, assistant answers), then the question."""
    turns = []
    for q, a in spec.shots:
        turns += [{"role": "user", "content": PROMPT_TEMPLATE.format(question=q)}, {"role": "assistant", "content": a}]
    return turns + [{"role": "user", "content": PROMPT_TEMPLATE.format(question=question)}]


def to_verl_rows(spec: DatasetSpec, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    split = "train" if spec.role == "train" else "test"
    rows = []
    for r in range(spec.repeat):
        for i, (question, answer) in enumerate(pairs):
            rows.append({
                "data_source": spec.name,
                "prompt": chat_prompt(spec, question),
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": answer},
                "extra_info": {"index": i, "split": split, "repeat": r},
            })
    return pd.DataFrame(rows)
