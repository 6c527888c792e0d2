"""The `pcbench` trainer mode's sampling step on a real CPU TransferQueue, then verl's own
`_compute_advantage` on the batch it returns: a Pilot-Commit group (stored pilot + fresh
commit, two verl prompt groups) is normalised as ONE GRPO group."""

import numpy as np
import pytest
import torch

from pcbench.backends.verl.config import build_verl_config
from tests.verl.doubles import FakeAgentLoopManager, ListDataset, compose_pcbench


@pytest.fixture(scope="module")
def tq():
    ray = pytest.importorskip("ray")
    import transfer_queue

    # TransferQueue's controller and its 2 storage units each ask Ray for 1 CPU: 2 cores would deadlock
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    transfer_queue.init()
    yield transfer_queue
    transfer_queue.close()
    ray.shutdown()


def small_pc_trainer(tq, rate):
    from pcbench.backends.verl.trainer import AllocatingSampler, PcbenchTrainer

    cfg = compose_pcbench("backend=verl", "model=qwen2.5-math-1.5b", "data=deepmath", "method=pilot_commit",
                          "train.batch_size=4", "train.mini_batch_size=2", "rollout.n=8")
    trainer = object.__new__(PcbenchTrainer)  # no workers: only what the sampling step touches
    trainer.config = build_verl_config(cfg, run_dir=None)
    trainer.train_dataset = ListDataset(64)
    trainer.agent_loop_manager = FakeAgentLoopManager(tq, rate)
    trainer.global_steps = 1
    trainer.kv = tq
    trainer.alloc_run = trainer._make_alloc_run()
    trainer.replay_buffer = AllocatingSampler(trainer, inner=None)
    return trainer


def test_sampling_step_and_verl_advantage_on_real_transferqueue(tq):
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    # even prompts: pilot 1 of 2 right (p = 0.5, kept), commit 2 of 6; odd: all right (too easy)
    trainer = small_pc_trainer(tq, lambda i: 0.35 if i % 2 == 0 else 1.0)
    batch, _ = trainer.replay_buffer.sample(global_steps=1, partition_id="train", batch_size=4)
    assert trainer.agent_loop_manager.calls == [[2] * 12, [6] * 4 + [2] * 12]  # per-prompt n, one call a round
    assert len(batch.keys) == 4 * 8

    PPOTrainer._compute_advantage(trainer, batch, metrics={})  # verl's own step 7, reading TransferQueue
    data = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["uid", "advantages", "rm_scores"])
    uids = list(data["uid"])
    adv = torch.stack([a[-1] for a in data["advantages"].unbind(0)])
    score = torch.stack([s[-1] for s in data["rm_scores"].unbind(0)])
    for u in set(uids):
        idx = [i for i, x in enumerate(uids) if x == u]
        assert len(idx) == 8  # 2 pilot + 6 commit rollouts
        s = score[idx]
        expected = (s - s.mean()) / (s.std() + 1e-6)  # GRPO over the whole group
        assert torch.allclose(adv[idx], expected, atol=1e-4)
        pilot = [i for i in idx if batch.keys[i].split("_")[0] != u]  # generated under the pilot's own uid
        assert len(pilot) == 2
        alone = (score[pilot] - score[pilot].mean()) / (score[pilot].std() + 1e-6)  # had it been its own group
        assert not torch.allclose(adv[pilot], alone, atol=1e-3)

    row = trainer.alloc_run.finish_step(1)
    assert (row["rollouts/pilot"], row["rollouts/commit"], row["rollouts/step"]) == (24 * 2, 4 * 6, 72)
    tq.kv_clear(keys=batch.keys, partition_id="train")
    left = [k for k, t in tq.kv_list(partition_id="train").get("train", {}).items() if not t.get("is_prompt")]
    held = sum(len(e.pilot) for e in trainer.alloc_run.allocator.buffer.entries.values())
    assert len(left) == held  # only buffered pilots stay in TransferQueue
    assert np.isclose(row["alloc/buffer_size"], held / 2)
