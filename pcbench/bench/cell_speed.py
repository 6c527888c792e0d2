"""`python -m pcbench.bench cell_speed`: one regime-map cell end to end, side by side across code versions.

The plan is a committed file (conf/bench/cell_speed.yaml: the cell, the versions by commit, the launch
order, what counts as success), read before anything runs. Then

1. each version gets a clean git worktree under --work (its code as committed, nothing of this checkout's);
2. each version's default warm start is trained untimed into its worktree's cache by a one-step run
   (--cache-from copies already-trained warm-start files in first: a file another version keys
   differently is simply not used);
3. the launches run one at a time in the plan's order: `python -m pcbench.bench regime_map --cells CELL
   --jobs 2` from the version's worktree, timed end to end; each launch's report and curves go to
   <out>/<version><repeat>/, its run folders to <work>/runs-<version><repeat>/;
4. the versions the plan names `identical` (or `same_picture`) are compared run by run: every value of
   every metrics row, timings aside (<out>/identity.json); `same_picture` judges instead the cell's
   PC-vs-GRPO and A/A ratios (each inside the other's 95% interval), for a change that alters arithmetic;
5. <out>/times.json and the table (<out>/cell_speed.md, pcbench/reports/cell_speed.py) are written after
   every launch, so an interrupted comparison keeps what it measured.

    python -m pcbench.bench cell_speed --work /tmp/cell-speed --cache-from results/.cache
    python -m pcbench.bench cell_speed --report-only      # the table again from <out>'s files
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from pcbench.paths import CONF_DIR
from pcbench.bench.provenance import REPO, provenance
from pcbench.config import ConfigError

PLAN = CONF_DIR / "bench" / "cell_speed.yaml"
TIMING_KEYS = ("time/", "perf/")  # the only logged values allowed to differ between identical versions


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan", type=Path, default=PLAN, help=f"the committed plan (default {PLAN})")
    p.add_argument("--work", type=Path, default=Path("/tmp/pcbench-cell-speed"), help="worktrees and run folders")
    p.add_argument("--out", type=Path, default=Path("results/bench/cell_speed"), help="times, reports, table")
    p.add_argument("--cache-from", type=Path, default=None, help="a folder of trained warm starts (warmstart-*) to start from")
    p.add_argument("--report-only", action="store_true", help="run nothing; rewrite the table from <out>")


def load_plan(path: Path) -> dict:
    """The plan, checked: one line naming what is wrong."""
    if not path.is_file():
        raise ConfigError(f"cell-speed plan {path} not found; pass --plan FILE")
    plan = yaml.safe_load(path.read_text()) or {}
    missing = [k for k in ("cell", "versions", "order", "success") if k not in plan]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)} (see conf/bench/cell_speed.yaml)")
    unknown = sorted(set(plan["order"]) - set(plan["versions"]))
    if unknown:
        raise ConfigError(f"{path}: order names {', '.join(unknown)}, which versions does not define")
    return plan


def resolve(ref: str) -> str:
    done = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError(f"cell-speed plan: {ref!r} is no commit of {REPO}; fetch it or fix versions")
    return done.stdout.strip()


def worktree(work: Path, name: str, commit: str) -> Path:
    """A clean checkout of `commit` at <work>/<name> (reused when it is already there at that commit)."""
    path = work / name
    if path.exists():
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True).stdout.strip()
        if head == commit:
            return path
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO, check=True)
    subprocess.run(["git", "worktree", "add", "--detach", "--force", str(path), commit], cwd=REPO, check=True,
                   capture_output=True)
    return path


def _python(tree: Path, args: list[str], log: Path) -> float:
    """Run `python <args>` on `tree`'s code (cwd and PYTHONPATH); -> wall seconds. Raises on failure."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, *args], cwd=tree, env=env, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} failed in {tree} (exit {done.returncode}); see {log}")
    return time.perf_counter() - t0


def prepare(tree: Path, work: Path, name: str, cache_from: Path | None) -> None:
    """Train (or find) the version's default warm start, untimed: a one-step run in its worktree."""
    cache = tree / "results" / ".cache"
    if cache_from is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for f in cache_from.glob("warmstart-*"):  # the weights (.pt) and their record (.json)
            if not (cache / f.name).exists():
                shutil.copy2(f, cache / f.name)
    runs = work / f"prep-{name}"
    if runs.exists():
        shutil.rmtree(runs)  # a finished one-step run would refuse to rerun
    _python(tree, ["-m", "pcbench.run", "exp=sample_efficiency", "data.val_mode=exact", "train.steps=1",
                   f"paths.results={runs}"], work / f"prep-{name}.log")


def metrics_rows(run: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [{k: v for k, v in r.items() if not k.startswith(TIMING_KEYS)} for r in rows]


def compare_runs(a: Path, b: Path) -> dict:
    """Run folders of two launches of the same cell, matched by folder name -> counts and the first differences."""
    folders_a = {p.parent.name: p.parent for p in a.rglob("metrics.jsonl")}
    folders_b = {p.parent.name: p.parent for p in b.rglob("metrics.jsonl")}
    names = sorted(set(folders_a) | set(folders_b))
    values, diffs = 0, []
    for name in names:
        if name not in folders_a or name not in folders_b:
            diffs.append({"run": name, "missing_in": "a" if name not in folders_a else "b"})
            continue
        ra, rb = metrics_rows(folders_a[name]), metrics_rows(folders_b[name])
        if len(ra) != len(rb):
            diffs.append({"run": name, "rows": [len(ra), len(rb)]})
        for x, y in zip(ra, rb):
            values += len(x)
            for k in sorted(set(x) | set(y)):
                if x.get(k) != y.get(k):
                    diffs.append({"run": name, "step": x.get("step"), "key": k, "a": x.get(k), "b": y.get(k)})
    return {"runs": len(names), "values": values, "differences": len(diffs), "first": diffs[:10]}


def launch_once(plan: dict, tree: Path, work: Path, out: Path, key: str) -> float:
    """One timed launch of the plan's cell on `tree`'s code -> launcher wall seconds."""
    dest = out / key
    if dest.exists():
        shutil.rmtree(dest)
    runs = work / f"runs-{key}"
    if runs.exists():
        shutil.rmtree(runs)  # a launch trains every run: nothing reused from an earlier one
    dest.mkdir(parents=True)
    for card in (tree / "results" / ".cache").glob("pool-*"):
        card.unlink()  # each launch computes its cell's pool card (a few seconds), the first one not alone
    return _python(tree, ["-m", "pcbench.bench", "regime_map", "--cells", plan["cell"], "--jobs", "2",
                          "--runs", str(runs), "--out", str(dest.resolve()), "--figures", str(work / f"fig-{key}")],
                   dest / "launch.log")


def main(args, argv) -> int:
    try:
        return _main(args, argv)
    except RuntimeError as e:  # a launch or warm-up failed: one line naming its log; earlier launches are kept
        print(f"pcbench.bench cell_speed: {e}", file=sys.stderr)
        return 1


def _main(args, argv) -> int:
    from pcbench.reports.cell_speed import write_report

    plan = load_plan(args.plan)
    out = args.out
    if args.report_only:
        write_report(out, plan)
        return 0
    commits = {name: resolve(ref) for name, ref in plan["versions"].items()}
    args.work.mkdir(parents=True, exist_ok=True)
    trees = {name: worktree(args.work, name, c) for name, c in commits.items()}
    for name, tree in trees.items():
        print(f"preparing {name} ({commits[name][:10]}): its default warm start, untimed", flush=True)
        prepare(tree, args.work, name, args.cache_from)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"plan": str(args.plan), "commits": commits, "provenance": provenance(argv), "launches": [],
            "note": "nothing else ran on the machine during the launches unless said here"}
    seen: dict[str, int] = {}
    for name in plan["order"]:
        seen[name] = seen.get(name, 0) + 1
        key = f"{name}{seen[name]}"
        print(f"launch {key} ({commits[name][:10]}): {plan['cell']}", flush=True)
        wall = launch_once(plan, trees[name], args.work, out, key)
        meta["launches"].append({"version": name, "repeat": seen[name], "key": key, "commit": commits[name][:10],
                                 "wall_s": round(wall, 1), "loadavg": [round(x, 2) for x in os.getloadavg()]})
        (out / "times.json").write_text(json.dumps(meta, indent=1) + "\n")
        print(f"  {wall:.0f} s", flush=True)
    # value by value: all equal is the criterion under `identical`; under `same_picture` (arithmetic changed) it is
    # reported, not judged
    same = plan["success"].get("identical") or plan["success"].get("same_picture") or []
    if len(same) == 2 and all(seen.get(v) for v in same):
        ident = compare_runs(args.work / f"runs-{same[0]}1", args.work / f"runs-{same[1]}1")
        (out / "identity.json").write_text(json.dumps({"compared": [f"{v}1" for v in same], **ident}, indent=1) + "\n")
    print(write_report(out, plan))
    return 0
