"""pcbench `Request`s -> verl agent-loop generation; verl trajectories -> pcbench `Rollouts`.

One `generate(requests)` is one generation call of the allocator (docs/method.md#commit: a round's
commits and pilots together). Each request becomes one verl prompt group with a fresh uid
and its own rollout count (`__rollout_n__`, read by verl's `AgentLoopWorkerTQ._run_prompt`),
all submitted in ONE `agent_loop_manager.generate_sequences` call while the vLLM replicas
are awake. The agent loop scores every trajectory with the reward (pcbench's
`verl_compute_score` through verl's reward loop) and writes it to TransferQueue under
`{uid}_{session}_0`; this class waits until every group is terminal and reads each
trajectory's boolean `acc` from `extra_fields.reward_extra_info`.

The payload of a returned `Rollouts` is a `VerlRows`: the TransferQueue keys of its k
trajectories (the rows stay in TransferQueue until trained on or garbage-collected).
`kv` is the `transfer_queue` module in a run; tests pass an in-memory stand-in.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from pcbench.allocators.base import Request, Rollouts

PARTITION = "train"


@dataclass(frozen=True)
class VerlRows:
    """k trajectories of one verl prompt group: keys `{uid}_{session}_{index}` in partition `train`."""

    uid: str
    keys: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.keys)


def new_uid() -> str:
    # verl's ReplayBuffer splits keys on "_" to find the uid: a uid must not contain one.
    return uuid.uuid4().hex


def as_fields(kv, rows: list[dict]):
    """Rows -> what kv_batch_put takes: a TensorDict for TransferQueue (the in-memory test store
    takes the plain list, as 25-50K NonTensorData objects a step would dominate a CPU test)."""
    maker = getattr(kv, "as_fields", None)
    if maker is not None:
        return maker(rows)
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    return list_of_dict_to_tensordict(rows)


def session_of(key: str) -> int:
    return int(key.rsplit("_", 2)[1])


class VerlRolloutBackend:
    """RolloutBackend over verl's agent loop. dataset[prompt_id] is one RLHFDataset row."""

    def __init__(self, dataset, agent_loop_manager, kv, global_steps: Callable[[], int],
                 poll_interval_s: float = 0.5, max_retries: int = 2, timeout_s: float | None = None,
                 progress: Callable[[], None] | None = None):
        self.dataset = dataset
        self.manager = agent_loop_manager
        self.kv = kv
        self.global_steps = global_steps
        self.poll_interval_s = float(poll_interval_s)
        self.max_retries = int(max_retries)
        self.timeout_s = timeout_s
        self.calls = 0
        self.retried = 0  # prompt groups resubmitted after an agent-loop failure (logged)
        # trajectories verl's agent loop wrote to TransferQueue for our prompt groups, failed
        # groups' partial ones included: verl's own count, next to the ledger's (allocator's) count
        self.generated = 0
        self.progress = progress or (lambda: None)  # called when more groups are done (watchdog heartbeat)

    # -- RolloutBackend -----------------------------------------------------------------------
    def generate(self, requests: Sequence[Request]) -> list[Rollouts]:
        self.calls += 1
        pending = {new_uid(): i for i in range(len(requests))}
        done: dict[int, VerlRows] = {}
        for attempt in range(self.max_retries + 1):
            self._submit({uid: requests[i] for uid, i in pending.items()})
            finished, failed = self._wait(set(pending))
            for uid, rows in finished.items():
                done[pending[uid]] = rows
            if not failed:
                break
            if attempt == self.max_retries:
                raise RuntimeError(f"verl agent loop failed {len(failed)} prompt group(s) (e.g. uid {sorted(failed)[0]}) "
                                   f"{self.max_retries + 1} times; see the AgentLoopWorker logs "
                                   f"(raise backend.max_retries to keep going)")
            self.retried += len(failed)
            pending = {new_uid(): pending[uid] for uid in failed}
        accs = self._read_acc([done[i] for i in range(len(requests))])
        return [Rollouts(req.prompt_id, acc, done[i], req.kind) for i, (req, acc) in enumerate(zip(requests, accs))]

    # -- steps of one call ----------------------------------------------------------------------
    def _submit(self, by_uid: dict[str, Request]) -> None:
        """Register each group's prompt key (status pending) and dispatch all of them at once."""
        from verl.utils import tensordict_utils as tu
        from verl.utils.dataset.rl_dataset import collate_fn

        rows = []
        for uid, req in by_uid.items():
            row = dict(self.dataset[int(req.prompt_id)])
            row["uid"], row["__rollout_n__"] = uid, int(req.k)
            rows.append(row)
        batch = tu.get_tensordict(collate_fn(rows))
        step = int(self.global_steps())
        tu.assign_non_tensor_data(batch, "global_steps", step)
        tags = [{"is_prompt": True, "status": "pending", "global_steps": step} for _ in by_uid]
        self.kv.kv_batch_put(keys=list(by_uid), partition_id=PARTITION, tags=tags)
        self.manager.generate_sequences(batch)

    def _wait(self, uids: set[str]) -> tuple[dict[str, VerlRows], set[str]]:
        """Poll until every group is terminal: (uid -> rows of finished groups, uids that failed)."""
        start, done_before = time.monotonic(), 0
        while True:
            listing = (self.kv.kv_list(partition_id=PARTITION) or {}).get(PARTITION, {})
            status = {uid: listing.get(uid, {}).get("status") for uid in uids}
            done = sum(s in ("finished", "failure") for s in status.values())
            if done > done_before:
                self.progress()
                done_before = done
            if done == len(status):
                break
            if self.timeout_s is not None and time.monotonic() - start > self.timeout_s:
                waiting = sorted(u for u, s in status.items() if s not in ("finished", "failure"))
                raise TimeoutError(f"{len(waiting)} prompt group(s) not finished after {self.timeout_s}s")
            time.sleep(self.poll_interval_s)
        keys: dict[str, list[str]] = {uid: [] for uid in uids}
        for key, tag in listing.items():
            uid = key.split("_", 1)[0]
            if uid in keys and not tag.get("is_prompt", False):
                keys[uid].append(key)
        self.kv.kv_clear(keys=sorted(uids), partition_id=PARTITION)  # prompt-level status keys
        self.generated += sum(len(k) for k in keys.values())
        failed = {uid for uid in uids if status[uid] == "failure" or not keys[uid]}
        if failed:  # drop the partial trajectories of failed groups; they are regenerated
            stale = [k for uid in failed for k in keys[uid]]
            if stale:
                self.kv.kv_clear(keys=stale, partition_id=PARTITION)
        finished = {uid: VerlRows(uid, tuple(sorted(keys[uid], key=session_of))) for uid in uids - failed}
        return finished, failed

    def _read_acc(self, groups: list[VerlRows]) -> list[np.ndarray]:
        """(k,) 0/1 float acc per group, from each trajectory's reward_extra_info["acc"]."""
        keys = [k for g in groups for k in g.keys]
        if not keys:
            return [np.zeros(0) for _ in groups]
        data = self.kv.kv_batch_get(keys=keys, partition_id=PARTITION, select_fields=["extra_fields"])
        flat = np.array([_acc_of(x) for x in data["extra_fields"]], dtype=float)
        bounds = np.cumsum([0] + [len(g) for g in groups])
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _acc_of(extra_fields: Any) -> float:
    extra = getattr(extra_fields, "data", extra_fields)
    info = extra.get("reward_extra_info", {}) if isinstance(extra, dict) else {}
    if "acc" not in info:
        raise RuntimeError("a trajectory has no reward_extra_info['acc']: point verl.reward.custom_reward_function "
                           "at pcbench/reward/verl_entry.py:verl_compute_score")
    return float(bool(info["acc"]))
