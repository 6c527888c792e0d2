"""The embedded training loop: allocator -> PPO update -> allocator bookkeeping -> log.

It calls named steps and never looks at the method's name; what differs between GRPO,
DAPO and Pilot-Commit lives in their allocators.
"""

from __future__ import annotations

import json
import time

import numpy as np
import torch
from omegaconf import OmegaConf
from tqdm import tqdm

from pcbench import numerics
from pcbench.allocators import AllocContext, StepBatch, build_allocator
from pcbench.backends.embedded import checkpoint
from pcbench.backends.embedded.evaluate import evaluate
from pcbench.backends.embedded.generation import EmbeddedRollouts
from pcbench.backends.embedded.policy import ppo_update
from pcbench.backends.embedded.prefix import build_shared_batch
from pcbench.backends.embedded.task import SyntheticTask
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.backends.embedded.warmstart import load_or_train
from pcbench.ledger import RolloutLedger
from pcbench.loggers import MetricsLogger
from pcbench.rounds_watch import RoundsWatch
from pcbench.rundir import RunDir, atomic_write_json
from pcbench.runs import Backend, step_row
from pcbench.stream import PromptStream


def record_machine(rundir: RunDir, warmstart: dict, log) -> None:
    """Append where this start's floats come from (CPU, ATen capability, BLAS, the numerics
    fingerprint, the warm start's digest) to the run folder's machine.json, one entry per start
    or resume; say in one line when this machine's arithmetic differs from the reference one."""
    desc = {**numerics.describe(), "warmstart_digest": warmstart.get("digest"),
            "warmstart_sft_steps": warmstart.get("sft_steps"), "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    warning = numerics.mismatch(desc)
    if warning:
        log(warning)
    path = rundir.path / "machine.json"
    starts = json.loads(path.read_text()) if path.exists() else []
    atomic_write_json(path, [*starts, desc])


class EmbeddedRun:
    """Everything one run holds; checkpoint.py saves and restores exactly these fields."""

    def __init__(self, cfg, rundir: RunDir, log=tqdm.write):
        self.cfg, self.rundir, self.log = cfg, rundir, log
        if int(cfg.train.threads) > 0:
            torch.set_num_threads(int(cfg.train.threads))
        self.tok = CharTokenizer()
        self.task = SyntheticTask.for_run(cfg)
        self.model, self.warmstart = load_or_train(cfg, self.task, self.tok, log=log)
        record_machine(rundir, self.warmstart, log)
        t = cfg.train
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=float(t.lr), weight_decay=float(t.weight_decay))
        warm = max(1, int(t.warmup_steps))
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: min(1.0, (s + 1) / warm))
        self.allocator = build_allocator(cfg.method, int(t.batch_size), int(cfg.seed))
        self.stream = PromptStream([p.pid for p in self.task.train], int(cfg.seed))
        self.ledger = RolloutLedger()
        self.generator = torch.Generator().manual_seed(int(cfg.seed))
        self.rollouts = EmbeddedRollouts(self.model, self.tok, self.task.by_id(), generator=self.generator,
                                         max_new_tokens=int(cfg.data.max_response_tokens),
                                         temperature=float(t.temperature), top_p=float(t.top_p))
        self.step, self.elapsed = 0, 0.0

    # -- one step ---------------------------------------------------------------------------
    def train_step(self) -> dict:
        t0 = time.perf_counter()
        self.step += 1
        self.rollouts.reset_counters()
        batch = self.allocator.next_batch(AllocContext(self.stream, self.rollouts, self.ledger, self.step))
        gen_s, tokens = self.rollouts.seconds, self.rollouts.tokens
        train = self.update(batch)
        post = self.allocator.after_update(self.step, self.ledger)
        ledger = self.ledger.close_step()
        evals = {}
        if self.step % int(self.cfg.train.eval_every) == 0 or self.step == int(self.cfg.train.steps):
            evals = evaluate(self.model, self.tok, self.task, self.cfg, self.step,
                             cross_check=self.step == int(self.cfg.train.steps))
        step_s = time.perf_counter() - t0
        self.elapsed += step_s
        extra = {"time/generate_s": gen_s, "perf/gen_tokens_per_s": tokens / gen_s if gen_s > 0 else 0.0,
                 **self.rollouts.reward_stats.snapshot("reward/")}
        return step_row(self.step, epoch=self.stream.epoch, elapsed_s=self.elapsed, ledger=ledger,
                        alloc={**batch.stats, **post}, train=train, step_s=step_s, evals=evals, extra=extra)

    def update(self, batch: StepBatch) -> dict:
        """Flatten groups into rows: (N,) scores and group ids, mini-batches of whole groups."""
        prompts, responses, scores, group = [], [], [], []
        for gi, g in enumerate(batch.groups):
            prompt = self.rollouts.prompt_ids[g.prompt_id]
            for part in g.parts:
                responses.extend(part.payload)
                prompts.extend([prompt] * len(part))
            scores.append(2.0 * g.acc - 1.0)  # verifier score +1 / -1
            group.extend([gi] * g.size)
        group = np.asarray(group)
        per_mb = int(self.cfg.train.mini_batch_size)
        mbs = [np.flatnonzero((group >= s) & (group < s + per_mb)) for s in range(0, len(batch.groups), per_mb)]
        tb = build_shared_batch(prompts, responses, self.tok.pad_id)  # each prompt run once per step
        return ppo_update(self.model, self.optimizer, self.scheduler, tb, torch.tensor(np.concatenate(scores)),
                          group, mbs, self.cfg.train, int(self.cfg.method.n))


class EmbeddedBackend(Backend):
    """`backend.entry` of backend=embedded (conf/backend/embedded.yaml): trains in this process."""

    def describe(self, cfg, path):
        return ["# resolved config:", OmegaConf.to_yaml(cfg, resolve=True).rstrip()]

    def train(self, cfg, run: RunDir) -> dict:
        logger = MetricsLogger(run, cfg)
        r = EmbeddedRun(cfg, run)
        if run.resumed and checkpoint.restore(r):
            r.log(f"resumed {run.path} at step {r.step} ({r.ledger.cumulative:,} rollouts)")
        else:
            run.truncate_metrics(-1)
            logger.log(step_row(0, epoch=0, elapsed_s=0.0, evals=evaluate(r.model, r.tok, r.task, cfg, 0)))
        steps = int(cfg.train.steps)
        bar = tqdm(total=steps, initial=r.step, desc=f"{cfg.method.name} s{cfg.seed}", unit="step",
                   disable=not cfg.logging.progress, dynamic_ncols=True)
        watch = RoundsWatch(cfg.method.get("max_rounds"), steps)
        while r.step < steps:
            row = r.train_step()
            logger.log(row)
            line = watch.see(row)
            if line:
                r.log(line)
            bar.set_postfix_str(f"rollouts={r.ledger.cumulative:,} val/acc={logger.last_val:.3f}", refresh=False)
            bar.update(1)
            if r.step % int(cfg.train.checkpoint_every) == 0 or r.step == steps:
                checkpoint.save(r)
        bar.close()
        logger.close()
        r.log(f"finished {run.path}: val/acc {logger.last_val:.3f} after {r.ledger.cumulative:,} rollouts")
        return {"warmstart": r.warmstart}


# `backend.entry` (conf/backend/embedded.yaml) names this object; the entry string is part of every
# run id (rundir.identity), so it keeps the name it had when it was a function.
run = EmbeddedBackend()
