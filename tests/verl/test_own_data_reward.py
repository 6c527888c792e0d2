"""A user's own data file and own reward, through real verl on CPU, with no fork of pcbench.

The test writes what a user would: a .jsonl of sums with its own column names, and a package
(a folder with a .dist-info on PYTHONPATH, as `pip install` leaves it) that declares a reward in
the `pcbench.rewards` entry-point group. Then one command, as a user types it:

    python -m pcbench.run backend=verl model=tiny-verl data=own data.source=sums.jsonl \
        data.question=q data.answer=a data.reward=even method=grpo ...

must prepare the file (data.make), train one step and validate, and the reward must be the one
scoring the rollouts: it calls a response right iff the row's answer is even (whatever the model
says), so val/acc equals the share of validation rows with an even answer, exactly (math would give
the model's ~20%), and every call
ran in the process guard's worker (`python -c`), never in verl's reward worker itself.

One bounded launch (~2-3 min of start-up on 2 cores); its process tree is killed afterwards.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.verl.launching import launch

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.verl_cpu, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                 reason="needs vLLM's CPU build: pip install -e '.[test,verl-cpu]' (README)")]
LAUNCH_TIMEOUT_S = 900

REWARD = '''
import os, sys

def score(response, ground_truth, extra_info):
    with open(os.environ["OWN_REWARD_LOG"], "a") as log:
        log.write(f"{sys.argv[0]}\\t{ground_truth}\\t{extra_info.get('split')}\\n")
    return {"acc": int(ground_truth) % 2 == 0, "pred": response[-8:]}
'''


def own_package(site: Path) -> None:
    """A reward package as pip installs it: the module and its entry point in a .dist-info."""
    site.mkdir()
    (site / "own_reward_pkg.py").write_text(REWARD)
    info = site / "own_reward_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: own-reward-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pcbench.rewards]\neven = own_reward_pkg:score\n")


def own_file(path: Path) -> None:
    rows = [{"q": f"What is {a}+{b}?", "a": str(a + b)} for a in range(10) for b in range(10)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_own_jsonl_and_entry_point_reward_train_one_step_on_verl(tmp_path):
    site, data, reward_log, log = tmp_path / "site", tmp_path / "sums.jsonl", tmp_path / "calls.tsv", tmp_path / "log.txt"
    own_package(site)
    own_file(data)
    env = {**__import__("os").environ, "PYTHONPATH": f"{site}:{REPO}", "OWN_REWARD_LOG": str(reward_log)}
    cmd = [sys.executable, "-m", "pcbench.run", "backend=verl", "model=tiny-verl", "data=own",
           f"data.source={data}", "data.question=q", "data.answer=a", "data.reward=even", "data.val_size=16",
           "method=grpo", "train.steps=1", "train.eval_every=1", "train.checkpoint_every=100",
           "backend.platform=cpu", "backend.watchdog_s=420", f"paths.results={tmp_path}/results",
           f"paths.cache={tmp_path}/cache", f"hydra.run.dir={tmp_path}/hydra"]
    assert launch(cmd, log, cwd=REPO, timeout_s=LAUNCH_TIMEOUT_S, env=env) == "exit 0", log.read_text()[-6000:]

    root = tmp_path / "cache" / "own" / "own"  # data.root of conf/data/own.yaml
    val = pd.read_parquet(root / "val.parquet")
    train = pd.read_parquet(root / "train.parquet")
    assert (len(train), len(val)) == (84, 16)
    assert {info["reward"] for info in val["extra_info"]} == {"even"}
    evens = sum(int(rm["ground_truth"]) % 2 == 0 for rm in val["reward_model"])
    assert 0 < evens < len(val)  # the hold-out has both, so val/acc below tells this reward from others
    [run] = [p for p in (tmp_path / "results" / "verl").iterdir() if p.is_dir()]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1], log.read_text()[-4000:]
    for r in rows:  # validation: one sample per row, right iff the row's answer is even
        assert r["val/acc"] == pytest.approx(evens / len(val)), r
    calls = [line.split("\t") for line in reward_log.read_text().splitlines()]
    golds = {str(a + b) for a in range(10) for b in range(10)}
    assert calls and {argv0 for argv0, _, _ in calls} == {"-c"}  # the guard's worker: python -c <boot>
    assert {gold for _, gold, _ in calls} <= golds and {split for _, _, split in calls} == {"train", "test"}
    print(f"own data + reward: {len(calls)} reward calls; val/acc {rows[-1]['val/acc']} = {evens}/{len(val)}")
