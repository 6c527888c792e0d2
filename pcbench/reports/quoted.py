"""The result numbers the docs quote, generated from the committed result files.

A doc quotes a result inside a marked block; the block's text is rendered here from the .json it
comes from, so a rerun that changes a number changes the doc (`--write`) or fails the docs test
(tests/docs/test_quoted_numbers.py), never leaves the doc behind:

    <!-- quoted: sample_efficiency -->
    ...generated...
    <!-- /quoted -->

    python -m pcbench.reports.quoted           # which blocks are stale (exit 1 if any)
    python -m pcbench.reports.quoted --write   # rewrite them from results/bench/*.json

Blocks: `sample_efficiency` (the A/A floor and GRPO / DAPO / Pilot-Commit rows of
results/bench/sample_efficiency.json), `regime_map` (one row per cell of results/bench/regime_map.json).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import sys
from pathlib import Path

import yaml

from pcbench.analysis.formats import (accuracy_with_interval, interval_text, decimal, md_table, percent, ratio_entry_text,
                                      ratio_text, ratio_with_interval, rollouts_with_interval)
from pcbench.analysis.methods import label
from pcbench.analysis.targets import aa_from_json
from pcbench.paths import CONF_DIR

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "bench"
DOCS = ("README.md", "results/bench/README.md", "docs/measurements.md")
BLOCK = re.compile(r"(<!-- quoted: (\w+) -->\n)(.*?)(<!-- /quoted -->)", re.S)


def _load(name: str, results: Path) -> dict:
    return json.loads((results / name).read_text())


def sample_efficiency_block(report: dict, methods=("grpo", "dapo", "pilot_commit")) -> str:
    aa = []
    for name in ("paper", "reference"):
        a, t = aa_from_json(report["aa"][name]), report["targets"][name]
        band = "inside" if a["resolves"] else "NOT inside"
        grpo_reached = sum(math.isfinite(v) for v in a["grpo_rtt"])
        aa.append(f"- {name} target {100 * t:.1f}%: {grpo_reached}/{len(a['grpo_rtt'])} vs "
                  f"{a['reached']}/{a['runs']} reached, ratio {ratio_text(a['ratio'])}, 95% bootstrap CI "
                  f"{interval_text(a['low'], a['high'])}: "
                  f"{band} [0.80, 1.25]")
    seeds = report["setup"]["baseline_seeds"]
    aa_seeds = report["aa_seeds"]
    rows = md_table(["method", "reached", "rollouts to target", "95% CI", "vs GRPO", "vs DAPO", "acc at GRPO's budget"])
    for r in (r for m in methods for r in report["records"] if r["method"] == m):
        rtt, ci = rollouts_with_interval(r)
        rows.append(f"| {label(r['method'])} | {r['reached']}/{r['seeds']} | {rtt} | {ci} "
                    f"| {ratio_with_interval(r['speedup_vs_grpo'], r['speedup_vs_grpo_ci_low'], r['speedup_vs_grpo_ci_high'])} "
                    f"| {ratio_with_interval(r['speedup_vs_dapo'], r['speedup_vs_dapo_ci_low'], r['speedup_vs_dapo_ci_high'])} "
                    f"| {accuracy_with_interval(r)} |")
    head = (f"A/A noise floor (GRPO seeds 0-{seeds - 1} vs GRPO seeds {aa_seeds[0]}-{aa_seeds[-1]}, "
            "rollouts to target):")
    return "```\n" + "\n".join([head, *aa, "", *rows]) + "\n```\n"


def _map_ratio(entry: dict | None) -> str:
    return ratio_entry_text(entry, missing_high="inf")


def regime_map_block(report: dict) -> str:
    pm = report["grid"]["paper_matched"]["cell"]
    rows = md_table(["cell", "PC vs GRPO", "signal per rollout", "PC vs DAPO", "A/A", "GRPO zero-var", "PC rounds/step",
                     "PC pilots in band"])
    # the grid file's order (the .json's keys are sorted): first knob slowest
    grid = yaml.safe_load((CONF_DIR / "bench" / "regime_map.yaml").read_text())
    order = ["-".join(combo) for combo in itertools.product(*[list(levels) for levels in grid["knobs"].values()])]
    for name in sorted(report["cells"], key=lambda n: order.index(n) if n in order else len(order)):
        c = report["cells"][name]
        if c["status"] != "scored":
            rows.append(f"| {name} | {c['status']} | | | | | | |")
            continue
        counts = c["runs"]["counts"]
        pc_runs = counts.get("pilot_commit", "")
        partial = not c["runs"]["complete"]
        pc = _map_ratio(c["pc_vs_grpo"])
        if partial:
            pc = f"{pc} (PC {pc_runs} finished)" if pc != "-" else f"- (PC {pc_runs} finished)"
        starved = c.get("starved", {}).get("pilot_commit")  # runs counted, censored: say so beside the ratio
        if starved:
            pc = f"{pc} (PC: {starved['starved']} of {starved['runs']} starved, censored)"
        if partial:
            aa = "partial: no claim"
        elif c["aa"].get("ratio") is None:
            aa = f"{c['aa'].get('reached')} of {c['aa'].get('runs')} A/A seeds reach the target: no"
        else:
            aa = f"{_map_ratio(c['aa'])}: {'yes' if c['aa']['resolves'] else 'no'}"
        signal = c["signal_per_rollout"].get("pilot_commit")
        r = c["regime"]
        rounds = r.get("pc_rounds_per_step")
        rows.append(f"| {name}{' (paper-matched)' if name == pm else ''} | {pc} "
                    f"| {ratio_text(signal)} | {_map_ratio(c['pc_vs_dapo'])} | {aa} "
                    f"| {percent(r.get('grpo_zero_variance'), 0)} | {decimal(rounds)} "
                    f"| {percent(r.get('pc_in_band'), 0)} |")
    return "\n".join(rows) + "\n"


RENDER = {"sample_efficiency": lambda res: sample_efficiency_block(_load("sample_efficiency.json", res)),
          "regime_map": lambda res: regime_map_block(_load("regime_map.json", res))}


def refresh(text: str, results: Path = RESULTS) -> tuple[str, list[str]]:
    """-> (text with every quoted block rendered anew, names of the blocks that changed)."""
    stale = []

    def one(m: re.Match) -> str:
        new = RENDER[m.group(2)](results)
        if new != m.group(3):
            stale.append(m.group(2))
        return m.group(1) + new + m.group(4)

    return BLOCK.sub(one, text), stale


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pcbench.reports.quoted", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", action="store_true", help="rewrite the stale blocks in place")
    args = p.parse_args(argv)
    bad = 0
    for doc in DOCS:
        path = REPO / doc
        if not path.exists():
            continue
        text, stale = refresh(path.read_text())
        for name in stale:
            print(f"{doc}: block {name} {'rewritten' if args.write else 'is stale'}")
        if stale and args.write:
            path.write_text(text)
        bad += len(stale) and not args.write
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
