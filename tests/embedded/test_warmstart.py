"""The warm start a user's main job starts from: it stops at a measured competence, and the
default one gives RL all three kinds of prompt (always solved, sometimes, never)."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from pcbench.backends.embedded.task import SyntheticTask
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.backends.embedded.warmstart import load_or_train
from pcbench.config import register_configs
from pcbench.config import check_config

REPO = Path(__file__).resolve().parents[2]

SMALL = ["model.hidden_size=64", "model.intermediate_size=128", "data.train_size=240", "data.val_size=16",
         "data.sft_size=1000", "data.tiers.add33=0.0", "data.tiers.add44=0.0", "rollout.n=8"]


def warm_start(cache, *overrides):
    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"paths.cache={cache}", *overrides])
    check_config(cfg)
    return load_or_train(cfg, SyntheticTask.for_run(cfg), CharTokenizer(), log=lambda *_: None)[1]


def test_warm_start_stops_once_the_tier_passes_at_the_rate(tmp_path):
    report = warm_start(tmp_path, *SMALL, "model.warmstart.steps=400", "model.warmstart.stop_tier=add22",
                        "model.warmstart.stop_pass_rate=0.015", "model.warmstart.check_every=25")
    stop = report["stop"]
    assert stop["reached_at"] == report["sft_steps"] < 400
    assert report["sft_steps"] % 25 == 0
    assert stop["trace"][-1] == [report["sft_steps"], pytest.approx(stop["trace"][-1][1])]
    assert stop["trace"][-1][1] >= 0.015 > max((acc for _, acc in stop["trace"][:-1]), default=0.0)


def test_without_a_stop_tier_every_step_is_taken(tmp_path):
    report = warm_start(tmp_path, *SMALL, "model.warmstart.steps=30", "model.warmstart.stop_tier=null")
    assert report["sft_steps"] == 30 and "stop" not in report


def test_default_warm_start_gives_all_three_kinds_of_prompt(tmp_path):
    """The README's main job: add22 solved, add33 half, add44 never; so GRPO's groups include
    all-correct ones (eviction matters), all-wrong ones (deferral matters) and mixed ones.
    Before the competence stop, a thread-count change moved this warm start past add33's
    transition (p=1 on 73% of prompts) and DAPO failed at step 2."""
    report = warm_start(tmp_path)
    assert report["stop"]["reached_at"] is not None, report["stop"]["trace"][-3:]
    tiers, hist = report["per_tier"], report["histogram"]
    assert tiers["add22"] >= 0.7 and 0.25 <= tiers["add33"] <= 0.6 and tiers["add44"] <= 0.01, tiers
    mixed = 1.0 - hist["p=0"] - hist["p=1"]
    assert hist["p=0"] >= 0.2 and hist["p=1"] >= 0.03 and mixed >= 0.4, hist
