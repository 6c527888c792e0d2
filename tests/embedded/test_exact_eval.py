"""`data.val_mode=exact`: a problem's pass rate is the exact probability that one sample at the
validation temperature / top_p writes its gold response. Checked against the sampler itself:
the frequency with which sampling produces exactly the gold tokens must match it, and the
verified (sampled) accuracy may only exceed it. The pool report's card counts these exact rates."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir

from pcbench.backends.embedded.evaluate import evaluate, exact_pass_rates
from pcbench.backends.embedded.sampler import sample
from pcbench.backends.embedded.task import Problem, SyntheticTask
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.backends.embedded.warmstart import load_or_train
from pcbench.config import check_config, register_configs
from pcbench.reward import compute_score

REPO = Path(__file__).resolve().parents[2]
SMALL = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null",
         "model.warmstart.steps=250", "model/warmstart=stop_only", "data.train_size=240", "data.val_size=48", "data.sft_size=1000",
         "data.tiers.add33=0.0", "data.tiers.add44=0.0", "rollout.n=8", "data.ood_size=8"]


def small_model(cache, *overrides):
    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"paths.cache={cache}", *SMALL, *overrides])
    check_config(cfg)
    task, tok = SyntheticTask.for_run(cfg), CharTokenizer()
    torch.set_num_threads(1)
    return cfg, task, tok, load_or_train(cfg, task, tok, log=lambda *_: None)[0]


def test_exact_probability_is_the_frequency_of_the_gold_sample(tmp_path):
    """The small model solves ~1% of sums, so the "gold" answers here are what it said once: each
    problem's answer is the number of one of its own samples (about 2% likely each, spread over
    its digits), which 1,000 samples per problem measure to about 15% per problem and 3% pooled
    (the math does not care which number is right)."""
    cfg, task, tok, model = small_model(tmp_path)
    gen = torch.Generator().manual_seed(0)
    first = sample(model, [[tok.bos_id] + tok.encode(p.prompt) for p in task.val], max_new_tokens=10,
                   temperature=1.0, top_p=0.7, eos_id=tok.eos_id, pad_id=tok.pad_id, generator=gen)
    probs = []
    for p, out in zip(task.val, first):
        m = re.fullmatch(r"\\boxed\{(\d+)\}", tok.decode(out))
        if m and out[-1] == tok.eos_id:
            probs.append(Problem(p.pid, p.prompt, m.group(1), p.tier))
    assert len(probs) >= 24, len(probs)
    probs = probs[:24]
    exact = exact_pass_rates(model, tok, probs, 1.0, 0.7)  # (24,)
    assert 0.01 < exact.mean() < 0.95, exact
    k = 1000
    prompts = [[tok.bos_id] + tok.encode(p.prompt) for p in probs for _ in range(k)]
    out = sample(model, prompts, max_new_tokens=int(cfg.data.max_response_tokens), temperature=1.0, top_p=0.7,
                 eos_id=tok.eos_id, pad_id=tok.pad_id, generator=gen)
    gold = [tok.encode(p.solution) + [tok.eos_id] for p in probs]
    hits = np.array([[out[i * k + j] == gold[i] for j in range(k)] for i in range(len(probs))], dtype=float)
    verified = np.array([[compute_score(tok.decode(out[i * k + j]), p.answer).acc for j in range(k)]
                         for i, p in enumerate(probs)], dtype=float)
    freq = hits.mean(1)  # (24,)
    se = np.sqrt(np.clip(exact * (1 - exact), 1e-4, None) / k)
    assert np.all(np.abs(freq - exact) <= 4 * se), np.c_[freq, exact]  # every problem within 4 SE
    assert abs(freq.mean() - exact.mean()) <= 3 * np.sqrt((exact * (1 - exact)).sum() / k) / len(probs)
    assert verified.sum() >= hits.sum()  # the gold string verifies; other strings may too (counts: means of
    # different shapes round differently, and equal counts are the common case)


def test_exact_evaluation_is_deterministic_and_logs_no_measurement_noise(tmp_path):
    cfg, task, tok, model = small_model(tmp_path, "data.val_mode=exact")
    first, again = evaluate(model, tok, task, cfg, step=2), evaluate(model, tok, task, cfg, step=4)
    assert first == again  # no sampling: the step seed does not matter
    assert first["val/acc_se"] == 0.0 and first["val/acc_se_problems"] > 0
    rates = exact_pass_rates(model, tok, task.val, float(cfg.train.val_temperature), float(cfg.train.val_top_p))
    assert first["val/acc"] == float(rates.mean())
    assert set(first) >= {"val/add22/acc", "ood/add21/acc", "ood/add55/acc"} and "val/acc_sampled" not in first
    last = evaluate(model, tok, task, cfg, step=4, cross_check=True)
    assert last["val/acc"] == first["val/acc"] and 0.0 <= last["val/acc_sampled"] <= 1.0 and last["val/acc_sampled_se"] > 0


def test_the_pool_report_holds_the_exact_card_of_its_prompts(tmp_path):
    """pass_rate_report's "card" (cached in pool-<pool_key>.json, merged into the warm-start report)
    is pool_card of the exact pass rates of the prompts it probes, at the RL sampling settings."""
    from pcbench.pool_card import pool_card

    cfg, task, tok, model = small_model(tmp_path)
    report = load_or_train(cfg, task, tok, log=lambda *_: None)[1]
    probs = task.train[:report["n_prompts"]]  # (240,): the whole small pool
    exact = exact_pass_rates(model, tok, probs, float(cfg.train.temperature), float(cfg.train.top_p))
    card = report["card"]
    assert (card["measure"], card["temperature"], card["top_p"]) == ("exact", 1.0, 1.0)
    want = pool_card(exact, [p.tier for p in probs])
    assert sorted(card["tiers"]) == sorted(want) == ["add22", "all"]
    for t, row in want.items():
        assert card["tiers"][t] == pytest.approx(row, abs=1e-4)
