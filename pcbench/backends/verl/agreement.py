"""Do the two backends compute the same policy from one checkpoint? (docs/verl.md#backend-agreement)

Two checks on an embedded checkpoint and its Hugging Face export (from_embedded.py):

- log-probs: the same token sequences (validation prompts with their gold answer, and with a
  response the embedded sampler drew) scored teacher-forced by the embedded model (transformers,
  eager attention, fp32) and by vLLM's engine (the CPU build verl's rollout runs, fp32,
  `prompt_logprobs`); per-token |difference| must stay under LOGPROB_TOL.
- pass rates: per tier, the fraction of sampled answers the reward accepts, from verl's rollout
  (a `python -m pcbench.run backend=verl` run whose step-0 validation samples each tier's
  problems, vLLM behind verl's agent loop and reward loop) and from the embedded sampler at the
  same temperature / top_p, on the same problems and sample counts; they must agree within
  Z_MAX combined binomial standard errors.

    python -m pcbench.backends.verl.agreement check [OVERRIDES]      # both, on the embedded defaults' export
    python -m pcbench.backends.verl.agreement vllm-logprobs --model DIR --sequences IN.json --out OUT.json

`check` runs both on the export of an embedded config (model=embedded-verl's folders; the default
warm start without overrides) and prints the figures; `vllm-logprobs` is the vLLM half of the
first, run in a process of its own (vLLM starts an engine process, torn down with its group).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

LOGPROB_TOL = 5e-4   # max |log p_vllm - log p_embedded| per token, fp32 on both sides (measured: up to 7.4e-5)
Z_MAX = 3.0          # pass rates: |p_verl - p_embedded| <= Z_MAX * sqrt(se_verl^2 + se_embedded^2)
MIN_SAMPLES = 2000   # sampled answers per tier and backend


# -- log-probs -------------------------------------------------------------------------------------
def scored_sequences(model, tok, problems, seed: int = 0, max_new_tokens: int = 10) -> list[list[int]]:
    """Token ids to score: per problem [bos] + prompt + gold answer + eos, and [bos] + prompt + one
    response the embedded sampler draws at temperature 1 (right or wrong, ended by eos or not)."""
    from pcbench.backends.embedded.sampler import sample

    prompts = [[tok.bos_id] + tok.encode(p.prompt) for p in problems]
    drawn = sample(model, prompts, max_new_tokens=max_new_tokens, temperature=1.0, top_p=1.0, eos_id=tok.eos_id,
                   pad_id=tok.pad_id, generator=torch.Generator().manual_seed(seed))
    gold = [q + tok.encode(p.solution) + [tok.eos_id] for q, p in zip(prompts, problems)]
    return gold + [q + r for q, r in zip(prompts, drawn) if r]


@torch.no_grad()
def embedded_logprobs(model, seqs: list[list[int]], pad_id: int) -> list[np.ndarray]:
    """log p(token t | tokens < t) for t = 1..len-1 of each sequence, by the embedded trainer's own
    scoring (policy.response_log_probs: the first token as the prompt, the rest as the response)."""
    from pcbench.backends.embedded.policy import build_token_batch, response_log_probs

    model.eval()
    b = build_token_batch([s[:1] for s in seqs], [s[1:] for s in seqs], pad_id)
    lp = response_log_probs(model, b)  # (N, T)
    return [lp[i, :len(s) - 1].double().numpy() for i, s in enumerate(seqs)]


def vllm_logprobs(model_dir: str, seqs: list[list[int]]) -> list[np.ndarray]:
    """The same log-probs from vLLM (fp32, eager): `prompt_logprobs` of each whole sequence given
    as token ids. Needs vLLM's CPU build (or a GPU vLLM); call in a process of its own."""
    import os

    os.environ.setdefault("VERL_PLATFORM", "cpu" if not torch.cuda.is_available() else "")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from pcbench.backends.verl.cpu_vllm import patch_vllm_distribution_name, selected

    if selected():
        patch_vllm_distribution_name()  # vLLM detects its CPU platform from this version string
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=model_dir, dtype="float32", enforce_eager=True, max_model_len=max(map(len, seqs)) + 1,
              seed=0, gpu_memory_utilization=0.3, max_num_seqs=256)
    params = SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=1.0)
    outs = llm.generate([TokensPrompt(prompt_token_ids=s) for s in seqs], params, use_tqdm=False)
    result = []
    for s, out in zip(seqs, outs):
        # out.prompt_logprobs[t]: {token id: Logprob} for position t (None at t = 0)
        result.append(np.array([out.prompt_logprobs[t][s[t]].logprob for t in range(1, len(s))], dtype=np.float64))
    return result


def logprob_report(a: list[np.ndarray], b: list[np.ndarray]) -> dict:
    """Per-token and per-sequence (summed) |a - b| of two scorings of the same sequences."""
    tok = np.concatenate([np.abs(x - y) for x, y in zip(a, b)])
    seq = np.array([abs(float(x.sum() - y.sum())) for x, y in zip(a, b)])
    both = np.concatenate(a), np.concatenate(b)
    return {"sequences": len(a), "tokens": int(tok.size), "max_abs_token": float(tok.max()),
            "mean_abs_token": float(tok.mean()), "max_abs_sequence": float(seq.max()),
            "max_abs_prob": float(np.abs(np.exp(both[0]) - np.exp(both[1])).max()),
            "tolerance": LOGPROB_TOL}


# -- pass rates ---------------------------------------------------------------------------------------
def tier_repeats(problems, min_samples: int = MIN_SAMPLES) -> dict[str, tuple[list, int]]:
    """{tier: (its problems, samples per problem)} with at least `min_samples` samples per tier."""
    by_tier: dict[str, list] = {}
    for p in problems:
        by_tier.setdefault(p.tier, []).append(p)
    return {t: (ps, math.ceil(min_samples / len(ps))) for t, ps in sorted(by_tier.items())}


def write_tier_files(sets: dict[str, tuple[list, int]], root: Path) -> list[Path]:
    """root/<tier>.parquet per tier of `sets` (each problem written its number of times, data_source
    = the tier): one verl validation pass then logs val/<tier>/acc over all of them."""
    from pcbench.data.synthetic import verl_rows, write_frames

    return write_frames({t: verl_rows(ps, t, "test", k) for t, (ps, k) in sets.items()}, root)


@torch.no_grad()
def embedded_tier_rates(model, tok, sets: dict[str, tuple[list, int]], *, temperature: float, top_p: float,
                        max_new_tokens: int, seed: int = 0) -> dict[str, dict]:
    """{tier: {acc, n}} from the embedded sampler and reward (EmbeddedRollouts) on `sets`."""
    from pcbench.allocators.base import Request
    from pcbench.backends.embedded.generation import EmbeddedRollouts

    out = {}
    for tier, (probs, k) in sets.items():
        roll = EmbeddedRollouts(model, tok, {p.pid: p for p in probs}, max_new_tokens=max_new_tokens,
                                temperature=temperature, top_p=top_p, generator=torch.Generator().manual_seed(seed))
        accs = np.concatenate([r.acc for r in roll.generate([Request(p.pid, k, "plain") for p in probs])])
        out[tier] = {"acc": float(accs.mean()), "n": int(accs.size)}
    return out


def compare_rates(verl: dict[str, dict], embedded: dict[str, dict]) -> dict[str, dict]:
    """{tier: both rates, the combined binomial SE, z = |difference| / SE, agree (z <= Z_MAX)}."""
    rows = {}
    for tier in sorted(embedded):
        v, e = verl[tier], embedded[tier]
        se = math.sqrt(v["acc"] * (1 - v["acc"]) / v["n"] + e["acc"] * (1 - e["acc"]) / e["n"])
        diff = abs(v["acc"] - e["acc"])
        z = diff / se if se > 0 else (0.0 if diff == 0 else math.inf)
        rows[tier] = {"verl": v["acc"], "embedded": e["acc"], "n_verl": v["n"], "n_embedded": e["n"],
                      "se": se, "z": z, "agree": z <= Z_MAX}
    return rows


def run_bounded(cmd: list[str], log: Path, timeout_s: float) -> int:
    """Run `cmd` in its own session with output to `log`; kill its whole tree after it ends or times out."""
    import os
    import subprocess

    from pcbench.backends.verl.watchdog import kill_tree

    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return 124
    finally:
        kill_tree(proc.pid, {proc.pid})


def log_tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def score_with_vllm(model_dir: str | Path, seqs: list[list[int]], folder: Path, timeout_s: float) -> list[np.ndarray]:
    """vllm_logprobs of `seqs` in a process of its own, bounded (`vllm-logprobs` below): its input,
    output and log are folder/sequences.json, vllm.json, vllm.log. RuntimeError with the log's tail
    when it fails or runs past `timeout_s`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sequences.json").write_text(json.dumps(seqs))
    log = folder / "vllm.log"
    rc = run_bounded([sys.executable, "-m", "pcbench.backends.verl.agreement", "vllm-logprobs", "--model",
                      str(model_dir), "--sequences", str(folder / "sequences.json"), "--out", str(folder / "vllm.json")],
                     log, timeout_s)
    if rc != 0:
        raise RuntimeError(f"vLLM scoring exited with {rc}; see {log}:\n{log_tail(log)}")
    return [np.array(x, dtype=np.float64) for x in json.loads((folder / "vllm.json").read_text())]


def check(overrides: list[str], out: Path, cache: str, timeout_s: float = 1800) -> dict:
    """Both checks on the export of embedded config `overrides` (model=embedded-verl's own folders
    under `cache`): -> {"logprobs": logprob_report, "pass_rates": compare_rates}."""
    from omegaconf import OmegaConf

    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import load_or_train
    from pcbench.backends.verl.from_embedded import compose_embedded, list_override, make_data, make_model
    out.mkdir(parents=True, exist_ok=True)
    folders = Path(cache) / "embedded-verl"
    cfg = OmegaConf.create({"paths": {"cache": cache}, "model": {"embedded": overrides},
                            "data": {"embedded": overrides}})
    model_dir, data_dir = make_model(folders / "model", cfg), make_data(folders / "data", cfg)
    ecfg, tok = compose_embedded(overrides, cache), CharTokenizer()
    task = SyntheticTask.for_run(ecfg)
    model, _ = load_or_train(ecfg, task, tok)
    seqs = scored_sequences(model, tok, task.val[:256])
    vllm = score_with_vllm(model_dir, seqs, out, timeout_s)
    report = {"logprobs": logprob_report(embedded_logprobs(model, seqs, tok.pad_id), vllm)}
    sets = tier_repeats(task.val)
    files = write_tier_files(sets, out / "tiers")
    rc = run_bounded([sys.executable, "-m", "pcbench.run", "backend=verl", "model=embedded-verl", "data=embedded-verl",
                      "method=grpo", "train.steps=1", "train.batch_size=4", "train.mini_batch_size=2",
                      "verl.trainer.test_freq=0", "train.val_top_p=1.0", f"paths.cache={cache}",
                      f"paths.results={out / 'results'}", f"model.path={model_dir}", f"data.root={data_dir}",
                      list_override("model.embedded", overrides), list_override("data.embedded", overrides),
                      f"data.val_files=[{','.join(map(str, files))}]", f"hydra.run.dir={out / 'hydra'}"],
                     out / "verl.log", timeout_s)
    if rc != 0:
        raise RuntimeError(f"the verl run exited with {rc}; see {out / 'verl.log'}:\n{log_tail(out / 'verl.log')}")
    [metrics] = list((out / "results").rglob("metrics.jsonl"))
    step0 = json.loads(metrics.read_text().splitlines()[0])
    verl = {f.stem: {"acc": step0[f"val/{f.stem}/acc"], "n": len(sets[f.stem][0]) * sets[f.stem][1]} for f in files}
    embedded = embedded_tier_rates(model, tok, sets, temperature=1.0, top_p=1.0,
                                   max_new_tokens=int(ecfg.data.max_response_tokens))
    report["pass_rates"] = compare_rates(verl, embedded)
    (out / "agreement.json").write_text(json.dumps(report, indent=1))
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pcbench.backends.verl.agreement", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("vllm-logprobs", help="score token sequences with vLLM (fp32)")
    lp.add_argument("--model", required=True)
    lp.add_argument("--sequences", required=True, help="JSON list of token-id lists")
    lp.add_argument("--out", required=True)
    ck = sub.add_parser("check", help="both checks on an embedded config's export (default: the embedded defaults)")
    ck.add_argument("--out", default="results/agreement", help="folder for the logs, the verl run and agreement.json")
    ck.add_argument("--cache", default="results/.cache", help="paths.cache (the warm start, embedded-verl/)")
    ck.add_argument("overrides", nargs="*", help="embedded config overrides, as model.embedded / data.embedded")
    args = ap.parse_args(argv)
    if args.cmd == "check":
        report = check(args.overrides, Path(args.out), args.cache)
        lp_ = report["logprobs"]
        print(f"log-probs: {lp_['tokens']} tokens of {lp_['sequences']} sequences, max |diff| "
              f"{lp_['max_abs_token']:.2e} (tolerance {LOGPROB_TOL:g}), mean {lp_['mean_abs_token']:.2e}")
        for tier, r in report["pass_rates"].items():
            print(f"pass rate {tier}: verl {r['verl']:.4f} embedded {r['embedded']:.4f} (n {r['n_verl']} each) "
                  f"|diff| = {r['z']:.2f} SE")
        ok = lp_["max_abs_token"] <= LOGPROB_TOL and all(r["agree"] for r in report["pass_rates"].values())
        print("agree" if ok else "DISAGREE")
        return 0 if ok else 1
    seqs = json.loads(Path(args.sequences).read_text())
    scores = vllm_logprobs(args.model, seqs)
    Path(args.out).write_text(json.dumps([s.tolist() for s in scores]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
