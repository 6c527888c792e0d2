"""`python -m pcbench.bench throughput`: tokens/s of the embedded KV-cache sampler
(`pcbench.backends.embedded.sampler.sample`) against transformers' own `model.generate`.

Same model (the warm-start weights the benchmark trains from, or a random init with
--weights random), same left-padded prompts, same temperature / top_p (top_k off in
`generate`, whose default is 50), same max_new_tokens and EOS. Each (batch, sampler) is
warmed up once, then timed `--repeats` times; the median is reported. The samples of both
are scored by the verifier: same distribution, so acc and length must agree within noise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch

from pcbench.bench.provenance import provenance
from pcbench.rundir import atomic_write_json, atomic_write_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", default="64,256,768", help="rollouts per generation call, comma-separated "
                   "(default: a small call, a GRPO step of 16 x 16, a DAPO round of 48 x 16)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch threads (training runs use 1)")
    p.add_argument("--weights", choices=("warmstart", "random"), default="warmstart")
    p.add_argument("--out", type=Path, default=Path("results/bench"))
    p.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE",
                   help="Hydra override for the composed config, e.g. -o model.hidden_size=64")


def _count(row: list[int], eos: int, pad: int) -> list[int]:
    """Generated ids up to and including the first EOS, as the embedded sampler returns them."""
    out = []
    for t in row:
        if t == pad:
            break
        out.append(t)
        if t == eos:
            break
    return out


def _ours(model, prompts, cfg, tok, seed):
    from pcbench.backends.embedded.sampler import sample

    gen = torch.Generator().manual_seed(seed)
    return sample(model, prompts, max_new_tokens=int(cfg.data.max_response_tokens),
                  temperature=float(cfg.train.temperature), top_p=float(cfg.train.top_p),
                  eos_id=tok.eos_id, pad_id=tok.pad_id, generator=gen)


def _hf(model, prompts, cfg, tok, seed):
    from pcbench.backends.embedded.sampler import left_pad

    ids, mask = left_pad(prompts, tok.pad_id)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, top_k=0,
                             temperature=float(cfg.train.temperature), top_p=float(cfg.train.top_p),
                             max_new_tokens=int(cfg.data.max_response_tokens),
                             eos_token_id=tok.eos_id, pad_token_id=tok.pad_id)
    return [_count(row, tok.eos_id, tok.pad_id) for row in out[:, ids.shape[1]:].tolist()]


def measure(fn, model, prompts, answers, cfg, tok, repeats: int) -> dict:
    from pcbench.reward import compute_score

    fn(model, prompts, cfg, tok, 0)  # warm-up: allocator and cache growth, not timed
    times, responses = [], []
    for r in range(repeats):
        t0 = time.perf_counter()
        resp = fn(model, prompts, cfg, tok, 1 + r)
        times.append(time.perf_counter() - t0)
        responses += list(zip(resp, answers))
    seconds = statistics.median(times)
    tokens = sum(len(x) for x, _ in responses) / repeats
    acc = sum(float(compute_score(tok.decode(x), a).acc) for x, a in responses) / len(responses)
    return {"seconds": seconds, "tokens_per_s": tokens / seconds, "acc": acc,
            "mean_length": sum(len(x) for x, _ in responses) / len(responses), "times": times}


def main(args, argv: list[str]) -> int:
    from pcbench.backends.embedded.model import build_model, num_parameters
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import load_or_train
    from pcbench.bench.launch import compose_cfg
    from pcbench.bench.render import throughput_md

    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    meta = provenance(argv)
    cfg = compose_cfg(args.override)
    tok, task = CharTokenizer(), SyntheticTask.build(cfg.data)
    if args.weights == "warmstart":
        model, _ = load_or_train(cfg, task, tok, log=print)
    else:
        model = build_model(cfg.model, tok, seed=int(cfg.model.init_seed))
    model.eval()
    n, rows = int(cfg.rollout.n), []
    for batch in [int(b) for b in args.batch.split(",")]:
        probs = [task.train[(i // n) % len(task.train)] for i in range(batch)]  # batch/n prompts x n rollouts
        prompts = [[tok.bos_id] + tok.encode(p.prompt) for p in probs]
        answers = [p.answer for p in probs]
        ours = measure(_ours, model, prompts, answers, cfg, tok, args.repeats)
        hf = measure(_hf, model, prompts, answers, cfg, tok, args.repeats)
        ours["vs_generate"] = ours["tokens_per_s"] / hf["tokens_per_s"]
        rows += [{"batch": batch, "sampler": "embedded sample", **ours},
                 {"batch": batch, "sampler": "hf generate", **hf}]
        print(f"batch {batch}: sample {ours['tokens_per_s']:,.0f} tok/s, generate {hf['tokens_per_s']:,.0f} tok/s")
    meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    report = {"provenance": meta, "model": str(cfg.model.name), "parameters": num_parameters(model),
              "weights": "warm-start weights" if args.weights == "warmstart" else "random init",
              "n": n, "threads": args.threads, "temperature": float(cfg.train.temperature),
              "top_p": float(cfg.train.top_p), "max_new_tokens": int(cfg.data.max_response_tokens),
              "repeats": args.repeats, "overrides": args.override, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "throughput.json", report)
    atomic_write_text(args.out / "throughput.md", throughput_md(report))
    print(f"wrote {args.out / 'throughput.md'} and .json")
    return 0
