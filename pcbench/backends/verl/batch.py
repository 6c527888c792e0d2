"""An allocator's `StepBatch` -> the KVBatchMeta verl trains on; TransferQueue bookkeeping.

verl's GRPO advantage (`compute_advantage_for_multi_trajectories` -> core_algos) groups
trajectories by their `uid` FIELD, while keys keep the uid they were generated under. A
Pilot-Commit group is two verl prompt groups (pilot from an earlier round or step, commit
from this one), so before training every trajectory of a `Group` gets the group's uid
written into its `uid` field: one GRPO group of n_pilot + n_commit rollouts, mean/std over
all of them, exactly the paper's rule (docs/method.md#commit). Keys (and so verl's per-session bookkeeping) are
untouched.
"""

from __future__ import annotations

from typing import Any, Iterable

from pcbench.allocators.base import Group, Rollouts
from pcbench.backends.verl.rollout import PARTITION, VerlRows, as_fields


def group_uid(group: Group) -> str:
    # the newest part's uid: for PC the commit, for GRPO/DAPO the only part
    return group.parts[-1].payload.uid


def to_training_batch(groups: list[Group], kv) -> Any:
    """Write one uid per Group into the rows' `uid` field; return KVBatchMeta(keys, tags) of all rows."""
    from transfer_queue import KVBatchMeta

    keys, uids = [], []
    for g in groups:
        uid = group_uid(g)
        for part in g.parts:
            keys.extend(part.payload.keys)
            uids.extend([uid] * len(part.payload))
    kv.kv_batch_put(keys=keys, partition_id=PARTITION, fields=as_fields(kv, [{"uid": u} for u in uids]))
    listing = (kv.kv_list(partition_id=PARTITION) or {}).get(PARTITION, {})
    missing = [k for k in keys if k not in listing]
    if missing:
        raise RuntimeError(f"{len(missing)} trajectories of the training batch are gone from TransferQueue "
                           f"(e.g. {missing[0]}); a buffered pilot was cleared before its commit")
    return KVBatchMeta(partition_id=PARTITION, keys=keys, tags=[listing[k] for k in keys])


def held_keys(obj: Any) -> set[str]:
    """TransferQueue keys reachable from an allocator's state_dict (e.g. Pilot-Commit's buffered pilots)."""
    found: set[str] = set()
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, Rollouts):
            stack.append(x.payload)
        elif isinstance(x, VerlRows):
            found.update(x.keys)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple, set, frozenset)):
            stack.extend(x)
        elif hasattr(x, "__dataclass_fields__"):
            stack.extend(getattr(x, f) for f in x.__dataclass_fields__)
    return found


def collect_garbage(kv, generated: Iterable[str], trained: Iterable[str], allocator_state: Any) -> int:
    """Clear this step's rows that are neither trained (verl clears those) nor held by the allocator."""
    keep = set(trained) | held_keys(allocator_state)
    garbage = sorted(set(generated) - keep)
    if garbage:
        kv.kv_clear(keys=garbage, partition_id=PARTITION)
    return len(garbage)
