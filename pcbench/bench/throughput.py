"""`python -m pcbench.bench throughput`: tokens/s of the embedded KV-cache sampler
(`pcbench.backends.embedded.sampler.sample`) against transformers' own `model.generate`.

Same model (the warm-start weights the benchmark trains from, or a random init with
--weights random), same left-padded prompts, same temperature / top_p (top_k off in
`generate`, whose default is 50), same max_new_tokens and EOS. Each sampler is warmed up
once per batch, then the two are timed alternately `--repeats` times (so load from other
processes on a shared machine falls on both alike); the median is reported. The samples of both
are scored by the verifier, and compared token by token: both draw from torch's multinomial
with the same seed, so equal next-token distributions give identical samples (our sampler
splits calls above 4096 rows into chunks, which reorders the draws: there only acc and
length can agree, within noise).
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
    p.add_argument("--batch", default="64,512,1536", help="rollouts per generation call, comma-separated "
                   "(default: a small call, a GRPO step of 16 x 32, a DAPO round of 48 x 32)")
    p.add_argument("--repeats", type=int, default=7)
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


def _embedded_sample(model, prompts, cfg, tok, seed):
    from pcbench.backends.embedded.sampler import sample

    gen = torch.Generator().manual_seed(seed)
    return sample(model, prompts, max_new_tokens=int(cfg.data.max_response_tokens),
                  temperature=float(cfg.train.temperature), top_p=float(cfg.train.top_p),
                  eos_id=tok.eos_id, pad_id=tok.pad_id, generator=gen)


def _hf_generate(model, prompts, cfg, tok, seed):
    from pcbench.backends.embedded.sampler import left_pad

    ids, mask = left_pad(prompts, tok.pad_id)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, top_k=0,
                             temperature=float(cfg.train.temperature), top_p=float(cfg.train.top_p),
                             max_new_tokens=int(cfg.data.max_response_tokens),
                             eos_token_id=tok.eos_id, pad_token_id=tok.pad_id)
    return [_count(row, tok.eos_id, tok.pad_id) for row in out[:, ids.shape[1]:].tolist()]


def measure(model, prompts, answers, cfg, tok, repeats: int) -> dict[str, dict]:
    """-> {"embedded sample": stats, "hf generate": stats}. The two are timed alternately within
    each repeat, so load from other processes drifts onto both alike."""
    from pcbench.reward import compute_score

    samplers = {"embedded sample": _embedded_sample, "hf generate": _hf_generate}
    for fn in samplers.values():
        fn(model, prompts, cfg, tok, 0)  # warm-up: allocator and cache growth, not timed
    times = {name: [] for name in samplers}
    responses = {name: [] for name in samplers}
    for r in range(repeats):
        for name, fn in samplers.items():
            t0 = time.perf_counter()
            resp = fn(model, prompts, cfg, tok, 1 + r)
            times[name].append(time.perf_counter() - t0)
            responses[name] += list(zip(resp, answers))
    out = {}
    for name in samplers:
        seconds, got = statistics.median(times[name]), responses[name]
        out[name] = {"seconds": seconds, "tokens_per_s": sum(len(x) for x, _ in got) / repeats / seconds,
                     "acc": sum(float(compute_score(tok.decode(x), a).acc) for x, a in got) / len(got),
                     "mean_length": sum(len(x) for x, _ in got) / len(got), "times": times[name]}
    # both seed torch's multinomial stream with the same value: equal distributions => equal tokens
    first = [responses[name][:len(prompts)] for name in samplers]
    same = sum(a == b for (a, _), (b, _) in zip(*first)) / len(prompts)
    for stats in out.values():
        stats["same_tokens"] = same
    return out


def main(args, argv: list[str]) -> int:
    from pcbench.backends.embedded.model import build_model, num_parameters
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import load_or_train
    from pcbench.config import compose_cfg
    from pcbench.reports.throughput import throughput_md

    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    meta = provenance(argv)
    cfg = compose_cfg(args.override)
    tok, task = CharTokenizer(), SyntheticTask.for_run(cfg)
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
        stats = measure(model, prompts, answers, cfg, tok, args.repeats)
        ours, hf = stats["embedded sample"], stats["hf generate"]
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
