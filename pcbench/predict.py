"""Will Pilot-Commit pay off on my data? A prediction before any run, from a probe of the pool.

    python -m pcbench.predict                                   # embedded default, plain text
    python -m pcbench.predict data=synthetic_continuum rollout.n=64 --format md
    python -m pcbench.predict backend=verl model=embedded-verl data=embedded-verl   # through vLLM
    pcbench-predict --prompts 128 --k 16 --pilots 4,8,16 --format json

Composes the same Hydra config as `python -m pcbench.run` (same overrides), loads the start
checkpoint (embedded: the cached warm start, trained once if missing; or --checkpoint FILE),
samples --prompts prompts of the RL pool and draws k rollouts of each at the RL sampling settings
(train.temperature / top_p): each prompt's pass rate, i.e. what a pilot sees. From those pass
rates (pcbench.analysis.mixed_groups_prediction.prerun, the count law of docs/method.md#the-informative-group-law)
it prints per method and pilot size: GRPO's zero-variance share (all-correct / all-wrong),
Pilot-Commit's in-band share and sampling rounds per step, DAPO's rounds, rollouts per step, the
predicted rollouts-to-target ratio to GRPO with a range, and the recommended allocator. Before
them, the probed prompts' pool card (pcbench.pool_card): per tier, the share solved /
near-solved / band / hard / never, by exact pass rate at the RL settings on the embedded backend
(one forward pass per prompt), by the k sampled rollouts on verl (labelled "sampled, k=...").

Pilot-Commit's rounds use the probe's in-band share times the band's supply over a run, and the
ratio is the law's times the factor the committed regime map measured (results/bench/prerun.json:
measured / probed in-band, measured / pre-run law, geometric means over its cells); the range is
the 5-95% bootstrap over the probed prompts widened by the smallest and largest measured /
predicted of those cells.
On the verl backend with model=embedded-verl the probe is k rollouts per prompt through vLLM
(its CPU build on a CPU) on the exported warm start, scored by pcbench's reward: a pilot of verl's
own sampler. Other verl models (Hugging Face checkpoints, parquet pools) are not probed yet. Bad input (no such checkpoint, k < 2, a pool without answers, a config error)
is one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from pcbench.pool_card import CLASS_NOTE, card_caption, card_md, card_text, labelled_card
from pcbench.analysis.supply import SUPPLY_RATES, SupplyPool, SupplyRun, project, thirds, warning
from pcbench.analysis.formats import md_table, percent
from pcbench.analysis.mixed_groups_prediction import PRERUN_CALIBRATION, PRERUN_ERROR, PRERUN_SUPPLY, Setup, prerun
from pcbench.analysis.scoring import percentile_interval, resample_indices

PROBE_N_BOOT = 200  # resamples of the probed prompts: each one runs prerun(), so fewer than scoring.N_BOOT
RANGE_LEVEL = 0.90  # the range's bootstrap part: the 5-95% interval
CHUNK = 16  # prompts per generation call (the progress bar's step)


class InputError(Exception):
    """Bad input: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pcbench-predict", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("overrides", nargs="*", help="Hydra overrides, as for python -m pcbench.run")
    p.add_argument("--prompts", type=int, default=256, help="pool prompts probed (default 256)")
    p.add_argument("--k", type=int, default=None, help="rollouts per probed prompt (default rollout.n)")
    p.add_argument("--pilots", default=None, help="Pilot-Commit pilot sizes, comma-separated (default n/8,n/4,n/2)")
    p.add_argument("--checkpoint", type=Path, default=None, help="a state dict to probe instead of the warm start")
    p.add_argument("--format", choices=("text", "json", "md"), default="text")
    p.add_argument("--seed", type=int, default=0, help="prompt sample and rollouts")
    p.add_argument("--no-progress", action="store_true")
    return p


def _compose(overrides):
    from pcbench.config import compose_cfg
    from pcbench.config import ConfigError, check_config

    try:
        cfg = compose_cfg(overrides)
        check_config(cfg)
    except ConfigError as e:
        raise InputError(f"config error: {e}") from None
    except Exception as e:  # Hydra's own errors (unknown group, bad override): one line
        raise InputError(f"config error: {str(e).splitlines()[0]}") from None
    if cfg.backend.name != "embedded" and cfg.model.name != "embedded-verl":
        raise InputError(f"backend={cfg.backend.name} model={cfg.model.name}: the verl probe runs model=embedded-verl "
                         "only (a Hugging Face model's probe through vLLM is not implemented); use backend=embedded or "
                         "model=embedded-verl data=embedded-verl")
    return cfg


def vllm_worker(spec_path: str, out_path: str) -> int:
    """`python -m pcbench.predict --vllm-worker SPEC OUT`: k sampled responses (token ids) per prompt
    from vLLM (its CPU build here), in a process of its own. SPEC: model_dir, prompts (token ids),
    k, temperature, top_p, max_tokens, eos_id, seed."""
    import torch

    spec = json.loads(Path(spec_path).read_text())
    os.environ.setdefault("VERL_PLATFORM", "cpu" if not torch.cuda.is_available() else "")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from pcbench.backends.verl.cpu_vllm import patch_vllm_distribution_name, selected

    if selected():
        patch_vllm_distribution_name()  # vLLM detects its CPU platform from this version string
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    prompts = spec["prompts"]
    llm = LLM(model=spec["model_dir"], dtype="float32", enforce_eager=True, seed=int(spec["seed"]),
              max_model_len=max(map(len, prompts)) + int(spec["max_tokens"]) + 1, gpu_memory_utilization=0.3, max_num_seqs=256)
    params = SamplingParams(n=int(spec["k"]), temperature=float(spec["temperature"]), top_p=float(spec["top_p"]),
                            max_tokens=int(spec["max_tokens"]), stop_token_ids=[int(spec["eos_id"])], seed=int(spec["seed"]))
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=True)
    Path(out_path).write_text(json.dumps([[list(o.token_ids) for o in out.outputs] for out in outs]))
    return 0


def verl_probe(cfg, probs, tok, k: int, seed: int, timeout_s: float = 1200) -> np.ndarray:
    """Pass rates of `probs` from k rollouts each through vLLM on the export of the embedded warm start
    (model=embedded-verl: the model verl trains), scored by pcbench's reward."""
    import tempfile

    from pcbench.backends.verl.agreement import log_tail, run_bounded
    from pcbench.backends.verl.from_embedded import make_model
    from pcbench.reward import compute_score

    import contextlib

    with contextlib.redirect_stdout(sys.stderr):  # the export's messages: stdout holds the report only
        model_dir = make_model(cfg.model.path, cfg)
    with tempfile.TemporaryDirectory(prefix="pcbench-predict-") as tmp:
        spec, out, log = Path(tmp) / "spec.json", Path(tmp) / "out.json", Path(tmp) / "vllm.log"
        spec.write_text(json.dumps({"model_dir": str(model_dir), "prompts": [[tok.bos_id] + tok.encode(p.prompt) for p in probs],
                                    "k": k, "temperature": float(cfg.train.temperature), "top_p": float(cfg.train.top_p),
                                    "max_tokens": int(cfg.model.max_response_length), "eos_id": tok.eos_id, "seed": seed}))
        rc = run_bounded([sys.executable, "-m", "pcbench.predict", "--vllm-worker", str(spec), str(out)], log, timeout_s)
        if rc != 0:
            raise InputError(f"the vLLM probe exited with {rc}: {log_tail(log, 1)}")
        responses = json.loads(out.read_text())
    rates = []
    for p, resp in zip(probs, responses):
        acc = [float(compute_score(tok.decode([t for t in r if t != tok.eos_id]), p.answer).acc) for r in resp]
        rates.append(float(np.mean(acc)))
    return np.array(rates)


def probe(cfg, prompts: int, k: int, seed: int, checkpoint: Path | None, progress: bool) -> tuple[np.ndarray, dict, dict]:
    """(sampled pass rates of the probed prompts, facts about the probe, their pool card)."""
    import torch

    from pcbench.backends.embedded.evaluate import exact_pass_rates
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import cache_key, load_or_train, pass_rates

    torch.set_num_threads(int(cfg.train.get("threads", 1) or 1))
    verl = cfg.backend.name != "embedded"
    if verl:  # model=embedded-verl: the pool and warm start of its embedded config
        from pcbench.backends.verl.from_embedded import compose_embedded

        ecfg = compose_embedded(list(cfg.model.get("embedded") or []), cfg.paths.cache)
    else:
        ecfg = cfg
    tok, task = CharTokenizer(), SyntheticTask.for_run(ecfg)
    pool = list(task.train)
    if not pool:
        raise InputError("the pool has no prompts")
    missing = sum(1 for p in pool if not str(getattr(p, "answer", "") or "").strip())
    if missing:
        raise InputError(f"the pool has {missing} prompt(s) without an answer: a probe needs a verifiable answer per prompt")
    facts = {}
    T, P = float(cfg.train.temperature), float(cfg.train.top_p)
    if verl and checkpoint is not None:
        raise InputError("--checkpoint: the verl probe reads model.path (model=embedded-verl exports the warm start there)")
    if verl:
        rng = np.random.default_rng(seed)
        probs = [pool[i] for i in sorted(rng.choice(len(pool), size=min(prompts, len(pool)), replace=False))]
        if progress:
            print(f"pcbench-predict: probing {len(probs)} prompts x {k} rollouts through vLLM (its engine starts in "
                  "a minute or two on a CPU)", file=sys.stderr)
        rates = verl_probe(cfg, probs, tok, k, seed)
        # no exact rates through vLLM: the card counts the k-rollout rates, noise and all (a prompt at
        # p = 0.9 reads 1.0, "solved", in 43% of 8-rollout probes)
        card = labelled_card(rates, [p.tier for p in probs], f"sampled, k={k}", T, P)
        return rates, {"checkpoint": f"vLLM on {cfg.model.path}", "prompts": len(probs), "pool": len(pool), "k": k}, card
    if checkpoint is not None:
        from pcbench.backends.embedded.model import build_model

        if not checkpoint.is_file():
            raise InputError(f"no such checkpoint: {checkpoint}")
        model = build_model(cfg.model, tok, seed=int(cfg.model.init_seed))
        try:
            model.load_state_dict(torch.load(checkpoint, map_location="cpu"))
        except Exception as e:
            raise InputError(f"checkpoint {checkpoint} does not fit model={cfg.model.name}: {str(e).splitlines()[0]}") from None
        facts["checkpoint"] = str(checkpoint)
    else:
        cached = (Path(cfg.paths.cache) / f"warmstart-{cache_key(cfg)}.pt").is_file()
        if not cached:
            print("pcbench-predict: the warm start is not cached: training it once (minutes)", file=sys.stderr)
        model, _ = load_or_train(cfg, task, tok, log=lambda *a, **kw: None)
        facts["checkpoint"] = f"warm start {cache_key(cfg)}" + ("" if cached else " (trained now)")
    model.eval()
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(pool), size=min(prompts, len(pool)), replace=False)
    probs = [pool[i] for i in sorted(idx)]
    from tqdm import tqdm

    rates = []
    bar = tqdm(total=len(probs), desc="probing", unit="prompt", disable=not progress, file=sys.stderr)
    for start in range(0, len(probs), CHUNK):
        chunk = probs[start:start + CHUNK]
        rates.append(pass_rates(model, tok, chunk, cfg, k, seed=seed + start))
        bar.update(len(chunk))
    bar.close()
    facts.update(prompts=len(probs), pool=len(pool), k=k)
    card = labelled_card(exact_pass_rates(model, tok, probs, T, P), [p.tier for p in probs], "exact", T, P)
    return np.concatenate(rates), facts, card


def predict(rates: np.ndarray, setup: Setup, pilots: list[int], seed: int = 0, n_boot: int = PROBE_N_BOOT) -> dict:
    """The report: prerun() on the probe, each ratio calibrated, with its range, and a recommendation.
    The range: the percentile bootstrap over the probed prompts (pcbench.analysis.scoring's resampling and
    interval rule, 5-95%) times the map's smallest and largest measured / (law x factor)."""
    point = prerun(rates, setup, pilots=pilots, supply=PRERUN_SUPPLY)
    rows = resample_indices(rates.size, np.random.default_rng(seed), n_boot)
    boots = [prerun(rates[i], setup, pilots=pilots, supply=PRERUN_SUPPLY) for i in rows]

    def ranged(method, law, pick):
        c, (lo, hi) = PRERUN_CALIBRATION[method], PRERUN_ERROR[method]
        b5, b95 = percentile_interval([pick(x) for x in boots], RANGE_LEVEL) if boots else (law, law)
        return {"law": law, "predicted": law * c, "low": b5 * c * lo, "high": b95 * c * hi}

    g = point["grpo"]
    rows = [{"method": "grpo", "pilot": None, "cost": g["cost"], "rounds": 1.0, "zero_variance": g["zero_variance"],
             "all_correct": g["all_correct"], "all_wrong": g["all_wrong"], "predicted": 1.0, "low": 1.0, "high": 1.0, "law": 1.0}]
    d = point["dapo"]
    rows.append({"method": "dapo", "pilot": None, "cost": d["cost"], "rounds": d["rounds"],
                 **ranged("dapo", d["ratio"], lambda x: x["dapo"]["ratio"])})
    for k, rec in point["pilot_commit"].items():
        rows.append({"method": "pilot_commit", "pilot": k, "cost": rec["cost"], "rounds": rec["rounds"], "in_band": rec["in_band"],
                     "in_band_run": rec["in_band_run"], "extrapolated": k != setup.n // 4,
                     **ranged("pilot_commit", rec["ratio"], lambda x, k=k: x["pilot_commit"][k]["ratio"])})
    best = max(rows[1:], key=lambda r: r["predicted"])
    name = "DAPO" if best["method"] == "dapo" else f"Pilot-Commit, pilot {best['pilot']} + {setup.n - best['pilot']}"
    if best.get("extrapolated"):
        name += f" (extrapolated: the map measured pilots of n/4 = {setup.n // 4} only)"
    if best["predicted"] > 1 and best["low"] > 1:
        rec_ = {"method": best["method"], "pilot": best["pilot"],
                "why": f"{name}: predicted {best['predicted']:.2f}x GRPO, its whole range above 1"}
    elif best["predicted"] > 1:
        rec_ = {"method": "grpo", "pilot": None,
                "why": f"GRPO, or {name} (predicted {best['predicted']:.2f}x, but its range "
                       f"[{best['low']:.2f}, {best['high']:.2f}] reaches below 1)"}
    else:
        rec_ = {"method": "grpo", "pilot": None, "why": f"GRPO: no allocator predicted ahead (best: {name}, {best['predicted']:.2f}x)"}
    return {"setup": {"n": setup.n, "batch": setup.batch, "candidates": setup.candidates, "band": [setup.lower, setup.upper],
                      "max_rounds": setup.max_rounds},
            "probe": {"mean_pass_rate": float(rates.mean()), "all_wrong_prompts": float(np.mean(rates == 0)),
                      "all_correct_prompts": float(np.mean(rates == 1))},
            "rows": rows, "recommendation": rec_}


def supply_outlook(rep: dict, card: dict, facts: dict, cfg) -> dict:
    """Pilot-Commit's projected rounds per step by thirds of the horizon and its STARVE / DRAIN
    warning (pcbench.analysis.supply, rates fitted on the committed cells), for the n/4 pilot."""
    n, k = rep["setup"]["n"], rep["setup"]["n"] // 4
    row = next((r for r in rep["rows"] if r["method"] == "pilot_commit" and r["pilot"] == k), None)
    if row is None:
        return {}
    a = card["tiers"]["all"]
    pool = SupplyPool(row["in_band"], a["band"], a["hard"], a["solved"], a["near_solved"], int(facts["pool"]))
    run = SupplyRun(batch=rep["setup"]["batch"], max_rounds=int(cfg.method.get("max_rounds", 10) or 10),
                    steps=int(cfg.train.steps), lr=float(cfg.train.lr))
    p = project(pool, run, SUPPLY_RATES)
    return {"pilot": k, "n": n, "rounds_thirds": thirds(p["rounds"]), "rounds_mean": float(np.mean(p["rounds"])),
            "steps": run.steps, "warning": warning(p, run), "starve_step": p["starve_step"], "drain_step": p["drain_step"]}


def supply_lines(sup: dict) -> list[str]:
    if not sup:
        return []
    t = " / ".join(f"{x:.2f}" for x in sup["rounds_thirds"])
    return [f"Pilot-Commit {sup['pilot']}+{sup['n'] - sup['pilot']} supply over {sup['steps']} steps: rounds per step {t} by thirds "
            f"(mean {sup['rounds_mean']:.2f}; results/bench/predict_supply.md)", sup["warning"] or "no STARVE / DRAIN projected"]


def render(rep: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rep, indent=1, default=float)
    s, p = rep["setup"], rep["probe"]
    head = (f"probe: {rep['facts']['prompts']} of {rep['facts']['pool']} pool prompts x {rep['facts']['k']} rollouts at "
            f"{rep['facts']['checkpoint']} ({rep['facts']['seconds']:.1f} s); mean pass rate {p['mean_pass_rate']:.2f}, "
            f"prompts all-wrong {percent(p['all_wrong_prompts'], 0)}, all-correct {percent(p['all_correct_prompts'], 0)}")
    setup = f"setup: n={s['n']}, batch {s['batch']} prompts, {s['candidates']}x candidates a round, band {s['band']}, max {s['max_rounds']} rounds"
    cols = ["method", "pilot", "GRPO zero-var (correct/wrong)", "PC in-band (probe/run)", "rounds/step", "rollouts/step", "predicted vs GRPO", "range"]
    lines = []
    for r in rep["rows"]:
        zv = f"{percent(r['zero_variance'], 0)} ({percent(r['all_correct'], 0)}/{percent(r['all_wrong'], 0)})" if r["method"] == "grpo" else ""
        pilot = "" if r["pilot"] is None else f"{r['pilot']}+{s['n'] - r['pilot']}" + ("*" if r.get("extrapolated") else "")
        lines.append([r["method"], pilot, zv, f"{percent(r.get('in_band'), 0)}/{percent(r.get('in_band_run'), 0)}" if r["method"] == "pilot_commit" else "",
                      f"{r['rounds']:.2f}", f"{r['cost']:.0f}", f"{r['predicted']:.2f}x",
                      "" if r["method"] == "grpo" else f"[{r['low']:.2f}, {r['high']:.2f}]"])
    rec = f"recommended: {rep['recommendation']['why']}"
    note = ("*: a pilot size no committed map cell measured (the calibration comes from n/4 pilots). "
            f"run in-band = probe x {PRERUN_SUPPLY:.2f} (the band's supply over a run, as measured on the committed regime "
            "map); predicted = the count law's ratio x the factor measured there; range: bootstrap over probed prompts "
            "x the map's smallest..largest measured/predicted (results/bench/prerun.md)")
    card = rep.get("card")
    card_head = f"pool card of the probed prompts ({card_caption(card)}): {CLASS_NOTE}" if card else ""
    if fmt == "md":
        t = md_table(cols, lines)
        pool = [card_head, "", *card_md(card["tiers"]), ""] if card else []
        return "\n".join([f"# pcbench-predict", "", head, "", setup, "", *pool, *t, "", f"**{rec}**", "",
                          *supply_lines(rep.get("supply")), "", note])
    w = [max(len(c), *(len(x[i]) for x in lines)) for i, c in enumerate(cols)]
    fmt_row = lambda x: "  ".join(v.ljust(w[i]) for i, v in enumerate(x)).rstrip()  # noqa: E731
    pool = ["", card_head, *card_text(card["tiers"])] if card else []
    return "\n".join([head, setup, *pool, "", fmt_row(cols), *(fmt_row(x) for x in lines), "", rec,
                      *supply_lines(rep.get("supply")), note])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--vllm-worker"]:
        return vllm_worker(argv[1], argv[2])
    args = build_parser().parse_args(argv)
    t0 = time.time()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        if args.k is not None and args.k < 2:
            raise InputError(f"--k {args.k}: a pass rate needs k >= 2 rollouts per prompt")
        if args.prompts < 1:
            raise InputError(f"--prompts {args.prompts}: probe at least one prompt")
        cfg = _compose(args.overrides)
        n = int(cfg.rollout.n)
        k = int(args.k or n)
        pilots = [int(x) for x in args.pilots.split(",")] if args.pilots else sorted({n // 8, n // 4, n // 2})
        bad = [x for x in pilots if not 2 <= x < n]
        if bad:
            raise InputError(f"--pilots {bad}: a pilot needs 2 <= size < rollout.n={n}")
        rates, facts, card = probe(cfg, args.prompts, k, args.seed, args.checkpoint, progress=not args.no_progress)
    except InputError as e:
        print(f"pcbench-predict: {e}", file=sys.stderr)
        return 2
    rep = predict(rates, Setup(n=n, batch=int(cfg.train.batch_size)), pilots, seed=args.seed)
    rep["supply"] = supply_outlook(rep, card, facts, cfg)
    rep["facts"] = {**facts, "seconds": time.time() - t0}
    rep["card"] = card
    print(render(rep, args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
