"""Task-shape knobs and the warm start they must not move (issue 19 items 1-2).

The RL pool's size, tiers, never-solvable share, validation and OOD sizes (and the
continuum data config) are pool knobs: the warm start's cache key, its SFT demonstrations,
its probe prompts and its trained weights stay bit-identical when any of them changes."""

from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pcbench.backends.embedded.task import CARRIES, SyntheticTask, carries, pool_tiers, sample_problems
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.backends.embedded.warmstart import cache_key, load_or_train, pool_key
from pcbench.config import check_config, register_configs

REPO = Path(__file__).resolve().parents[2]
POOL_KNOBS = [["data.train_size=3000"], ["data.tiers.add33=0.6"], ["data.never_share=0.5"], ["data.val_size=200"],
              ["data.ood_size=64"], ["data=synthetic_continuum"], ["data=synthetic_continuum", "data.never_share=0.4"],
              ["data.val_mode=exact"], ["rollout.n=64"]]
SMALL_WS = ["model.hidden_size=32", "model.intermediate_size=64", "model.warmstart.steps=40", "model/warmstart=stop_only",
            "model.warmstart.check_every=20", "model.warmstart.stop_pass_rate=0.99", "model.warmstart.batch_size=16"]


def cfg_of(*overrides):
    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    check_config(cfg)
    return cfg


def prompts(problems):
    return [p.prompt for p in problems]


@pytest.mark.parametrize("knob", POOL_KNOBS, ids=[" ".join(k) for k in POOL_KNOBS])
def test_pool_knobs_leave_the_warm_start_key_and_data_alone(knob):
    base, changed = cfg_of(), cfg_of(*knob)
    assert cache_key(changed) == cache_key(base)
    a, b = SyntheticTask.for_run(base), SyntheticTask.for_run(changed)
    assert prompts(b.sft) == prompts(a.sft) and prompts(b.probe) == prompts(a.probe)
    assert not set(prompts(b.train) + prompts(b.val)) & set(prompts(b.sft))  # the pool avoids the demonstrations
    if knob != ["data.val_mode=exact"]:
        assert pool_key(changed) != pool_key(base)  # ... while the pool's pass-rate report is its own


def test_pool_knobs_leave_the_warm_start_weights_alone(tmp_path):
    """Trained twice from empty caches under two pool shapes: bit-identical weights."""
    torch.set_num_threads(1)
    weights = []
    for i, knob in enumerate([[], ["data=synthetic_continuum", "data.never_share=0.4", "data.train_size=3000"]]):
        cfg = cfg_of(*SMALL_WS, *knob, f"paths.cache={tmp_path / str(i)}", "rollout.n=4")
        model, report = load_or_train(cfg, SyntheticTask.for_run(cfg), CharTokenizer(), log=lambda *_: None)
        assert report["sft_steps"] == 40 and report["stop"]["reached_at"] is None  # the probe ran, never stopped it
        weights.append(model.state_dict())
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_warm_start_settings_do_move_the_key():
    base = cache_key(cfg_of())
    for knob in (["data.sft_size=4000"], ["data.seed=7"], ["model.warmstart.stop_pass_rate=0.5"],
                 ["data.warmstart_reserve.train_size=1000"]):
        assert cache_key(cfg_of(*knob)) != base, knob


def test_default_pool_is_the_reserve_prompt_for_prompt():
    """So the default task and warm start are the ones every benchmark before the split used."""
    cfg = cfg_of()
    task = SyntheticTask.for_run(cfg)
    add33 = [p for p in task.train if p.tier == "add33"][:int(cfg.model.warmstart.probe_prompts)]
    assert prompts(task.probe) == prompts(add33)
    assert len(task.train) == 2000 and len(task.val) == 512


@pytest.mark.parametrize("tier", sorted(t for t in CARRIES if not t.startswith("add55")))
def test_carry_tiers_carry_exactly_k_times(tier):
    rng = np.random.default_rng(0)
    problems = sample_problems(30, {tier: 1.0}, rng, reverse=True)
    for p in problems:
        a, b = (int(x) for x in p.prompt.rstrip("=").split("+"))
        assert carries(a, b) == CARRIES[tier] and p.answer == str(a + b)[::-1]
    assert carries(47, 35) == 1 and carries(999, 1) == 3 and carries(12, 34) == 0


def test_never_share_reweights_the_never_tier_against_the_rest():
    data = OmegaConf.create({"tiers": {"add22": 0.3, "add33": 0.4, "add44": 0.3}, "never_share": 0.4, "never_tier": "add44"})
    w = pool_tiers(data)
    assert w["add44"] == pytest.approx(0.4) and w["add22"] == pytest.approx(0.6 * 3 / 7) and sum(w.values()) == pytest.approx(1)
    task = SyntheticTask.for_run(cfg_of("data.never_share=0.4"))
    share = np.mean([p.tier == "add44" for p in task.train])
    assert abs(share - 0.4) < 0.04, share
    assert pool_tiers(OmegaConf.create({"tiers": {"add22": 1.0}, "never_share": None})) == {"add22": 1.0}


@pytest.mark.parametrize("tier,digits", [("add31", (3, 1)), ("add42", (4, 2)), ("add53", (5, 3)), ("add65", (6, 5)),
                                         ("sub32", (3, 2)), ("sub33", (3, 3)), ("sub43", (4, 3)), ("sub44", (4, 4))])
def test_finer_ladder_and_sub_skill_tiers_draw_their_operand_lengths(tier, digits):
    """The finer ladder (add<da><db>) and the sub skill (data=synthetic_skills): each operand has exactly
    its digit count, and the reversed answer is the result (a difference > 0) least-significant digit first."""
    op = tier[:3] == "add" and "+" or "-"
    for p in sample_problems(40, {tier: 1.0}, np.random.default_rng(1), reverse=True):
        a, b = p.prompt.rstrip("=").split(op)
        assert (len(a), len(b)) == digits, p
        value = int(a) + int(b) if op == "+" else int(a) - int(b)
        assert value > 0 and p.answer == str(value)[::-1]


def test_skills_pool_draws_both_skills_and_keeps_the_default_tiers_untouched():
    task = SyntheticTask.for_run(cfg_of("data=synthetic_skills"))
    tiers = {p.tier for p in task.train}
    # both skills, and no add22: its weight 0 takes out the tier synthetic.yaml's mapping merges in
    assert tiers == {"add33", "add43", "add44", "sub32", "sub33"} and len(task.train) == 800
    from pcbench.backends.embedded.task import TIERS
    assert TIERS["add21"] == ("+", (10, 99), (0, 9)) and TIERS["add44"] == ("+", (1000, 9999), (1000, 9999))
    assert TIERS["sub22"] == ("-", (10, 99), (10, 99)) and TIERS["add42"] == ("+", (1000, 9999), (10, 99))
