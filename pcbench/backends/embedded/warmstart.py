"""Warm start: a short supervised stage so RL starts from a policy with spread pass rates.

A randomly initialised model solves nothing (every group all-wrong, no gradient for any
method). A few hundred SFT steps on demonstrations disjoint from the RL and validation
prompts give easy tiers high pass rates and hard tiers none, as a pretrained base model
would. The checkpoint is cached under paths.cache keyed by everything that determines it,
so the three methods of a sweep (and later sweeps) share one; a file lock keeps parallel
jobs from training it twice. The key holds the warm-start settings only (the model, the SFT
data, the probe's sampling settings), never the RL pool's: every pool shape trains from the
same weights. The pass-rate report over a pool's prompts is cached apart, per pool.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from pcbench.backends.embedded.model import build_model, num_parameters
from pcbench.backends.embedded.policy import build_token_batch, response_log_probs
from pcbench.backends.embedded.task import SyntheticTask
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.backends.embedded.warmstart_stages import stages
from pcbench.rundir import atomic_write_json

HIST_EDGES = (0.0, 1e-9, 0.125, 0.375, 0.625, 0.875, 1.0 - 1e-9, 1.0)
HIST_LABELS = ("p=0", "(0,1/8)", "[1/8,3/8)", "[3/8,5/8)", "[5/8,7/8)", "[7/8,1)", "p=1")


# data keys the warm start reads (task.warmstart_problems, the probe's max_response_tokens); every
# other data key shapes the RL pool and must not move the warm start (docs/method.md#embedded-task)
WARMSTART_DATA_KEYS = ("seed", "reverse", "sft_size", "sft_tiers", "warmstart_reserve", "max_response_tokens")


def _digest(blob: dict) -> str:
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:12]


def cache_key(cfg) -> str:
    """The warm start's identity: the model (with its warmstart block), the SFT data, the probe's
    RL sampling settings (train.temperature / top_p), and the arithmetic that trains it (the numerics
    fingerprint: a cache from before a numerics change, or from another machine's floats on a shared
    disk, is not reused as if it were this one's)."""
    from pcbench import numerics

    data = OmegaConf.to_container(cfg.data, resolve=True)
    return _digest({"model": OmegaConf.to_container(cfg.model, resolve=True),
                    "data": {k: data.get(k) for k in WARMSTART_DATA_KEYS},
                    "sampling": [float(cfg.train.temperature), float(cfg.train.top_p)],
                    "numerics": numerics.fingerprint(), "v": 3})


def pool_key(cfg) -> str:
    """The identity of a pass-rate report: the warm start, the whole data config, the group size,
    and the report's version (v2 added the exact card: a v1 file lacks it, so it is not reused)."""
    return _digest({"warmstart": cache_key(cfg), "data": OmegaConf.to_container(cfg.data, resolve=True),
                    "n": int(cfg.rollout.n), "v": 2})


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
            ws = cfg.model.warmstart
            until = (f", stopping once {ws.stop_tier} passes at {float(ws.stop_pass_rate):.0%}"
                     if ws.get("stop_tier") else "")
            cons = ws.get("consolidate") or {}
            if stage_steps(ws, "consolidate"):
                until += f", then {int(cons.steps):,} consolidation steps on {', '.join(cons.tiers)}"
                if stage_steps(ws, "top_up") and ws.get("stop_tier"):
                    until += f", then back to {ws.stop_tier} at {float(ws.stop_pass_rate):.0%}"
            pre = ws.get("prelude") or {}
            first = (f"{int(pre.steps):,} prelude steps on {', '.join(pre.tiers)}, then "
                     if stage_steps(ws, "prelude") else "")
            log(f"warm start: training {num_parameters(model):,}-parameter model for {first}up to "
                f"{ws.steps} SFT steps{until} (cached as {weights})")
            report = train_warm_start(model, task, tok, cfg, log)
            tmp = weights.with_suffix(".pt.tmp")
            torch.save(model.state_dict(), tmp)
            os.replace(tmp, weights)
            atomic_write_json(report_path, report)
    model.load_state_dict(torch.load(weights, weights_only=True))
    report = {**json.loads(report_path.read_text()), "digest": weights_digest(model),
              **pool_report(model, task, tok, cfg, cache)}
    log(f"warm start ({stages(report)}) pass-rate histogram over training prompts: "
        + ", ".join(f"{k} {v:.0%}" for k, v in report["histogram"].items()))
    return model, report


def train_warm_start(model, task: SyntheticTask, tok: CharTokenizer, cfg, log=print) -> dict:
    """SFT `model` in place: the prelude, the mixed SFT up to the competence stop, consolidation and
    top-up (each but the SFT off unless configured); -> its report."""
    t0 = time.perf_counter()
    # One thread, whatever train.threads says: float sums differ with the thread count, and
    # near add33's transition that moved a fixed-step warm start from p=1 on 7% of prompts to
    # 73% (the competence stop makes this matter less; one thread keeps it bit-reproducible).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ws = cfg.model.warmstart
    bar = _progress(cfg)
    try:
        probe = competence_probe(model, task, tok, cfg)
        tick = bar.ticker(probe)
        bar.stage("prelude")
        first = prelude(model, task, tok, ws, tick)
        bar.stage("SFT")
        sft_steps = sft(model, task, tok, ws, probe, tick)
        bar.stage("consolidation", skipped=int(ws.steps) - sft_steps)
        consolidated = consolidate(model, task, tok, ws, tick)
        bar.stage("top-up")
        topped = top_up(model, task, tok, ws, probe, sft_steps + consolidated, tick)
    finally:
        bar.close()
        torch.set_num_threads(threads)
    report = {"sft_steps": sft_steps, "consolidation_steps": consolidated, "top_up_steps": topped}
    if first:
        report["prelude_steps"] = first
    if probe is not None:
        report["stop"] = probe.record
        if probe.record["reached_at"] is None:
            log(f"warning: warm start: {probe.tier} never passed at {probe.rate:.0%} within "
                f"{sft_steps} SFT steps" + (f" and {topped} top-up steps" if topped else "")
                + f" (last probe {probe.record['trace'][-1:]}); raise model.warmstart.steps "
                f"(or model.warmstart.top_up.steps) or lower model.warmstart.stop_pass_rate")
    report["digest"] = weights_digest(model)
    report["sft_seconds"] = round(time.perf_counter() - t0, 1)
    return report


class _Bar:
    """The warm start's progress bar (stderr): one bar over every stage's step budget, the stage and
    the stop tier's last probe read in its postfix; the mixed SFT's unused budget is dropped from the
    total when the stop ends it early. Steps only: it never touches a tensor or a generator."""

    def __init__(self, total: int, enabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc="warm start", unit="step", disable=not enabled, file=sys.stderr,
                        mininterval=1.0, dynamic_ncols=True)

    def stage(self, name: str, skipped: int = 0) -> None:
        if skipped > 0:
            self.bar.total -= skipped
        self.bar.set_description(f"warm start ({name})", refresh=False)

    def ticker(self, probe):
        def tick():
            self.bar.update(1)
            if probe is not None and probe.record["trace"] and self.bar.n % 20 == 0:
                self.bar.set_postfix_str(f"{probe.tier} {probe.record['trace'][-1][1]:.2f}", refresh=False)
        return tick

    def close(self) -> None:
        self.bar.total = self.bar.n  # a stage that stopped early ends the bar at 100%
        self.bar.set_description("warm start", refresh=False)
        self.bar.close()


def stage_steps(ws, name: str) -> int:
    """model.warmstart.<name>.steps of an optional stage (prelude, consolidate, top_up); 0 when off or absent."""
    return int((ws.get(name) or {}).get("steps", 0) or 0)


def _progress(cfg) -> _Bar:
    ws = cfg.model.warmstart
    cons = stage_steps(ws, "consolidate")
    budget = stage_steps(ws, "prelude") + int(ws.steps) + (cons + stage_steps(ws, "top_up") if cons else 0)
    return _Bar(budget, bool(cfg.get("logging", {}).get("progress", True)))


def weights_digest(model) -> str:
    """sha256[:16] of the weights in state_dict order: the warm start's identity (docs/numerics.md)."""
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def _sft_batch(model, tok: CharTokenizer, probs) -> torch.Tensor:
    """Mean token NLL of the demonstrations' responses (solution + EOS) given their prompts."""
    b = build_token_batch([[tok.bos_id] + tok.encode(p.prompt) for p in probs],
                          [tok.encode(p.solution) + [tok.eos_id] for p in probs], tok.pad_id)
    return -(response_log_probs(model, b).sum() / b.resp_mask.sum())


def _train(model, probs, tok, steps: int, batch: int, lr: float, schedule, rng, after=None, tick=None) -> int:
    """`steps` AdamW steps on batches drawn from `probs` without replacement (lr x schedule(step),
    grad norm clipped at 1); `after(step)` returning True stops early; `tick()` after each step
    (the progress bar: it touches no tensor or generator). -> the steps taken."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    model.train()
    step = 0
    for step in range(1, steps + 1):
        idx = rng.choice(len(probs), size=batch, replace=False)
        loss = _sft_batch(model, tok, [probs[i] for i in idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if tick is not None:
            tick()
        if after is not None and after(step):
            break
    model.eval()
    return step


def sft(model, task: SyntheticTask, tok: CharTokenizer, ws, probe=None, tick=None) -> int:
    """Train up to ws.steps SFT steps (50-step warm-up, then constant lr); -> the steps taken
    (fewer when `probe` says stop)."""
    every = int(ws.get("check_every", 0) or 0)
    after = (lambda step: step % every == 0 and probe(step)) if probe is not None and every else None
    return _train(model, task.sft, tok, int(ws.steps), int(ws.batch_size), float(ws.lr),
                  lambda s: min(1.0, (s + 1) / 50), np.random.default_rng(int(ws.seed)), after, tick)


def prelude(model, task: SyntheticTask, tok: CharTokenizer, ws, tick=None) -> int:
    """model.warmstart.prelude: before the mixed SFT, `steps` steps on the demonstrations of `tiers`
    only (the tiers meant to be solved), lr decaying linearly from `lr` to 0. -> the steps taken.

    Why: stopped alone, the mixed SFT catches add33's abrupt transition wherever the other tiers then
    are (add22 0.66-0.91 over 6 warm starts that differ in float noise and SFT order). Training them
    first leaves mostly the stop tier moving when the stop reads it; unlike consolidation after the
    stop, it never drags the stop tier off the level the stop measured. With a slower mixed SFT and
    an exact probe (docs/numerics.md) the pool's band held at 34-39% over 6 warm starts. On by
    default since 2026-12-07 (conf/model/warmstart/prelude.yaml; results/bench/warmstart_spread.md
    measures it).
    """
    return _tier_stage(model, task, tok, ws.get("prelude") or {}, "prelude", np.random.default_rng([int(ws.seed), 2]),
                       tick)


def consolidate(model, task: SyntheticTask, tok: CharTokenizer, ws, tick=None) -> int:
    """model.warmstart.consolidate: after the competence stop, `steps` more SFT steps on the
    demonstrations of `tiers` only, lr decaying linearly from `lr` to 0. -> the steps taken.

    Why: the stop lands at add33's abrupt transition, and where on the way the other tiers are
    then depends on float noise (two CPUs: 1,240 vs 2,220 SFT steps, p=1 on 7% vs 19% of the
    pool). Training the tiers meant to be solved to convergence with a vanishing step makes them
    solved (p >= 0.99 at T 1.0) whatever the stop step, but moves the band tier, mostly down
    (add33 0.37-0.47 -> 0.11-0.41 over 5 SFT orders): top_up brings it back. Off by default
    (model/warmstart=three_stage; conf/model/warmstart/three_stage.yaml says why;
    results/bench/warmstart_spread.md measures it).
    """
    return _tier_stage(model, task, tok, ws.get("consolidate") or {}, "consolidate",
                       np.random.default_rng([int(ws.seed), 1]), tick)


def _tier_stage(model, task: SyntheticTask, tok: CharTokenizer, c, name: str, rng, tick=None) -> int:
    """`c.steps` AdamW steps on the demonstrations of `c.tiers` only, lr decaying linearly from `c.lr` to 0."""
    steps = int(c.get("steps", 0) or 0)
    if not steps:
        return 0
    tiers = set(c.tiers)
    probs = [p for p in task.sft if p.tier in tiers]
    if len(probs) < int(c.batch_size):
        raise ValueError(f"model.warmstart.{name}.tiers={sorted(tiers)}: {len(probs)} demonstrations, fewer "
                         f"than batch_size={c.batch_size}; name tiers of data.sft_tiers")
    return _train(model, probs, tok, steps, int(c.batch_size), float(c.lr), lambda s: max(0.0, 1.0 - s / steps), rng,
                  tick=tick)


def top_up(model, task: SyntheticTask, tok: CharTokenizer, ws, probe, offset: int, tick=None) -> int:
    """model.warmstart.top_up: after consolidation, the mixed SFT again at a small constant lr, the
    probe read exactly every step, until the stop tier passes at stop_pass_rate again (at most
    `steps`). -> the steps taken (0 when consolidation left it there).

    Why: consolidation moves the band tier off the stop's level (add33 0.37-0.47 -> 0.11-0.41 over
    5 SFT orders), mostly down; a few mixed steps bring it back (5 steps at 3e-4 overshot to 0.75,
    so the step is small and the probe reads every step: 9-36 steps at 3e-5). The solved tiers
    pay for it on some orders (pool solved share 0.27 -> 0.27 on two, 0.24 -> 0.13 on the worst;
    results/bench/warmstart_spread.md). `offset` numbers the probe's trace after the earlier stages.
    """
    t = ws.get("top_up") or {}
    steps = stage_steps(ws, "top_up")
    if not steps or probe is None or probe.record["reached_at"] is None or offset == probe.record["reached_at"]:
        return 0  # off, no stop, the stop never reached, or nothing ran since it
    probe.measure = probe.record["top_up_measure"] = "exact"  # no sampling noise between reads a small step apart
    if probe(offset):
        return 0
    probe.record["reached_at"] = None
    return _train(model, task.sft, tok, steps, int(ws.batch_size), float(t.lr), lambda s: 1.0,
                  np.random.default_rng([int(ws.seed), 3]), lambda s: probe(offset + s), tick)


class CompetenceProbe:
    """Stop the warm start once probe prompts of one tier are solved at a given rate.

    Why: learning a tier is abrupt (the default's add33 went 16% -> 73% between SFT steps 2,200
    and 2,300), so a fixed step count lands anywhere on that edge when float sums change (the
    thread count did it). Stopping at a measured pass rate lands at the same competence.
    `measure: exact` (the default) reads the exact probability of each probe prompt's gold
    response at the RL sampling settings (one forward pass, no sampling noise: evaluate.py);
    `sampled` draws `n` rollouts per prompt from a generator seeded per check (before 2026-12).
    """

    def __init__(self, model, probs, tok, cfg, tier: str, rate: float, n: int = 8, measure: str = "sampled"):
        self.model, self.probs, self.tok, self.cfg = model, probs, tok, cfg
        self.tier, self.rate, self.n, self.measure = tier, rate, n, measure
        self.record: dict = {"tier": tier, "pass_rate": rate, "measure": measure, "prompts": len(probs),
                             "reached_at": None, "trace": []}

    def __call__(self, step: int) -> bool:
        self.model.eval()
        if self.measure == "exact":
            from pcbench.backends.embedded.evaluate import exact_pass_rates

            acc = float(exact_pass_rates(self.model, self.tok, self.probs, float(self.cfg.train.temperature),
                                         float(self.cfg.train.top_p)).mean())
        else:
            acc = float(pass_rates(self.model, self.tok, self.probs, self.cfg, self.n, seed=step).mean())
        self.model.train()
        self.record["trace"].append([step, round(acc, 4)])
        if acc >= self.rate:
            self.record["reached_at"] = step
            return True
        return False


def competence_probe(model, task: SyntheticTask, tok: CharTokenizer, cfg) -> CompetenceProbe | None:
    ws = cfg.model.warmstart
    tier = ws.get("stop_tier")
    if not tier:
        return None
    if not task.probe or any(p.tier != tier for p in task.probe):  # a task built without for_run(cfg)
        raise ValueError(f"model.warmstart.stop_tier={tier}: the task has no probe prompts of that tier; "
                         f"build it with SyntheticTask.for_run(cfg)")
    return CompetenceProbe(model, task.probe, tok, cfg, str(tier), float(ws.stop_pass_rate),
                           measure=str(ws.get("stop_measure", "sampled")))


@torch.no_grad()
def pass_rates(model, tok: CharTokenizer, probs, cfg, n: int, seed: int) -> np.ndarray:
    """(len(probs),) fraction of n rollouts per prompt that the verifier accepts, sampled at the
    RL settings (train.temperature / top_p) from a generator seeded with `seed`."""
    from pcbench.allocators.base import Request
    from pcbench.backends.embedded.generation import EmbeddedRollouts

    gen = EmbeddedRollouts(model, tok, {p.pid: p for p in probs}, max_new_tokens=int(cfg.data.max_response_tokens),
                           temperature=float(cfg.train.temperature), top_p=float(cfg.train.top_p),
                           generator=torch.Generator().manual_seed(seed))
    return np.array([float(r.acc.mean()) for r in gen.generate([Request(p.pid, n, "plain") for p in probs])])


def pool_report(model, task: SyntheticTask, tok: CharTokenizer, cfg, cache: Path) -> dict:
    """pass_rate_report of this pool after the warm start, cached per pool (pool_key)."""
    path = cache / f"pool-{pool_key(cfg)}.json"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # as the warm start: bit-identical whatever train.threads says
            try:
                atomic_write_json(path, pass_rate_report(model, task, tok, cfg))
            finally:
                torch.set_num_threads(threads)
    return json.loads(path.read_text())


@torch.no_grad()
def pass_rate_report(model, task: SyntheticTask, tok: CharTokenizer, cfg, n_prompts: int = 256) -> dict:
    """Per-prompt pass rate over a sample of RL training prompts, n rollouts each, at rollout settings;
    "card": the same prompts' pool card (pcbench.pool_card) from exact pass rates at the RL
    settings (train.temperature / top_p), which a class share needs (n rollouts cannot tell 0.99 from 1)."""
    from pcbench.pool_card import labelled_card
    from pcbench.backends.embedded.evaluate import exact_pass_rates

    probs = task.train[:n_prompts]
    n = int(cfg.rollout.n)
    rates = pass_rates(model, tok, probs, cfg, n, seed=0)  # (n_prompts,) sampled
    counts = np.histogram(rates, bins=HIST_EDGES)[0]
    tiers = sorted({p.tier for p in probs})
    T, P = float(cfg.train.temperature), float(cfg.train.top_p)
    exact = exact_pass_rates(model, tok, probs, T, P)  # (n_prompts,) no sampling noise
    return {"n_prompts": len(probs), "n_rollouts": n,
            "histogram": {lab: float(c) / len(rates) for lab, c in zip(HIST_LABELS, counts)},
            "mean_pass_rate": float(rates.mean()),
            # the paper's band (1/8 <= p <= 3/4) at this n: the supply a Pilot-Commit pilot could keep
            "in_band": float(np.mean((rates >= 0.125) & (rates <= 0.75))),
            "per_tier": {t: float(np.mean([r for r, p in zip(rates, probs) if p.tier == t])) for t in tiers},
            "card": labelled_card(exact, [p.tier for p in probs], "exact", T, P)}
