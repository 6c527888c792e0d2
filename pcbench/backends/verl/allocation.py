"""pcbench's half of a verl run: allocator, prompt stream, rollout ledger, metrics lines.

The verl trainer (trainer.py) owns the models; this object owns the decisions and the
counting, and is CPU-testable on its own. Per training step:

    kv_batch = run.sample(step, backend)      # allocator.next_batch -> KVBatchMeta, one uid per Group
    ... verl: old log-probs, advantages (grouped by uid), actor update ...
    row = run.finish_step(step)               # after_update, ledger.close_step, TransferQueue GC
    run.log(step, verl_metrics)               # one metrics.jsonl line (pcbench.runs.step_row)
"""

from __future__ import annotations

import time
from typing import Any

from omegaconf import OmegaConf

from pcbench.allocators import AllocContext, build_allocator
from pcbench.backends.verl import metrics as M
from pcbench.backends.verl.batch import collect_garbage, held_keys, to_training_batch
from pcbench.config import MethodConfig
from pcbench.ledger import RolloutLedger
from pcbench.rundir import RunDir
from pcbench.runs import record_stop, step_row
from pcbench.stream import PromptStream


def method_config(node: Any) -> MethodConfig:
    """The `pcbench.method` section of verl's config as the typed MethodConfig allocators take."""
    data = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else dict(node)
    return MethodConfig(**data)


class AllocationRun:
    def __init__(self, method: MethodConfig, train_batch: int, seed: int, num_prompts: int, kv,
                 rundir: RunDir | None = None):
        self.allocator = build_allocator(method, train_batch, seed)
        self.stream = PromptStream(range(num_prompts), seed)
        self.ledger = RolloutLedger()
        self.kv = kv
        self.rundir = rundir
        self.live: set[str] = set()  # TransferQueue keys generated and not yet cleared
        self._trained: set[str] = set()
        self._stats: dict[str, float] = {}
        self._closed: dict[str, Any] = {}  # the last finish_step: its step, epoch, ledger row, alloc/* counters
        self._last_logged = -1
        self._elapsed_before = 0.0  # seconds of earlier sessions (resume)
        self._t0 = time.monotonic()

    # -- one step ------------------------------------------------------------------------------
    def sample(self, step: int, backend) -> Any:
        """Run the allocator for `step`; every rollout it asks for goes through AllocContext.generate."""
        recorder = _Recorder(backend)
        before = getattr(backend, "generated", 0)
        try:
            batch = self.allocator.next_batch(AllocContext(self.stream, recorder, self.ledger, step))
        except Exception as e:  # in verl's process: the entry only sees its exit code
            if self.rundir is not None:
                record_stop(self.rundir, e)
            raise
        self.live |= recorder.keys
        self._trained = {k for g in batch.groups for p in g.parts for k in p.payload.keys}
        self._stats = {**batch.stats, "alloc/retried_groups": getattr(backend, "retried", 0)}
        if hasattr(backend, "generated"):  # verl's count of this step's sequences (rollout.py), vs rollouts/step
            self._stats["verl/generated_sequences"] = backend.generated - before
        return to_training_batch(batch.groups, self.kv)

    def finish_step(self, step: int) -> dict[str, Any]:
        """After the update: allocator bookkeeping, the step's ledger row, and TransferQueue GC."""
        post = self.allocator.after_update(step, self.ledger)
        state = self.allocator.state_dict()
        cleared = collect_garbage(self.kv, self.live, self._trained, state)
        self.live = held_keys(state)  # trained rows are cleared by verl's fit loop after logging
        self._closed = {"step": int(step), "epoch": self.stream.epoch, "ledger": self.ledger.close_step(),
                        "alloc": {**self._stats, **post, "alloc/tq_cleared": cleared}}
        return {**self._closed["ledger"], **self._closed["alloc"], "epoch": self._closed["epoch"]}

    # -- run folder ---------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._t0

    def log(self, step: int, verl_metrics: dict[str, Any], step_s: float | None = None) -> dict | None:
        """Append the metrics.jsonl line of `step` (step 0: the evaluation before training)."""
        if self.rundir is None or step <= self._last_logged:
            return None
        row = self.row(step, verl_metrics, step_s)
        self.rundir.append_metrics(row)
        self._last_logged = int(step)
        return row

    def closed(self, step: int) -> bool:
        """Whether finish_step(step) ran, i.e. the step's metrics line can be built."""
        return self._closed.get("step") == int(step)

    def row(self, step: int, verl_metrics: dict[str, Any], step_s: float | None = None) -> dict[str, Any]:
        """The step's metrics.jsonl line (pcbench.runs.step_row); step 0: the evaluation before training."""
        evals = M.val_row(verl_metrics)
        if step == 0:
            return step_row(0, epoch=self.stream.epoch, elapsed_s=self.elapsed(), evals=evals)
        if not self.closed(step):
            raise RuntimeError(f"metrics line of step {step} asked before finish_step({step})")
        c = self._closed
        return step_row(step, epoch=c["epoch"], elapsed_s=self.elapsed(), ledger=c["ledger"], alloc=c["alloc"],
                        train=M.train_row(verl_metrics), step_s=step_s, evals=evals)

    # -- checkpoint -----------------------------------------------------------------------------
    def state_dict(self, row: dict | None = None) -> dict:
        """`row`: the checkpoint step's metrics line as far as it is known. verl saves a checkpoint
        before the step's metrics are logged; a run killed in between gets the line from here."""
        return {"allocator": self.allocator.state_dict(), "stream": self.stream.state_dict(),
                "ledger": self.ledger.state_dict(), "elapsed_s": self.elapsed(), "live": sorted(self.live),
                "row": row}

    def load_state_dict(self, state: dict, step: int) -> None:
        self.allocator.load_state_dict(state["allocator"])
        self.stream.load_state_dict(state["stream"])
        self.ledger.load_state_dict(state["ledger"])
        self.live = set(state["live"])
        drop_unheld(self.kv, self.live)
        self._elapsed_before, self._t0 = float(state["elapsed_s"]), time.monotonic()
        if self.rundir is not None:
            rows = self.rundir.truncate_metrics(step)
            if state.get("row") and not any(int(r["step"]) == step for r in rows):
                self.rundir.append_metrics(state["row"])  # killed between checkpoint and metrics line
        self._last_logged = step


def drop_unheld(kv, live: set[str]) -> int:
    """After a resume: clear `train` rows no one holds (verl's TransferQueue checkpoint is taken
    before the fit loop clears the step's trained batch, so that batch comes back with it)."""
    from pcbench.backends.verl.rollout import PARTITION

    listing = (kv.kv_list(partition_id=PARTITION) or {}).get(PARTITION, {})
    stale = [k for k, tag in listing.items() if not tag.get("is_prompt", False) and k not in live]
    if stale:
        kv.kv_clear(keys=stale, partition_id=PARTITION)
    return len(stale)


class _Recorder:
    """Passes generate() through and remembers every TransferQueue key it produced."""

    def __init__(self, backend):
        self.backend = backend
        self.keys: set[str] = set()

    def generate(self, requests):
        outs = self.backend.generate(requests)
        for out in outs:
            self.keys.update(out.payload.keys)
        return outs
