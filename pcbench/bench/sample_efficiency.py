"""`python -m pcbench.bench sample_efficiency`: every allocator x seeds on the embedded task.

1. plan (method, seed) jobs and compose + check every config before anything trains;
2. train the jobs whose run folder is not finished (2 workers x 1 thread by default, for a
   2-core machine), seed-major so an early stop leaves whole seeds;
3. hand exactly those run folders to pcbench.reports.sample_efficiency (target = GRPO's best
   seed-mean val/acc, and the reference-budget target of pcbench/analysis/targets.py; the A/A:
   GRPO on a second, disjoint seed set), which writes the raw curves (curves.csv: one row per
   run and evaluation), regime.csv (one row per run and step) and the regime card
   (regime_card.md + .png); this module adds the setup and the provenance and writes
   <out>/sample_efficiency.md + .json with the commit.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from pcbench.reports.sample_efficiency import sample_efficiency_md
from pcbench.analysis.scoring import N_BOOT
from pcbench.config import compose_cfg
from pcbench.bench.launch import Job, is_scored, launch, plan, run_folder
from pcbench.bench.provenance import provenance, rescored
from pcbench.rundir import atomic_write_json, atomic_write_text

def all_methods() -> list[str]:
    """Every registered allocator (a new file in pcbench/allocators/ is in), the paper's three first."""
    from pcbench.analysis.methods import method_order
    from pcbench.allocators import ALLOCATORS

    return method_order(ALLOCATORS)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--methods", default=None, help="comma-separated (default: every registered allocator: "
                   + ", ".join(all_methods()) + ")")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    p.add_argument("--baseline-seeds", type=int, default=None, help="GRPO's main seeds 0..B-1 (default: --seeds); "
                   "more of them sharpen the target and the A/A floor every ratio is read against")
    p.add_argument("--aa-seeds", type=int, default=5, help="GRPO also on seeds M..M+K-1, M = max(N, B) (disjoint "
                   "from every main seed) for the A/A noise floor; 0 skips it (default 5)")
    p.add_argument("--steps", type=int, default=None, help="train.steps (default: the config's)")
    p.add_argument("--jobs", type=int, default=2, help="parallel runs, 1 torch thread each (default 2)")
    p.add_argument("--out", type=Path, default=Path("results/bench"), help="where the .md/.json go")
    p.add_argument("--runs", type=Path, default=None,
                   help="paths.results for the run folders (default: exp=sample_efficiency's, results/bench_runs, "
                   "not committed)")
    p.add_argument("--experiment", default=None,
                   help="experiment= of the run folders (default: exp=sample_efficiency's, sample_efficiency)")
    p.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Hydra override for every run (repeatable), e.g. -o data.train_size=240")
    p.add_argument("--n-boot", type=int, default=N_BOOT, help="bootstrap resamples")
    p.add_argument("--score-only", action="store_true", help="train nothing; score the finished folders")


# One bench job = conf/exp/sample_efficiency.yaml (its experiment, results folder, one torch thread,
# no progress bar), so a job run by hand (`python -m pcbench.run exp=sample_efficiency ...`) is the
# same run in the same folder. The options below override it only when given.
EXP = "exp=sample_efficiency"


def common_overrides(args) -> list[str]:
    """Every job's overrides after method= and seed=: the exp, then the command line's changes."""
    given = [f"experiment={args.experiment}"] if args.experiment else []
    given += [f"paths.results={args.runs}"] if args.runs else []
    given += [f"train.steps={args.steps}"] if args.steps else []
    return [EXP, *given, *args.override]


def plan_jobs(args, methods: list[str]) -> tuple[list[Job], list[Job], Path]:
    """(main jobs, A/A jobs, the experiment's folder). The A/A runs live in experiment <name>_aa,
    so figures of the main folder show GRPO's main seeds only."""
    common = common_overrides(args)
    base = args.seeds if args.baseline_seeds is None else args.baseline_seeds
    jobs = plan(methods, list(range(args.seeds)), common)
    if "grpo" in methods:
        jobs += plan(["grpo"], list(range(args.seeds, base)), common)
    cfg = compose_cfg(jobs[0].overrides)  # experiment and folder as composed (exp, then any override)
    aa_common = [o for o in common if not o.startswith("experiment=")] + [f"experiment={cfg.experiment}_aa"]
    first_aa = max(args.seeds, base)
    aa_jobs = plan(["grpo"], list(range(first_aa, first_aa + args.aa_seeds)), aa_common)
    return jobs, aa_jobs, Path(cfg.paths.results) / str(cfg.experiment)


# the .json's field order, as committed in results/bench/sample_efficiency.json
REPORT_KEYS = ("provenance", "setup", "target", "budget", "records", "timing", "goals", "per_run", "failures", "runs",
               "warnings", "aa_seeds", "targets", "aa", "reference_records", "regime_checks", "notes")


def main(args, argv: list[str]) -> int:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else all_methods()
    jobs, aa_jobs, home = plan_jobs(args, methods)
    base = args.seeds if args.baseline_seeds is None else args.baseline_seeds
    folders = {job: run_folder(job) for job in jobs + aa_jobs}  # raises ConfigError before any training
    # each A/A seed right after a main seed, so a benchmark stopped early has both halves of the A/A
    rounds = max(args.seeds, base, args.aa_seeds)
    order = [j for s in range(rounds) for j in [x for x in jobs if x.seed == s] + aa_jobs[s:s + 1]]
    # a starved run is a result (scored, censored from its last evaluation): resuming it replays the same stop
    todo = [] if args.score_only else [j for j in order if not is_scored(folders[j])]
    print(f"{len(jobs) + len(aa_jobs)} runs ({len(aa_jobs)} of them the A/A), {len(jobs) + len(aa_jobs) - len(todo)} "
          f"already finished, {len(todo)} to train "
          f"on {args.jobs} worker(s); logs in {home / 'logs'}", flush=True)
    meta = provenance(argv)
    results = launch(todo, args.jobs, home / "logs")
    previous = args.out / "sample_efficiency.json"
    if not todo and previous.exists():  # nothing trained now: the earlier command's record stays the source
        old = json.loads(previous.read_text())
        meta = rescored(meta, old)
        results = old.get("runs", [])
    args.out.mkdir(parents=True, exist_ok=True)
    present = [str(folders[j]) for j in jobs if (folders[j] / "metrics.jsonl").exists()]
    aa_present = [str(folders[j]) for j in aa_jobs if (folders[j] / "metrics.jsonl").exists()]
    meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if todo:  # the runs trained now: the warm starts they started from (their machine.json)
        from pcbench.analysis.warmstart_note import warmstart_digests

        meta["warmstart_digests"] = warmstart_digests(present + aa_present)
    from pcbench.analysis.run_frames import failed_runs
    from pcbench.reports.sample_efficiency import score_benchmark  # pandas, matplotlib: only when scoring
    parts = {"provenance": meta, "setup": setup(jobs, args, home),
             **score_benchmark(present, aa_present, args.out, args.n_boot),
             "failures": failed_runs(results), "runs": results,
             "aa_seeds": [j.seed for j in aa_jobs]}
    report = {k: parts[k] for k in REPORT_KEYS if k in parts}
    atomic_write_json(args.out / "sample_efficiency.json", report)
    atomic_write_text(args.out / "sample_efficiency.md", sample_efficiency_md(report))
    print(f"wrote {args.out / 'sample_efficiency.md'} and .json")
    return 0 if not report["failures"] else 1


def setup(jobs: list[Job], args, home: Path) -> dict:
    """What ran, as composed: methods, seeds, steps, batch, n, model, data, workers, overrides, runs folder."""
    cfg = compose_cfg(jobs[0].overrides)
    return {"methods": sorted({j.method for j in jobs}, key=[j.method for j in jobs].index),
            "seeds": args.seeds, "baseline_seeds": len({j.seed for j in jobs if j.method == "grpo"}),
            "steps": int(cfg.train.steps), "train_batch": int(cfg.train.batch_size),
            "n": int(cfg.rollout.n), "model": str(cfg.model.name), "data": str(cfg.data.name),
            "jobs": args.jobs, "overrides": args.override, "runs_dir": str(home)}
