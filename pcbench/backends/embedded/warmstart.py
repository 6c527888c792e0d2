"""Warm start: a short supervised stage so RL starts from a policy with spread pass rates.

A randomly initialised model solves nothing (every group all-wrong, no gradient for any
method). A few hundred SFT steps on demonstrations disjoint from the RL and validation
prompts give easy tiers high pass rates and hard tiers none, as a pretrained base model
would. The checkpoint is cached under paths.cache keyed by everything that determines it,
so the three methods of a sweep (and later sweeps) share one; a file lock keeps parallel
jobs from training it twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from pcbench.backends.embedded.model import build_model, num_parameters
from pcbench.backends.embedded.policy import build_token_batch, response_log_probs
from pcbench.backends.embedded.task import SyntheticTask
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.rundir import atomic_write_json

HIST_EDGES = (0.0, 1e-9, 0.125, 0.375, 0.625, 0.875, 1.0 - 1e-9, 1.0)
HIST_LABELS = ("p=0", "(0,1/8)", "[1/8,3/8)", "[3/8,5/8)", "[5/8,7/8)", "[7/8,1)", "p=1")


def cache_key(cfg) -> str:
    blob = json.dumps({"model": OmegaConf.to_container(cfg.model, resolve=True),
                       "data": OmegaConf.to_container(cfg.data, resolve=True), "v": 2}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def load_or_train(cfg, task: SyntheticTask, tok: CharTokenizer, log=print):
    """-> (model with warm-start weights, report dict)."""
    cache = Path(cfg.paths.cache)
    cache.mkdir(parents=True, exist_ok=True)
    key = cache_key(cfg)
    weights, report_path = cache / f"warmstart-{key}.pt", cache / f"warmstart-{key}.json"
    model = build_model(cfg.model, tok, seed=int(cfg.model.init_seed))
    with open(cache / f"warmstart-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel sweep jobs wait for the first one's checkpoint
        if not weights.exists():
            log(f"warm start: training {num_parameters(model):,}-parameter model for "
                f"{cfg.model.warmstart.steps} SFT steps (cached as {weights})")
            t0 = time.perf_counter()
            # One thread, whatever train.threads says: the default warm start sits on a sharp
            # transition (add33 16% -> 73% between SFT steps 2,200 and 2,300), and float sums
            # differ with the thread count; trained at torch's default 2 threads it came out
            # with p=1 on 73% of prompts and DAPO could not fill a batch.
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                sft(model, task, tok, cfg.model.warmstart)
                report = pass_rate_report(model, task, tok, cfg)
            finally:
                torch.set_num_threads(threads)
            report["sft_seconds"] = round(time.perf_counter() - t0, 1)
            tmp = weights.with_suffix(".pt.tmp")
            torch.save(model.state_dict(), tmp)
            os.replace(tmp, weights)
            atomic_write_json(report_path, report)
    model.load_state_dict(torch.load(weights, weights_only=True))
    report = json.loads(report_path.read_text())
    log("warm start pass-rate histogram over training prompts: "
        + ", ".join(f"{k} {v:.0%}" for k, v in report["histogram"].items()))
    return model, report


def sft(model, task: SyntheticTask, tok: CharTokenizer, ws) -> None:
    g = np.random.default_rng(int(ws.seed))
    opt = torch.optim.AdamW(model.parameters(), lr=float(ws.lr), weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    model.train()
    for _ in range(int(ws.steps)):
        idx = g.choice(len(task.sft), size=int(ws.batch_size), replace=False)
        probs = [task.sft[i] for i in idx]
        b = build_token_batch([[tok.bos_id] + tok.encode(p.prompt) for p in probs],
                              [tok.encode(p.solution) + [tok.eos_id] for p in probs], tok.pad_id)
        loss = -(response_log_probs(model, b).sum() / b.resp_mask.sum())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    model.eval()


@torch.no_grad()
def pass_rate_report(model, task: SyntheticTask, tok: CharTokenizer, cfg, n_prompts: int = 256) -> dict:
    """Per-prompt pass rate over a sample of RL training prompts, n rollouts each, at rollout settings."""
    from pcbench.allocators.base import Request
    from pcbench.backends.embedded.generation import EmbeddedRollouts

    probs = task.train[:n_prompts]
    gen = EmbeddedRollouts(model, tok, {p.pid: p for p in probs}, max_new_tokens=int(cfg.data.max_response_tokens),
                           temperature=float(cfg.train.temperature), top_p=float(cfg.train.top_p),
                           generator=torch.Generator().manual_seed(0))
    n = int(cfg.rollout.n)
    rates = np.array([float(r.acc.mean()) for r in gen.generate([Request(p.pid, n, "plain") for p in probs])])
    counts = np.histogram(rates, bins=HIST_EDGES)[0]
    tiers = sorted({p.tier for p in probs})
    return {"n_prompts": len(probs), "n_rollouts": n,
            "histogram": {lab: float(c) / len(rates) for lab, c in zip(HIST_LABELS, counts)},
            "mean_pass_rate": float(rates.mean()),
            "per_tier": {t: float(np.mean([r for r, p in zip(rates, probs) if p.tier == t])) for t in tiers}}
