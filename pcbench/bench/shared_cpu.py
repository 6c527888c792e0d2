"""A default run's step time alone and beside one busy process, version against version.

    python -m pcbench.bench.shared_cpu --plan conf/bench/shared_cpu.yaml --out results/bench/shared_cpu \
        --cache results/.cache [--work /tmp/pcbench-shared-cpu]

The plan (committed before it runs) names the run's overrides, the variants (a label, a git commit or
`HEAD`, extra overrides), the repeats and the criteria. Each variant runs from its own clean worktree
of its commit, in the plan's alternating order: for each repeat, each variant alone, then each variant
beside `python -c 'while True: pass'` (one busy single-threaded process, started a second before the
run and killed after it). The figure is the median of the run's `time/step_s` over its training steps
(step 0, the evaluation-only row, excluded). Writes times.json (every run's step times and the machine)
and shared_cpu.md (the table and the criteria) under --out; the runs' folders stay under --work.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

from pcbench.bench.cell_speed import REPO, worktree

BUSY = [sys.executable, "-c", "while True: pass"]


def _run(tree: Path, overrides: list[str], results: Path, cache: str, loaded: bool, log: Path) -> list[float]:
    """One run from `tree`; the training steps' seconds, in step order."""
    cmd = [sys.executable, "-m", "pcbench.run", *overrides, f"paths.results={results}", f"paths.cache={cache}",
           "logging.progress=false"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    busy = subprocess.Popen(BUSY) if loaded else None
    try:
        if busy:
            time.sleep(1.0)
        with open(log, "w") as out:
            done = subprocess.run(cmd, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    if done.returncode != 0:
        raise SystemExit(f"pcbench.bench.shared_cpu: a run failed (exit {done.returncode}); its log: {log}")
    rows = [json.loads(line) for m in results.rglob("metrics.jsonl") for line in m.read_text().splitlines()]
    return [float(r["time/step_s"]) for r in sorted(rows, key=lambda r: r["step"]) if r["step"] > 0]


def _sha(commit: str) -> str:
    return subprocess.run(["git", "rev-parse", commit], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def _machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cpu": model, "cores": os.cpu_count(), "load_before": os.getloadavg()}


def measure(plan: dict, work: Path, cache: str) -> dict:
    trees = {v["label"]: worktree(work / "trees", v["label"], _sha(v["commit"])) for v in plan["variants"]}
    runs = []
    for rep in range(int(plan["repeats"])):
        for loaded in (False, True):
            for v in plan["variants"]:
                name = f"{v['label']}-{'loaded' if loaded else 'alone'}-{rep}"
                folder = work / "runs" / name
                if folder.exists():
                    subprocess.run(["rm", "-rf", str(folder)], check=True)
                folder.mkdir(parents=True)
                steps = _run(trees[v["label"]], [*plan["overrides"], *v.get("overrides", [])], folder, cache,
                             loaded, work / "runs" / f"{name}.log")
                runs.append({"variant": v["label"], "loaded": loaded, "repeat": rep, "step_s": steps,
                             "median_step_s": statistics.median(steps)})
                print(f"{name}: median step {statistics.median(steps):.3f} s over {len(steps)} steps", flush=True)
    return {"plan": plan, "machine": _machine(), "runs": runs}


def table(times: dict) -> str:
    """The plan's table: per variant, the median (over repeats) of the runs' median step time, alone and
    loaded, their ratio, and each criterion of the plan judged."""
    plan, runs = times["plan"], times["runs"]
    med = {(v["label"], loaded): statistics.median(r["median_step_s"] for r in runs
                                                     if r["variant"] == v["label"] and r["loaded"] == loaded)
           for v in plan["variants"] for loaded in (False, True)}
    lines = [f"# A default run on a shared machine ({times['machine']['cpu']}, {times['machine']['cores']} cores)", "",
             f"Run: `python -m pcbench.run {' '.join(plan['overrides'])}`; {plan['repeats']} repeats, alternating; "
             "one busy process beside the loaded runs. Median step seconds (the median over repeats of each run's "
             "median over its training steps).", "",
             "| variant | commit | overrides | alone s | loaded s | loaded / alone |", "|---|---|---|---:|---:|---:|"]
    for v in plan["variants"]:
        alone, loaded = med[(v["label"], False)], med[(v["label"], True)]
        lines.append(f"| {v['label']} | {v['commit']} | {' '.join(v.get('overrides', [])) or '-'} | {alone:.3f} | "
                     f"{loaded:.3f} | {loaded / alone:.2f}x |")
    crit = plan["criteria"]
    after, before = crit["after"], crit["before"]
    ratio = med[(after, True)] / med[(after, False)]
    alone_ratio = med[(after, False)] / med[(before, False)]
    lines += ["", "| criterion | measured | plan | met |", "|---|---:|---:|---|",
              f"| {after}: loaded / alone | {ratio:.2f}x | <= {crit['max_loaded_ratio']}x | "
              f"{'yes' if ratio <= crit['max_loaded_ratio'] else 'no'} |",
              f"| {after} alone / {before} alone | {alone_ratio:.2f}x | <= {crit['max_alone_ratio']}x | "
              f"{'yes' if alone_ratio <= crit['max_alone_ratio'] else 'no'} |"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pcbench.bench.shared_cpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", required=True, help="paths.cache holding the default warm start (trained if absent)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pcbench-shared-cpu"))
    parser.add_argument("--table-only", action="store_true", help="re-render shared_cpu.md from --out/times.json")
    args = parser.parse_args(argv)
    if not args.plan.is_file():
        print(f"pcbench.bench.shared_cpu: no plan at {args.plan}: pass the committed plan, "
              "e.g. --plan conf/bench/shared_cpu.yaml", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.table_only:
        times = json.loads((args.out / "times.json").read_text())
    else:
        times = measure(yaml.safe_load(args.plan.read_text()), args.work, args.cache)
        (args.out / "times.json").write_text(json.dumps(times, indent=1) + "\n")
    (args.out / "shared_cpu.md").write_text(table(times))
    print(table(times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
