"""verl V1 trainer mode `pcbench`: verl's sync PPO step, with pcbench's allocator as the sampler.

Selected by `trainer.v1.trainer_mode=pcbench`; the entry (entry.py) makes verl's TaskRunner
import this module (VERL_USE_EXTERNAL_MODULES) so `@register_trainer` runs there. Departures
from verl's `PPOTrainerSync`, all at named hooks:

- `prepare_step` submits nothing: the allocator decides what is generated.
- the replay buffer's `sample("train")` runs `allocator.next_batch` against
  `VerlRolloutBackend` (per-prompt n, replicas awake: it runs before `on_sample_end`) and
  returns the StepBatch as a KVBatchMeta with one uid per Group; `sample("val")` is verl's.
- `step` closes the ledger after the update (after_update, rollouts/*, alloc/* into verl's
  metrics) and clears rollouts nobody holds from TransferQueue.
- `_compute_metrics` / `_validate` also write the pcbench run folder (metrics.jsonl); `fit`
  ends with pcbench's summary (pcbench.runs.finish).
- checkpoints carry the allocator, stream and ledger (pcbench.pt next to verl's).
Everything else (log-probs, GRPO advantage, PPO update, weight sync, validation) is verl's.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import transfer_queue as tq

from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from pcbench.backends.verl.allocation import AllocationRun, method_config
from pcbench.backends.verl.config import run_details
from pcbench.backends.verl.rollout import VerlRolloutBackend
from pcbench.backends.verl.watchdog import Heartbeat
from pcbench.rundir import RunDir
from pcbench.runs import finish

STATE_FILE = "pcbench.pt"


class AllocatingSampler:
    """verl's replay-buffer interface: `train` from the allocator, `val` from verl's own buffer."""

    def __init__(self, trainer: "PcbenchTrainer", inner):
        self.trainer, self.inner = trainer, inner

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        if partition_id != "train":
            return self.inner.sample(global_steps=global_steps, partition_id=partition_id, batch_size=batch_size)
        t = self.trainer
        t.heartbeat.beat(f"generate step {global_steps}")
        return t.alloc_run.sample(global_steps, t.rollout_backend()), {}


@register_trainer("pcbench")
class PcbenchTrainer(PPOTrainerSync):
    kv = tq  # the TransferQueue client module; tests swap in an in-memory stand-in

    # -- setup --------------------------------------------------------------------------------
    def _build_replay_buffer(self):
        return AllocatingSampler(self, super()._build_replay_buffer())

    def _init_dataloader(self):
        super()._init_dataloader()
        self.alloc_run = self._make_alloc_run()

    def _make_alloc_run(self) -> AllocationRun:
        p = self.config.pcbench
        self.heartbeat = Heartbeat(p.get("run_dir"))  # the entry's watchdog reads it (watchdog.py)
        rundir = RunDir(Path(p.run_dir), resumed=bool(p.resumed)) if p.get("run_dir") else None
        return AllocationRun(method_config(p.method), int(p.train_batch), int(p.seed),
                             len(self.train_dataset), self.kv, rundir)

    def rollout_backend(self) -> VerlRolloutBackend:
        if getattr(self, "_rollout_backend", None) is None:
            b = self.config.pcbench.backend
            self._rollout_backend = VerlRolloutBackend(
                self.train_dataset, self.agent_loop_manager, self.kv, lambda: self.global_steps,
                poll_interval_s=float(b.poll_interval_s), max_retries=int(b.max_retries),
                progress=self.heartbeat.beat)
        return self._rollout_backend

    # -- the step -----------------------------------------------------------------------------
    def prepare_step(self) -> dict:
        return {}

    def step(self, metrics: dict, timing_raw: dict):
        batch = super().step(metrics, timing_raw)
        metrics.update(self.alloc_run.finish_step(self.global_steps))
        self._step_metrics = metrics  # the step's line, for the checkpoint taken before it is logged
        return batch

    def _compute_old_log_prob(self, batch, metrics):
        self.heartbeat.beat(f"old log-probs step {self.global_steps}")
        return super()._compute_old_log_prob(batch, metrics)

    def _update_actor(self, batch, metrics):
        self.heartbeat.beat(f"update step {self.global_steps}")
        return super()._update_actor(batch, metrics)

    def on_step_end(self):
        self.heartbeat.beat(f"weight sync step {self.global_steps}")
        super().on_step_end()

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        super()._compute_metrics(batch, metrics, timing_raw, global_steps=global_steps, epoch=epoch)
        self.alloc_run.log(global_steps, metrics, step_s=timing_raw.get("step"))

    def _validate(self):
        self.heartbeat.beat(f"validate step {self.global_steps}")
        out = super()._validate()
        if self.global_steps == 0:  # fit()'s evaluation before training: the step-0 line
            self.alloc_run.log(0, out)
        return out

    def fit(self, agent_loop_manager):
        super().fit(agent_loop_manager)
        if self.global_steps > self.total_training_steps and self.alloc_run.rundir is not None:
            # the entry's lifecycle writes the same summary again; this one is for a run started
            # with verl's own command (the dry run prints it)
            finish(self.alloc_run.rundir, run_details(self.config))
        self.heartbeat.beat("shut down Ray and vLLM")

    # -- checkpoints ----------------------------------------------------------------------------
    def _step_dir(self) -> str:
        return os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")

    def _save_checkpoint(self):
        # written before verl's tracker file, so a checkpoint verl resumes from always has it
        self.heartbeat.beat(f"checkpoint step {self.global_steps}")
        os.makedirs(self._step_dir(), exist_ok=True)
        ar = self.alloc_run
        row = ar.row(self.global_steps, getattr(self, "_step_metrics", {})) if ar.closed(self.global_steps) else None
        torch.save(ar.state_dict(row), os.path.join(self._step_dir(), STATE_FILE))
        super()._save_checkpoint()

    def _load_checkpoint(self):
        super()._load_checkpoint()
        if self.global_steps == 0:  # no checkpoint yet: lines of an attempt that crashed before one go
            if self.alloc_run.rundir is not None:
                self.alloc_run.rundir.truncate_metrics(-1)
        else:
            path = os.path.join(self._step_dir(), STATE_FILE)
            if not os.path.exists(path):
                raise RuntimeError(f"{path} missing: this checkpoint was not written by the pcbench trainer")
            self.alloc_run.load_state_dict(torch.load(path, weights_only=False), self.global_steps)
