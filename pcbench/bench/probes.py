"""`python -m pcbench.bench.probes`: design a task to the paper's regime before registering it (issue 43).

A probe is a short run (a few seeds, 20-30 steps) of GRPO and Pilot-Commit on one task design; it
measures the regime's trajectory, not a speedup: GRPO's zero-variance share (all-correct vs
all-wrong), Pilot-Commit's sampling rounds per step in each third of the horizon and its fresh
pilots' in-band share, the pool epochs Pilot-Commit had drawn when it reached the probe's target
(GRPO's best seed-mean val/acc), and the pool card's near-solved share after the warm start. The
designs, seeds, horizon and criteria live in conf/bench/probes.yaml.

    python -m pcbench.bench.probes scan data=synthetic_skills           # pool card per tier / skill, no training
    python -m pcbench.bench.probes run --designs skills-a,skills-b      # train what is missing, then score
    python -m pcbench.bench.probes score                                # rebuild the table from the run folders

`run` and `score` write results/bench/probes/probes.md, probes.json and probes_curves.csv (one row per
run and step). Probe runs live in --runs (paths.results) under experiment=probes; finished folders
are reused, so `run` resumes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from pcbench import paths
from pcbench.bench.launch import Job, is_scored, launch, plan, run_folder
from pcbench.reports.probes import report_md, table_md

PLAN = paths.CONF_DIR / "bench" / "probes.yaml"
OUT = Path("results/bench/probes")
CURVE_KEYS = {"val/acc": "val_acc", "cumulative_rollouts": "cumulative_rollouts", "rollouts/rounds": "rounds",
              "alloc/groups": "groups", "alloc/groups_all_correct": "all_correct",
              "alloc/groups_all_wrong": "all_wrong", "alloc/sampled/pilot/groups": "pilots",
              "alloc/sampled/pilot/in_band": "pilots_in_band", "alloc/pool_epochs": "pool_epochs"}


def load_plan(path: Path = PLAN) -> dict:
    spec = yaml.safe_load(path.read_text())
    for key in ("methods", "seeds", "common", "criteria", "designs"):
        if key not in spec:
            raise SystemExit(f"probes: {path} has no '{key}'; see conf/bench/probes.yaml")
    return spec


def design_jobs(spec: dict, name: str, extra: list[str]) -> list[Job]:
    design = spec["designs"][name]
    common = [*spec["common"], *design["overrides"], "experiment=probes", *extra]
    return plan(list(spec["methods"]), list(design.get("seeds", spec["seeds"])), common)


# -- scoring: the run folders' metrics.jsonl -> curves -> criteria --------------------------------
def run_curves(folder: Path, design: str, method: str, seed: int) -> pd.DataFrame:
    """One row per logged step of a run (training metrics and its evaluation merged by step)."""
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    frame = pd.DataFrame(rows)
    keep = {k: v for k, v in CURVE_KEYS.items() if k in frame}
    frame = frame[["step", *keep]].rename(columns=keep).groupby("step", as_index=False).last()
    for col in CURVE_KEYS.values():
        if col not in frame:
            frame[col] = np.nan
    frame.insert(0, "seed", seed)
    frame.insert(0, "method", method)
    frame.insert(0, "design", design)
    return frame


def near_solved(folder: Path) -> float | None:
    """The pool card's near-solved share after the warm start (summary.json, exact rates, 256 prompts)."""
    try:
        ws = json.loads((folder / "summary.json").read_text()).get("details", {}).get("warmstart", {})
        return float(ws["card"]["tiers"]["all"]["near_solved"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _share(num, den) -> float | None:
    den = float(np.nansum(den))
    return float(np.nansum(num)) / den if den > 0 else None


def thirds(steps: pd.Series, horizon: int) -> pd.Series:
    """0, 1, 2: the third of the horizon a training step (1..horizon) falls in."""
    return ((steps - 1) * 3 // max(horizon, 1)).clip(0, 2)


def target_and_epochs(curves: pd.DataFrame) -> dict:
    """Target = GRPO's best seed-mean val/acc (evaluations every GRPO seed made); PC's pool epochs at
    its first evaluation at or above it, per seed (None: not reached in the horizon)."""
    grpo = curves[(curves.method == "grpo") & curves.val_acc.notna()]
    n_seeds = grpo.seed.nunique()
    mean = grpo.groupby("step").val_acc.agg(["mean", "count"])
    mean = mean[mean["count"] == n_seeds]["mean"]
    if mean.empty:
        return {"target": None, "grpo_start": None, "grpo_best_step": None, "pc_epochs_at_target": []}
    target = float(mean.max())
    epochs = []
    for _, run in curves[curves.method == "pilot_commit"].groupby("seed"):
        hit = run[run.val_acc.notna() & (run.val_acc >= target - 1e-12)].sort_values("step")
        if hit.empty:
            epochs.append(None)
            continue
        step = int(hit.step.iloc[0])
        ep = run[run.step <= step].pool_epochs.dropna()  # the epochs drawn by the evaluation's step
        epochs.append(float(ep.iloc[-1]) if len(ep) else 0.0)
    return {"target": target, "grpo_start": float(mean.iloc[0]), "grpo_best_step": int(mean.idxmax()),
            "pc_epochs_at_target": epochs}


def measure(curves: pd.DataFrame, horizon: int, near: float | None) -> dict:
    """The regime's trajectory of one design from its probe curves."""
    train = curves[curves.step >= 1]
    g, pc = train[train.method == "grpo"], train[train.method == "pilot_commit"]
    out = {"grpo_zero_variance": _share(g.all_correct + g.all_wrong, g.groups),
           "grpo_all_correct": _share(g.all_correct, g.groups), "grpo_all_wrong": _share(g.all_wrong, g.groups),
           "pc_rounds": float(pc.rounds.mean()) if len(pc) else None, "near_solved": near}
    for k, part in pc.groupby(thirds(pc.step, horizon)):
        out[f"pc_rounds_t{int(k) + 1}"] = float(part.rounds.mean())
        out[f"pc_in_band_t{int(k) + 1}"] = _share(part.pilots_in_band, part.pilots)
    for k, part in g.groupby(thirds(g.step, horizon)):
        out[f"grpo_zero_variance_t{int(k) + 1}"] = _share(part.all_correct + part.all_wrong, part.groups)
    out.update(target_and_epochs(curves))
    eps = [e for e in out["pc_epochs_at_target"] if e is not None]
    reached = len(eps) * 2 > len(out["pc_epochs_at_target"])  # the median is finite
    out["pc_epochs_median"] = float(np.median(eps + [math.inf] * (len(out["pc_epochs_at_target"]) - len(eps)))) \
        if reached else None
    last = curves[curves.val_acc.notna()].groupby(["method", "step"]).val_acc.mean()
    out["grpo_gain"] = (float(last["grpo"].max() - last["grpo"].iloc[0]) if "grpo" in last else None)
    out["pc_gain"] = (float(last["pilot_commit"].max() - last["pilot_commit"].iloc[0]) if "pilot_commit" in last else None)
    return out


def judge(m: dict, crit: dict) -> dict[str, bool | None]:
    def within(x, lo, hi):
        return None if x is None else bool(lo <= x <= hi)
    return {"grpo_zero_variance": within(m["grpo_zero_variance"], *crit["grpo_zero_variance"]),
            "pc_rounds": within(m["pc_rounds"], 0, crit["pc_rounds_max"]),
            "pc_rounds_last_third": within(m.get("pc_rounds_t3"), 0, crit["pc_rounds_last_third_max"]),
            "epochs_at_target": within(m["pc_epochs_median"], *crit["epochs_at_target"]),
            "near_solved": within(m["near_solved"], 0, crit["near_solved_max"])}


# -- scan: the pool card per tier and skill at the RL settings, before any RL step ----------------
def skill(tier: str) -> str:
    """The skill a tier belongs to: its operation (add, sub, mul)."""
    return tier[:3]


def expected_regime(rates: np.ndarray, n: int) -> dict:
    """From exact pass rates: GRPO's expected zero-variance share at n rollouts (all-correct,
    all-wrong) and the share of fresh n/4-rollout pilots in the band 1/8 <= p <= 3/4 (binomial)."""
    from scipy.stats import binom

    k = max(1, n // 4)
    lo, hi = math.ceil(k / 8), math.floor(3 * k / 4)
    return {"grpo_all_correct": float(np.mean(rates ** n)), "grpo_all_wrong": float(np.mean((1 - rates) ** n)),
            "grpo_zero_variance": float(np.mean(rates ** n + (1 - rates) ** n)),
            "pilot_in_band": float(np.mean(binom.cdf(hi, k, rates) - binom.cdf(lo - 1, k, rates))),
            "pc_rounds_now": float(max(1.0, 1.0 / (3 * max(np.mean(binom.cdf(hi, k, rates) - binom.cdf(lo - 1, k, rates)), 1e-9))))}


def scan(overrides: list[str], tiers: list[str], per_tier: int) -> dict:
    """Exact pass rates (at train.temperature / top_p) of the pool and of `per_tier` fresh prompts of
    each tier in `tiers`, on the config's warm start (trained once if not cached)."""
    import torch

    from pcbench.pool_card import pool_card
    from pcbench.backends.embedded.evaluate import exact_pass_rates
    from pcbench.backends.embedded.task import SyntheticTask, sample_problems
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import cache_key, load_or_train
    from pcbench.config import compose_cfg
    from pcbench.config import check_config

    cfg = compose_cfg(overrides)
    check_config(cfg)
    torch.set_num_threads(1)
    tok, task = CharTokenizer(), SyntheticTask.for_run(cfg)
    model, _ = load_or_train(cfg, task, tok, log=lambda *a, **k: None)
    model.eval()
    T, P = float(cfg.train.temperature), float(cfg.train.top_p)
    pool_rates = exact_pass_rates(model, tok, task.train, T, P)
    pool_tiers = [p.tier for p in task.train]
    used = {p.prompt for p in task.sft + task.train + task.val}
    ladder_rates, ladder_tiers = [], []
    for i, t in enumerate(tiers):
        probs = sample_problems(per_tier, {t: 1.0}, np.random.default_rng(10_000 + i), start_pid=5_000_000,
                                exclude=used, reverse=cfg.data.get("reverse", False))
        ladder_rates.append(exact_pass_rates(model, tok, probs, T, P))
        ladder_tiers += [t] * len(probs)
    ladder = pool_card(np.concatenate(ladder_rates), np.array(ladder_tiers)) if tiers else {}
    return {"warmstart": cache_key(cfg), "overrides": overrides, "n": int(cfg.rollout.n), "pool_size": len(task.train),
            "pool": pool_card(pool_rates, np.array(pool_tiers)),
            "pool_by_skill": pool_card(pool_rates, np.array([skill(t) for t in pool_tiers])),
            "expected": expected_regime(pool_rates, int(cfg.rollout.n)), "tiers": ladder}


# -- run, score, report ---------------------------------------------------------------------------
def _extra(args) -> list[str]:
    return [f"paths.results={args.runs}", f"paths.cache={args.cache}"]


def score_design(spec: dict, name: str, extra: list[str]) -> tuple[pd.DataFrame, dict]:
    """(curves of the design's finished runs, its measured criteria and verdicts)."""
    frames, near, runs = [], None, []
    for job in design_jobs(spec, name, extra):
        folder = run_folder(job)
        if not (folder / "metrics.jsonl").is_file() or not is_scored(folder):
            continue
        frames.append(run_curves(folder, name, job.method, job.seed))
        near = near if near is not None else near_solved(folder)
        runs.append(f"{job.method}-s{job.seed}")
    if not frames:
        return pd.DataFrame(), {}
    curves = pd.concat(frames, ignore_index=True)
    m = measure(curves, int(spec["designs"][name].get("steps", spec["steps"])), near)
    m["runs"] = runs
    m["met"] = judge(m, spec["criteria"])
    return curves, m


def write(spec: dict, names: list[str], extra: list[str], out: Path, with_cards: bool) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    old = json.loads((out / "probes.json").read_text()) if (out / "probes.json").is_file() else {}
    results, cards, frames = dict(old.get("results", {})), dict(old.get("cards", {})), []
    for name in spec["designs"]:
        if name not in names and name in results:
            continue
        curves, m = score_design(spec, name, extra)
        if not m and name in results:  # no run folders here (another --runs): keep what was scored before
            continue
        results[name] = m
        if len(curves):
            frames.append(curves)
        if with_cards and m:
            cards[name] = scan([*spec["common"], *spec["designs"][name]["overrides"], *extra], [], 0)
    csv = out / "probes_curves.csv"
    if csv.is_file():
        kept = pd.read_csv(csv, float_precision="round_trip")  # kept rows written back digit for digit
        kept = kept[~kept.design.isin([f.design.iloc[0] for f in frames])]
        frames = [kept, *frames]
    if frames:
        pd.concat(frames, ignore_index=True).sort_values(["design", "method", "seed", "step"]).to_csv(csv, index=False)
    results = {k: results[k] for k in spec["designs"] if k in results}
    (out / "probes.json").write_text(json.dumps({"criteria": spec["criteria"], "results": results, "cards": cards},
                                                indent=1, default=float) + "\n")
    (out / "probes.md").write_text(report_md(spec, results, cards))
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pcbench.bench.probes", description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=("scan", "run", "score"))
    p.add_argument("overrides", nargs="*", help="scan: Hydra overrides of the design")
    p.add_argument("--plan", type=Path, default=PLAN)
    p.add_argument("--designs", default=None, help="comma-separated design names (default: all)")
    p.add_argument("--runs", default="results/bench_runs", help="paths.results of the probe runs")
    p.add_argument("--cache", default="results/.cache", help="paths.cache (the warm starts)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--tiers", default="", help="scan: tiers to probe beside the pool, comma-separated")
    p.add_argument("--per-tier", type=int, default=128)
    args = p.parse_args(argv)
    if args.command == "scan":
        rep = scan([*args.overrides, f"paths.cache={args.cache}"], [t for t in args.tiers.split(",") if t], args.per_tier)
        from pcbench.pool_card import card_text
        for key in ("pool", "pool_by_skill", "tiers"):
            if rep[key]:
                print(f"\n{key}:", *card_text(rep[key]), sep="\n")
        print("\nexpected:", json.dumps({k: round(v, 3) for k, v in rep["expected"].items()}))
        return 0
    spec = load_plan(args.plan)
    names = args.designs.split(",") if args.designs else list(spec["designs"])
    unknown = [n for n in names if n not in spec["designs"]]
    if unknown:
        print(f"probes: unknown design(s) {unknown}; {args.plan} has {list(spec['designs'])}", file=sys.stderr)
        return 2
    extra = _extra(args)
    if args.command == "run":
        for n in names:  # one design after the other, one run at a time (1 torch thread)
            jobs = [j for j in design_jobs(spec, n, extra) if not is_scored(run_folder(j))]
            launch(jobs, workers=1, log_dir=Path(args.runs) / "probes" / "logs" / n)
    results = write(spec, names, extra, args.out, with_cards=True)
    print(*table_md(spec, {n: results.get(n, {}) for n in names}), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
