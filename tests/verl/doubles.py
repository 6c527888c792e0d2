"""CPU stand-ins for the GPU side of a verl run, for tests (the way verl's *_on_cpu tests do it).

They live under tests/, not in the shipped package: nothing in pcbench/ uses them. Import them
as `from tests.verl.doubles import ...` (the suite's importlib mode resolves our `tests`, not
the one the verl wheel ships; see tests/conftest.py).

`FakeAgentLoopManager.generate_sequences(batch)` does what `AgentLoopManagerTQ` +
`AgentLoopWorkerTQ` do for a single-turn agent: per prompt row it reads `__rollout_n__`,
runs that many "sessions", and writes each trajectory to the key-value store under
`{uid}_{session}_0` with verl's field and tag layout (prompts/responses/response_mask/
rm_scores tensors, extra_fields.reward_extra_info from the reward, seq_len/global_steps
tags), then marks the prompt key finished. Which rollouts are correct is scripted by a
per-prompt pass rate (exact: the first round(p*n) sessions are correct), and the score
comes from pcbench's real `verl_compute_score` on a "\\boxed{}" response.

`InMemoryKV` implements the slice of the `transfer_queue` client API that pcbench and the
manager use (kv_batch_put / kv_list / kv_batch_get / kv_clear) on plain dicts, so tests at
the paper's scale (25-50K rollouts a step) stay fast; tests/verl also run the same code
against a real CPU TransferQueue at small scale.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict

from pcbench import paths
from pcbench.reward.verl_entry import verl_compute_score


class InMemoryKV:
    """TransferQueue's kv API in one process. Rows are plain dicts; kv_batch_get returns a TensorDict."""

    def __init__(self):
        self.rows: dict[str, dict[str, dict]] = defaultdict(dict)  # partition -> key -> fields
        self.tags: dict[str, dict[str, dict]] = defaultdict(dict)

    @staticmethod
    def as_fields(rows: list[dict]) -> list[dict]:
        return rows  # pcbench.backends.verl.rollout.as_fields: skip the TensorDict round trip

    def kv_batch_put(self, keys, partition_id, fields=None, tags=None):
        if fields is None:
            rows = [None] * len(keys)
        else:
            rows = fields if isinstance(fields, list) else _split_rows(fields, len(keys))
        for i, key in enumerate(keys):
            if rows[i] is not None:
                self.rows[partition_id].setdefault(key, {}).update(rows[i])
            tag = self.tags[partition_id].setdefault(key, {})
            if tags is not None:
                tag.update(tags[i])

    def kv_put(self, key, partition_id, fields=None, tag=None):
        self.kv_batch_put([key], partition_id, None, [tag or {}])
        if fields is not None:
            self.rows[partition_id].setdefault(key, {}).update(fields)

    def kv_list(self, partition_id=None):
        parts = [partition_id] if partition_id else list(self.tags)
        return {p: {k: dict(t) for k, t in self.tags[p].items()} for p in parts}

    def kv_batch_get(self, keys, partition_id, select_fields=None, as_tensordict: bool = False):
        """{field: per-key values}; `as_tensordict=True` gives TransferQueue's TensorDict (slow at scale)."""
        rows = [self.rows[partition_id][k] for k in keys]
        fields = select_fields or list(rows[0])
        if as_tensordict:
            from verl.utils.tensordict_utils import list_of_dict_to_tensordict

            return list_of_dict_to_tensordict([{f: r[f] for f in fields} for r in rows])
        return {f: [r[f] for r in rows] for f in fields}

    def kv_clear(self, keys, partition_id):
        for key in keys:
            self.rows[partition_id].pop(key, None)
            self.tags[partition_id].pop(key, None)

    def num_rows(self, partition_id="train") -> int:
        return sum(1 for t in self.tags[partition_id].values() if not t.get("is_prompt", False))


def _split_rows(td: TensorDict, n: int) -> list[dict]:
    out = [dict() for _ in range(n)]
    for name, value in td.items():
        if isinstance(value, NonTensorStack):
            vals = value.tolist()
        elif isinstance(value, NonTensorData):
            vals = [value.data] * n
        elif isinstance(value, torch.Tensor) and value.is_nested:
            vals = list(value.unbind(0))
        else:
            vals = list(value)
        for row, v in zip(out, vals):
            row[name] = v
    return out


class FakeAgentLoopManager:
    """Scripted single-turn agent loop writing verl-shaped trajectories into `kv`."""

    def __init__(self, kv, pass_rate: Callable[[int], float], answer: str = "7", fail_uids: int = 0):
        self.kv = kv
        self.pass_rate = pass_rate  # extra_info.index -> probability a session is correct
        self.answer = answer
        self.calls: list[list[int]] = []  # per call: the __rollout_n__ of each prompt row
        self.fail_next = fail_uids  # the next `fail_uids` prompt groups end in status "failure"

    def generate_sequences(self, batch: TensorDict) -> None:
        ns = [int(x) for x in _column(batch, "__rollout_n__")]
        self.calls.append(ns)
        uids, index = _column(batch, "uid"), _column(batch, "index")
        sources, rms = _column(batch, "data_source"), _column(batch, "reward_model")
        step = batch["global_steps"] if "global_steps" in batch.keys() else 0
        step = int(getattr(step, "data", step))
        for i, (uid, n) in enumerate(zip(uids, ns)):
            p = float(self.pass_rate(int(index[i])))
            if self.fail_next > 0:
                self.fail_next -= 1
                self.kv.kv_put(key=uid, partition_id="train", tag={"status": "failure"})
                continue
            self._one_group(uid, n, p, step, row={"data_source": sources[i], "reward_model": rms[i]})

    def _one_group(self, uid: str, n: int, p: float, step: int, row: dict) -> None:
        correct = int(round(p * n))
        # the real reward on a right and a wrong "\boxed{}" answer (scored once per group: speed)
        scored = {ok: verl_compute_score(row["data_source"], f"so \\boxed{{{self.answer if ok else self.answer + '1'}}}",
                                         row["reward_model"]["ground_truth"]) for ok in (True, False)}
        resp = torch.tensor([11, 12, 13], dtype=torch.int64)
        prompts, mask = torch.tensor([1, 2, 3, 4]), torch.ones_like(resp)
        rm = {ok: torch.tensor([0.0, 0.0, scored[ok]["score"]]) for ok in (True, False)}
        extra = {ok: {"reward_extra_info": scored[ok], "min_global_steps": step, "max_global_steps": step}
                 for ok in (True, False)}
        tag = {"status": "success", "prompt_len": 4, "response_len": 3, "seq_len": 7,
               "global_steps": step, "min_global_steps": step, "max_global_steps": step}
        keys = [f"{uid}_{s}_0" for s in range(n)]
        # tensors are shared between sessions (never written to): the store keeps references
        fields = [{"prompts": prompts, "responses": resp, "response_mask": mask, "rm_scores": rm[s < correct],
                   "uid": uid, "num_turns": 2, "data_source": row["data_source"],
                   "reward_model": row["reward_model"], "extra_fields": extra[s < correct]} for s in range(n)]
        tags = [dict(tag) for _ in range(n)]
        from pcbench.backends.verl.rollout import as_fields

        self.kv.kv_batch_put(keys=keys, partition_id="train", fields=as_fields(self.kv, fields), tags=tags)
        self.kv.kv_put(key=uid, partition_id="train", tag={"status": "finished"})


def _column(batch: TensorDict, key: str) -> list:
    value = batch[key]
    if isinstance(value, torch.Tensor):
        return value.tolist()
    return value.tolist() if hasattr(value, "tolist") else list(value)


class ListDataset:
    """The RLHFDataset rows the trainer indexes, without a tokenizer: prompt_id -> row dict."""

    def __init__(self, n: int, data_source: str = "fake", answer: str = "7"):
        self.n, self.data_source, self.answer = n, data_source, answer

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        return {"raw_prompt": [{"role": "user", "content": f"q{i}"}], "data_source": self.data_source,
                "reward_model": {"style": "rule", "ground_truth": self.answer}, "extra_info": {"index": i},
                "index": i, "dummy_tensor": torch.tensor([0], dtype=torch.uint8)}


def compose_pcbench(*overrides: str, conf_dir: str | None = None):
    """pcbench's config for `overrides`, via Hydra's compose API (as `python -m pcbench.run` builds it)."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from pcbench.config import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    conf = conf_dir or str(paths.CONF_DIR)
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))
