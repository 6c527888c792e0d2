"""PcbenchTrainer's hooks around verl's step, with verl's GPU-side parents stubbed out: the step
closes the ledger into verl's metrics, metrics reach the run folder, checkpoints carry pcbench.pt."""

import json

from pcbench.backends.verl.config import build_verl_config
from pcbench.rundir import RunDir
from tests.verl.doubles import FakeAgentLoopManager, InMemoryKV, ListDataset

SMALL = ("train.batch_size=8", "train.mini_batch_size=2", "rollout.n=8")


def make_trainer(paper_cfg, tmp_path, monkeypatch, kv):
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    from pcbench.backends.verl.trainer import AllocatingSampler, PcbenchTrainer

    def verl_step(self, metrics, timing_raw):  # verl's step: prepare_step + sample + (GPU work)
        assert self.prepare_step() == {}
        batch, _ = self.replay_buffer.sample(global_steps=self.global_steps, partition_id="train", batch_size=8)
        metrics["actor/pg_loss"] = 0.5
        return batch

    monkeypatch.setattr(PPOTrainerSync, "step", verl_step)
    monkeypatch.setattr(PPOTrainerSync, "_compute_metrics", lambda self, *a, **k: None)
    monkeypatch.setattr(PPOTrainerSync, "_save_checkpoint", lambda self: None)
    monkeypatch.setattr(PPOTrainerSync, "_load_checkpoint", lambda self: None)
    monkeypatch.setattr(PPOTrainerSync, "_validate", lambda self: {"val-core/math500/acc/mean@1": 0.25})
    cfg = paper_cfg("pilot_commit", *SMALL, f"paths.results={tmp_path}")
    rundir = RunDir.prepare(cfg)
    t = object.__new__(PcbenchTrainer)
    t.config = build_verl_config(cfg, run_dir=str(rundir.path))
    t.train_dataset, t.kv, t.global_steps = ListDataset(400), kv, 0
    t.agent_loop_manager = FakeAgentLoopManager(kv, lambda i: [0.25, 0.5, 1.0, 0.0][i % 4])
    t.alloc_run = t._make_alloc_run()
    t.replay_buffer = AllocatingSampler(t, inner=None)
    return t, rundir


def test_step_metrics_run_folder_and_checkpoint(paper_cfg, tmp_path, monkeypatch):
    kv = InMemoryKV()
    t, rundir = make_trainer(paper_cfg, tmp_path, monkeypatch, kv)
    t._validate()  # before training: the step-0 line
    for step in (1, 2):
        t.global_steps = step
        metrics = {}
        batch = t.step(metrics, {})
        assert metrics["rollouts/step"] > 0 and "alloc/buffer_size" in metrics and metrics["actor/pg_loss"] == 0.5
        metrics.update(t._validate() if step == 2 else {})
        t._compute_metrics(batch, metrics, {"step": 3.0}, global_steps=step, epoch=0)
        kv.kv_clear(keys=batch.keys, partition_id="train")
    rows = rundir.read_metrics()
    assert [r["step"] for r in rows] == [0, 1, 2] and rows[2]["val/acc"] == 0.25 and rows[1]["time/step_s"] == 3.0
    assert rows[1]["train/pg_loss"] == 0.5 and rows[2]["cumulative_rollouts"] == t.alloc_run.ledger.cumulative

    t._save_checkpoint()
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(t.alloc_run.ledger.state_dict()))
    t2, _ = make_trainer(paper_cfg, tmp_path, monkeypatch, kv)  # the same run folder, resumed
    t2.global_steps = 2
    t2._load_checkpoint()
    assert t2.alloc_run.ledger.state_dict() == json.loads(saved.read_text())
    assert t2.alloc_run.allocator.buffer.entries.keys() == t.alloc_run.allocator.buffer.entries.keys()
