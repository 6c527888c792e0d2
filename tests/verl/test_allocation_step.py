"""The verl trainer's allocation step on CPU, at the paper's 1.5B settings (128 prompts, n = 128,
384 candidates, Pilot-Commit 32 + 96), against a fake agent loop writing verl-shaped
trajectories: per-prompt n, one uid per trained group, ledger counts = docs/method.md#cost-per-step."""

import pytest

from pcbench.backends.verl.allocation import AllocationRun, method_config
from pcbench.backends.verl.config import build_verl_config
from pcbench.backends.verl.rollout import VerlRolloutBackend
from tests.verl.doubles import FakeAgentLoopManager, InMemoryKV, ListDataset

# pass rate by prompt index mod 8: 4/8 inside PC's band [0.125, 0.75], 6/8 with non-zero std
RATES = [0.0, 0.0625, 0.25, 0.5, 0.75, 1.0, 0.125, 0.875]


def rate(i: int) -> float:
    return RATES[i % len(RATES)]


def drive(paper_cfg, method, steps, num_prompts=6000, kv=None, keep_last=False):
    """Run `steps` allocation steps the way PcbenchTrainer does; return per-step rows and the pieces."""
    v = build_verl_config(paper_cfg(method), run_dir=None)
    kv = kv or InMemoryKV()
    run = AllocationRun(method_config(v.pcbench.method), int(v.pcbench.train_batch), 0, num_prompts, kv)
    manager = FakeAgentLoopManager(kv, rate)
    step = {"n": 0}
    backend = VerlRolloutBackend(ListDataset(num_prompts), manager, kv, lambda: step["n"], poll_interval_s=0.0)
    rows, batches = [], []
    for s in range(1, steps + 1):
        step["n"] = s
        batch = run.sample(s, backend)            # AllocatingSampler.sample("train")
        rows.append(run.finish_step(s))            # PcbenchTrainer.step, after the update
        batches.append(batch)
        if not (keep_last and s == steps):
            kv.kv_clear(keys=batch.keys, partition_id="train")  # fit(): tq.kv_clear(batch.keys) after logging
    return rows, batches, kv, manager, run


def test_grpo_generates_16384_per_step(paper_cfg):
    rows, batches, kv, manager, _ = drive(paper_cfg, "grpo", 2)
    assert [r["rollouts/step"] for r in rows] == [16_384, 16_384]
    assert rows[-1]["cumulative_rollouts"] == 32_768
    assert manager.calls[0] == [128] * 128 and len(batches[0].keys) == 16_384
    assert kv.num_rows() == 0  # nothing left behind in TransferQueue


def test_dapo_generates_at_least_49152_per_step(paper_cfg):
    rows, batches, kv, manager, _ = drive(paper_cfg, "dapo", 2)
    for r in rows:
        assert r["rollouts/step"] >= 49_152 and r["rollouts/step"] % 49_152 == 0
        assert r["rollouts/trained"] == 16_384
        assert r["rollouts/discarded"] == r["rollouts/step"] - 16_384  # filtered + surplus, all counted
    assert rows[0]["rollouts/step"] == 49_152  # 6/8 of 384 keep variance: one round fills 128
    assert all(ns == [128] * 384 for ns in manager.calls)
    assert kv.num_rows() == 0


def test_pilot_commit_steady_state_is_24576_per_step(paper_cfg):
    rows, batches, kv, manager, run = drive(paper_cfg, "pilot_commit", 4)
    # step 1 fills its buffer first (2 rounds); from step 2 one round: 384 x 32 pilots + 128 x 96 commits
    assert rows[0]["rollouts/step"] == 2 * 384 * 32 + 128 * 96
    assert [r["rollouts/step"] for r in rows[1:]] == [24_576] * 3
    assert all((r["rollouts/pilot"], r["rollouts/commit"]) == (12_288, 12_288) for r in rows[1:])
    last = manager.calls[-1]  # ONE generation call: commits first, then the round's pilots
    assert last == [96] * 128 + [32] * 384
    # held in TransferQueue after the step: exactly the buffered pilots (trained rows cleared by verl)
    buffered = sum(len(e.pilot) for e in run.allocator.buffer.entries.values())
    assert kv.num_rows() == buffered > 0


def test_pilot_and_commit_form_one_grpo_group_by_uid(paper_cfg):
    _, batches, kv, _, _ = drive(paper_cfg, "pilot_commit", 2, keep_last=True)
    batch = batches[-1]
    assert len(batch.keys) == 128 * 128 and all(tag["seq_len"] == 7 for tag in batch.tags)
    groups = {}
    for key in batch.keys:  # the uid FIELD groups advantages; keys keep the uid they were generated under
        groups.setdefault(kv.rows["train"][key]["uid"], []).append(key.split("_")[0])
    assert len(groups) == 128
    for field_uid, key_uids in groups.items():
        sizes = sorted(key_uids.count(u) for u in set(key_uids))
        assert sizes == [32, 96]  # the stored pilot (earlier round) + this round's commit
        assert key_uids.count(field_uid) == 96  # the group carries the commit's uid


def test_dapo_counts_generated_rollouts_even_when_everything_is_filtered(paper_cfg):
    """Saturated data: DAPO pays for every round before the 10-round limit stops it."""
    from pcbench.allocators import AllocationError

    v = build_verl_config(paper_cfg("dapo", "train.batch_size=8", "train.mini_batch_size=2", "rollout.n=4"), None)
    kv = InMemoryKV()
    run = AllocationRun(method_config(v.pcbench.method), 8, 0, 6000, kv)
    backend = VerlRolloutBackend(ListDataset(6000), FakeAgentLoopManager(kv, lambda i: 1.0), kv, lambda: 1,
                                 poll_interval_s=0.0)
    with pytest.raises(AllocationError, match="10 sampling rounds"):
        run.sample(1, backend)
    assert run.ledger.cumulative == 10 * 24 * 4  # 10 rounds x 3 x 8 candidates x n=4


def test_a_starved_allocation_step_is_recorded_in_the_run_folder(paper_cfg, tmp_path):
    """verl runs the allocator in its own process: the step itself writes stopped.json (the entry sees
    only an exit code), so the analysis scores the run as censored instead of dropping it."""
    import json

    from pcbench.allocators import AllocationError
    from pcbench.rundir import STOPPED, RunDir

    v = build_verl_config(paper_cfg("dapo", "train.batch_size=8", "train.mini_batch_size=2", "rollout.n=4"), None)
    kv, folder = InMemoryKV(), RunDir(tmp_path, resumed=False)
    folder.append_metrics({"step": 0, "cumulative_rollouts": 0, "val/acc": 0.1})
    run = AllocationRun(method_config(v.pcbench.method), 8, 0, 6000, kv, folder)
    backend = VerlRolloutBackend(ListDataset(6000), FakeAgentLoopManager(kv, lambda i: 1.0), kv, lambda: 1,
                                 poll_interval_s=0.0)
    with pytest.raises(AllocationError):
        run.sample(1, backend)
    stop = json.loads((tmp_path / STOPPED).read_text())
    assert (stop["reason"], stop["step"]) == ("round_bound", 0) and "10 sampling rounds" in stop["error"]
