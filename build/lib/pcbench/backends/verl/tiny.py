"""The tiny verl model and data (model=tiny-verl data=tiny-verl): the distributed path, offline.

    python -m pcbench.backends.verl.tiny                 # both, into results/.cache/tiny-verl/
    python -m pcbench.backends.verl.tiny --out DIR       # elsewhere (then model.path= / data.root=)

The model is a random-init 2-layer Qwen2 (hidden 64, 2 heads of head_dim 32, 1 KV head: vLLM's
CPU attention refuses head_dim 16) in bf16 with a byte-level BPE tokenizer trained here on the
prompts of the data set, and Qwen's chat markers. The data is `pcbench.data.prepare arith
arith_test` (generated sums). Nothing is downloaded; `python -m pcbench.run backend=verl
model=tiny-verl data=tiny-verl` builds both on first use (conf/model/tiny-verl.yaml `make`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
DATA = ("arith", "arith_test")


def corpus() -> list[str]:
    """The text the tokenizer learns merges from: every prompt and a boxed answer per prompt."""
    from pcbench.data.specs import PROMPT_TEMPLATE, get_spec

    out = []
    for name in DATA:
        frame = get_spec(name).generate()
        for q, a in zip(frame["problem"], frame["answer"]):
            out += [PROMPT_TEMPLATE.format(question=q), f"The answer is \\boxed{{{a}}}."]
    return out


def make_model(path: str | Path, max_position_embeddings: int = 512) -> Path:
    """Write the model + tokenizer to `path` (a HF folder) unless it is there already."""
    path = Path(path)
    if (path / "config.json").exists() and (path / "tokenizer.json").exists():
        return path
    print(f"pcbench: building the tiny verl model into {path} (tokenizer + ~1 min of warm-start SFT, once)",
          flush=True)
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus(), vocab_size=512, min_frequency=1, special_tokens=SPECIAL, show_progress=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHAT
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=max_position_embeddings,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
                      tie_word_embeddings=True, torch_dtype="bfloat16")
    model = warm_start(Qwen2ForCausalLM(cfg), tok)
    tmp = path.with_name(path.name + ".tmp")
    model.to(torch.bfloat16).save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.replace(path)  # complete or absent: a crash never leaves half a model under the real name
    return path


def warm_start(model, tok, steps: int = 700, batch: int = 32, lr: float = 3e-3, seed: int = 0):
    """Half a minute of SFT on "The answer is \\boxed{a+b}." so the random model answers in the
    reward's format and is right sometimes: groups then mix right and wrong rollouts, and DAPO's
    filter and Pilot-Commit's band have something to keep (a random model scores -1 everywhere)."""
    import torch

    from pcbench.data.specs import PROMPT_TEMPLATE, get_spec

    frame = get_spec("arith").generate()
    seqs = []
    for q, a in zip(frame["problem"], frame["answer"]):
        prompt = tok.apply_chat_template([{"role": "user", "content": PROMPT_TEMPLATE.format(question=q)}],
                                         add_generation_prompt=True, tokenize=False)
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        r_ids = tok(f"The answer is \\boxed{{{a}}}.<|im_end|>", add_special_tokens=False)["input_ids"]
        seqs.append((p_ids + r_ids, len(p_ids)))
    width = max(len(ids) for ids, _ in seqs)
    ids = torch.full((len(seqs), width), tok.pad_token_id)
    labels = torch.full((len(seqs), width), -100)  # (rows, width): loss on the response only
    for i, (x, n_prompt) in enumerate(seqs):
        ids[i, :len(x)] = torch.tensor(x)
        labels[i, n_prompt:len(x)] = torch.tensor(x[n_prompt:])
    mask = (labels != -100) | (torch.arange(width)[None, :] < torch.tensor([n for _, n in seqs])[:, None])
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        rows = torch.randint(0, len(seqs), (batch,), generator=g)
        loss = model(input_ids=ids[rows], attention_mask=mask[rows].long(), labels=labels[rows]).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model


def make_data(root: str | Path) -> list[Path]:
    """`python -m pcbench.data.prepare arith arith_test --out root`, for the files not there yet."""
    from pcbench.data.prepare import prepare

    root = Path(root)
    return [p if (p := root / f"{n}.parquet").exists() else prepare(n, root) for n in DATA]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pcbench.backends.verl.tiny", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/.cache/tiny-verl", help="folder for model/ and data/")
    args = ap.parse_args(argv)
    print(f"model: {make_model(Path(args.out) / 'model')}")
    for p in make_data(Path(args.out) / "data"):
        print(f"data: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
