"""GPU only: two real verl training steps per method with a tiny random-init Qwen2 and vLLM.

Runs `python -m pcbench.run backend=verl ...` end to end on one GPU (Ray, FSDP actor, vLLM
replica, TransferQueue, the `pcbench` trainer mode, pcbench's reward) and checks the run
folder: steps 0-2, the ledger of the allocator, val/acc lines. Nothing is downloaded: the
model and a word-level tokenizer are built here. Skipped without CUDA (tests/conftest.py)
or without vLLM.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tiny_model(path: Path) -> Path:
    """A 2-layer Qwen2 with random weights and a byte-level BPE tokenizer trained here (Qwen's kind)."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    corpus = [f"What is {a} + {b} ? Please reason step by step, and put your final answer within \\boxed{{{a + b}}}."
              for a in range(10) for b in range(10)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=400, min_frequency=1, special_tokens=SPECIAL)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHAT
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    Qwen2ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def tiny_data(root: Path) -> dict[str, str]:
    from pcbench.data.prepare import prepare

    rows = [{"problem": f"What is {a} + {b} ?", "answer": str(a + b)} for a in range(10) for b in range(10)]
    root.mkdir(parents=True, exist_ok=True)
    src = root / "arith.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"train": str(prepare("polaris", root, str(src))), "val": str(prepare("math500", root, str(src)))}


@pytest.mark.parametrize("method", ["pilot_commit", "grpo"])
def test_two_verl_steps_on_one_gpu(tmp_path, method):
    pytest.importorskip("vllm")
    model, data = tiny_model(tmp_path / "model"), tiny_data(tmp_path / "data")
    overrides = [
        "backend=verl", "model=qwen2.5-math-1.5b", "data=deepmath", f"method={method}",
        f"model.path={model}", "model.nnodes=1", "model.n_gpus_per_node=1", "model.tensor_parallel=1",
        "model.max_prompt_length=64", "model.max_response_length=32", "model.overlong_enable=false",
        "model.gpu_memory_utilization=0.3", "model.max_num_batched_tokens=1024", "model.max_token_len_per_gpu=1024",
        "model.override_config={attn_implementation:sdpa}",
        f"data.train_files={data['train']}", f"data.val_files=[{data['val']}]",
        "train.batch_size=4", "train.mini_batch_size=2", "rollout.n=8", "train.steps=2", "train.eval_every=2",
        "train.checkpoint_every=2", "method.lower=0.0",  # a random model solves nothing: keep p = 0 pilots
        f"paths.results={tmp_path}/results", f"hydra.run.dir={tmp_path}/hydra", "backend.ray_num_cpus=8",
        "verl.actor_rollout_ref.model.use_remove_padding=false", "verl.actor_rollout_ref.rollout.enforce_eager=true",
        "verl.actor_rollout_ref.actor.use_torch_compile=false", "verl.actor_rollout_ref.rollout.agent.num_workers=1",
        "verl.reward.num_workers=1", "verl.data.dataloader_num_workers=0",
    ]
    out = subprocess.run([sys.executable, "-m", "pcbench.run", *overrides], cwd=REPO, capture_output=True,
                         text=True, timeout=1500)
    (tmp_path / "log.txt").write_text(out.stdout + out.stderr)
    assert out.returncode == 0, (out.stdout + out.stderr)[-6000:]
    [run] = [p for p in (tmp_path / "results" / "verl").iterdir() if p.is_dir()]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert "val/acc" in rows[0] and "val/acc" in rows[2] and "val/math500/acc" in rows[2]
    assert json.loads((run / "summary.json").read_text())["status"] == "finished"
    steps = [r["rollouts/step"] for r in rows[1:]]
    if method == "grpo":
        assert steps == [32, 32]
    elif all(r["alloc/too_easy"] == 0 for r in rows[1:]):  # every pilot kept (lower=0)
        # step 1: 12 x 2 pilots, then 4 x 6 commits + 12 x 2 pilots; step 2: one round from the buffer
        assert steps == [72, 48]
    assert rows[-1]["cumulative_rollouts"] == sum(steps)
    assert (run / "checkpoint" / "global_step_2" / "pcbench.pt").exists()
