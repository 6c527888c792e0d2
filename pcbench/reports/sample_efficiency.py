"""Scoring of the sample-efficiency benchmark: its run folders in, the report's numbers out.

`score_benchmark(main folders, A/A folders, out)` reads the folders (pcbench.analysis.run_frames), scores
rollouts-to-target at GRPO's best seed-mean val/acc and at the reference-budget target
(pcbench.analysis.targets), the A/A floor, accuracy at GRPO's budget, wall-clock per step and per
rollout, the issue's goals, and writes the raw curves (curves.csv), regime.csv and the regime
card (regime_card.md + figure) into `out`. Which jobs ran, and where, is pcbench.bench's business:
it adds the setup and the provenance and renders the report (pcbench.reports.sample_efficiency).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from pcbench.analysis.regime import build_card, card_md, warm_start_pools
from pcbench.analysis.regime_plot import draw_regime_card
from pcbench.analysis.run_frames import load_runs
from pcbench.analysis.scoring import N_BOOT
from pcbench.reports.sample_efficiency_tables import budget_accuracy, goals, rollouts_records, timing_records
from pcbench.analysis.targets import AA, aa_from_json, aa_record, curves_table, grpo_targets
from pcbench.rundir import atomic_write_text
from pcbench.analysis.methods import label
from pcbench.analysis.speedup_table import starved_line
from pcbench.analysis.warmstart_note import warmstart_notice
from pcbench.analysis.formats import (NA, accuracy_with_interval, fmt_rollouts, interval_text, md_table, percent,
                                      ratio_text, ratio_with_interval, rollouts_with_interval)

NOTES = [
    "- Cumulative rollouts come from the one ledger every allocator shares (pcbench/ledger.py); "
    "per-run values are in the .json (`per_run`, rtt = inf when censored).",
    "- The oracle measures each candidate's pass rate with extra rollouts the ledger does not see: "
    "it bounds selection at GRPO's cost, not every allocator (one that reuses rollouts can beat it).",
]


def score_benchmark(present: list[str], aa_present: list[str], out: Path, n_boot: int = N_BOOT) -> dict:
    """-> the report's scored fields (target, budget, records, timing, goals, per_run, warnings, targets,
    aa, reference_records, regime_checks, notes) of the main run folders `present` and the A/A
    folders `aa_present`; writes curves.csv, regime.csv and the regime card into `out`."""
    if not present:
        return {"target": None, "budget": None, "records": [], "timing": [], "goals": {}, "per_run": [],
                "warnings": ["no run folders"], "notes": NOTES}
    runs, metrics, warnings = load_runs(present)
    records, table, more = rollouts_records(runs, metrics, 0, n_boot)
    budget = budget_accuracy(metrics, records, 0, n_boot)
    extra, more_warn = benchmark_extras(runs, metrics, aa_present, out, n_boot)
    return {"target": records[0]["target"] if records else None, "budget": budget,
            "records": records, "timing": timing_records(metrics),
            "goals": goals(records, table, 0, n_boot),
            "per_run": json.loads(table.to_json(orient="records")) if table is not None else [],
            "warnings": warnings + more + more_warn, **extra, "notes": NOTES}


def benchmark_extras(runs, metrics, aa_present: list[str], out: Path, n_boot: int) -> tuple[dict, list[str]]:
    """Targets, the A/A records, the reference-target table; writes curves.csv, regime.csv and the
    regime card into `out`. -> (report fields, warnings)."""
    warnings, both = [], metrics
    if aa_present:
        _, aa_metrics, aa_warn = load_runs(aa_present)
        warnings += aa_warn
        both = pd.concat([metrics, aa_metrics.assign(method=AA)], ignore_index=True)
    targets = grpo_targets(metrics)
    extra = {"targets": targets, "aa": {name: aa_record(both, t, 0, n_boot) for name, t in targets.items()},
             "reference_records": []}
    if targets["reference"] is not None:
        extra["reference_records"], _, ref_warn = rollouts_records(runs, metrics, 0, n_boot,
                                                                   target=targets["reference"])
        warnings += [f"reference target: {w}" for w in ref_warn]
    curves_table(both).to_csv(out / "curves.csv", index=False)
    regime, summaries, checks = build_card(metrics)
    regime.to_csv(out / "regime.csv", index=False)
    atomic_write_text(out / "regime_card.md", card_md(summaries, checks, pools=warm_start_pools(runs)))
    draw_regime_card(regime, summaries, out)
    extra["regime_checks"] = checks
    return extra, warnings


GOAL_TEXT = {"pc_vs_grpo": f"{label('pilot_commit')} >= {{goal}}x fewer rollouts to target than {label('grpo')}",
             "pc_vs_dapo": f"{label('pilot_commit')} >= {{goal}}x fewer than {label('dapo')}",
             "bayes_vs_pc": f"{label('pilot_commit_bayes')} ahead of {label('pilot_commit')} (speedup > {{goal}}x)",
             "best_vs_oracle": "best allocator within {goal}x of the oracle"}


def rollouts_table(records: list[dict]) -> list[str]:
    lines = md_table(["method", "reached", "rollouts to target", "95% CI", "vs GRPO", "vs DAPO", "/ oracle",
                      "acc at GRPO's budget", "final acc", "best acc", "total rollouts"])
    for r in records:
        rtt, ci = rollouts_with_interval(r)
        lines.append(f"| {label(r['method'])} | {r['reached']}/{r['seeds']} | {rtt} | {ci} "
                     f"| {ratio_with_interval(r['speedup_vs_grpo'], r['speedup_vs_grpo_ci_low'], r['speedup_vs_grpo_ci_high'])} "
                     f"| {ratio_with_interval(r['speedup_vs_dapo'], r['speedup_vs_dapo_ci_low'], r['speedup_vs_dapo_ci_high'])} "
                     f"| {ratio_with_interval(r['ratio_to_oracle'], r['ratio_to_oracle_ci_low'], r['ratio_to_oracle_ci_high'])} "
                     f"| {accuracy_with_interval(r)} | {percent(r['final_val_acc'])} | {percent(r['best_val_acc'])} "
                     f"| {fmt_rollouts(r['cumulative_rollouts'])} |")
    return lines


def starved_lines(report: dict) -> list[str]:
    """Per method, the runs stopped because the allocator starved (none, or a report from before they
    were recorded: no lines), with their stop reasons from `per_run`."""
    reasons = {}
    for r in report.get("per_run", []):
        if r.get("status") == "starved":
            reasons.setdefault(r["method"], []).append(r.get("stop_reason") or "round_bound")
    lines = [f"- {starved_line(label(r['method']), r['starved'], r['seeds'], reasons.get(r['method'], ()))}"
             for r in report["records"] if r.get("starved")]
    return [*lines, ""] if lines else []


def _aa_one(name: str, rec: dict | None) -> str:
    if rec is None:
        return f"- {name} target: not measured (no A/A runs or no target)"
    rec = aa_from_json(rec)
    ratio = "not computable (a median is censored)" if rec["ratio"] is None else f"{rec['ratio']:.2f}x"
    verdict = "inside [0.80, 1.25]" if rec["resolves"] else "NOT inside [0.80, 1.25]"
    grpo_reached = sum(math.isfinite(v) for v in rec["grpo_rtt"])
    return (f"- {name} target {100 * rec['target']:.1f}%: GRPO (main seeds, {grpo_reached}/"
            f"{len(rec['grpo_rtt'])} reached) / GRPO (A/A seeds, {rec['reached']}/{rec['runs']} reached) "
            f"rollouts-to-target ratio {ratio}, 95% bootstrap CI "
            f"{interval_text(rec['low'], math.inf if rec['high_inf'] else rec['high'], missing_high=NA)}: {verdict}")


def aa_lines(report: dict) -> list[str]:
    """The A/A noise floor, printed above the method table: a ratio inside it is noise."""
    aa = report.get("aa") or {}
    if not aa:
        return []
    seeds = report.get("aa_seeds") or []
    return ["## A/A noise floor (GRPO vs GRPO on disjoint seeds)", "",
            f"GRPO on seeds {seeds[0]}..{seeds[-1]} scored like any method against the targets set by GRPO's "
            "main seeds. A method whose ratio to GRPO lies within this interval is not distinguishable from GRPO "
            "by this benchmark.", "", *[_aa_one(k, v) for k, v in aa.items()], ""] if seeds else []


def reference_lines(report: dict) -> list[str]:
    t = (report.get("targets") or {}).get("reference")
    if t is None or not report.get("reference_records"):
        return []
    return ["## Rollouts to target (reference-budget target)", "",
            f"Target {100 * t:.1f}%: GRPO's best seed-mean val/acc within the first 2/3 of the steps; every run has "
            "the whole horizon to reach it (pcbench/analysis/targets.py says why). Same columns as above.", "",
            *rollouts_table(report["reference_records"]), ""]


def regime_lines(report: dict) -> list[str]:
    checks = report.get("regime_checks") or []
    if not checks:
        return []
    out = ["## Regime (GRPO's runs; the full card: regime_card.md, regime_card.png)", ""]
    for c in checks:
        m = c["measured"]
        val = str(m) if isinstance(m, int) else (f"{100 * m:.2f} points" if ("se" in c["check"] or "gain" in c["check"])
                                                 else percent(m))
        out.append(f"- {c['check']}: {val} (goal {c['goal']}): {'met' if c['met'] else 'NOT met'}")
    return out + [""]


def timing_table(records: list[dict]) -> list[str]:
    lines = md_table(["method", "rollouts/step", "gen calls/step", "step s", "step vs GRPO", "generate s/step",
                      "ms/rollout", "gen ms/rollout", "gen tokens/s", "run wall s"])
    for r in records:
        rel = ratio_text(r["step_s_vs_grpo"])
        lines.append(f"| {label(r['method'])} | {r['rollouts_per_step']:.0f} | {r['gen_calls_per_step']:.2f} "
                     f"| {r['step_s']:.3f} | {rel} | {r['generate_s']:.3f} | {r['ms_per_rollout']:.2f} "
                     f"| {r['gen_ms_per_rollout']:.2f} | {r['gen_tokens_per_s']:,.0f} | {r['wall_s']:.0f} |")
    return lines


def goals_list(goals: dict) -> list[str]:
    lines = []
    for key in [k for k in GOAL_TEXT if k in goals]:  # fixed order: the .json stores keys sorted
        g = goals[key]
        verdict = {True: "met", False: "NOT met", None: "not measurable (censored or not run)"}[g["met"]]
        value = ratio_text(g["measured"])
        extra = f" (best: {label(g['method'])})" if g.get("method") else ""
        lines.append(f"- {GOAL_TEXT[key].format(goal=g['goal'])}: measured {value}{extra}: **{verdict}**")
    return lines


def sample_efficiency_md(report: dict) -> str:
    p, s = report["provenance"], report["setup"]
    rescored = p.get("rescored")
    target = report["target"]
    out = ["# Sample efficiency of rollout allocators (embedded task)", "", warmstart_notice(p), "",
           f"Commit `{p['commit']}` ({len(p['dirty_files'])} tracked files modified in the shared checkout at the "
           f"time), {p['date_utc']} UTC, {p['cpus']} CPUs, load average at start {p['loadavg_start']}.", "",
           f"Command: `{p['command']}`"
           + (f"; rescored without training by `{rescored['command']}` at `{rescored['commit']}`" if rescored else ""),
           "",
           f"Setup: {s['seeds']} seeds x {len(s['methods'])} methods"
           + (f" (GRPO: {s['baseline_seeds']} seeds)" if s.get("baseline_seeds", s["seeds"]) != s["seeds"] else "")
           + f", {s['steps']} steps, train batch "
           f"{s['train_batch']} prompts x n={s['n']}, model {s['model']}, data {s['data']}, {s['jobs']} parallel "
           f"run(s) with 1 torch thread each; overrides {s['overrides'] or 'none (config defaults)'}.", "",
           "Target (docs/method.md#rollouts-to-target): the best seed-averaged val/acc GRPO reaches = "
           + (NA if target is None else f"{100 * target:.1f}%")
           + ". Rollouts to target: cumulative rollouts (every generated rollout, discarded ones included) at a "
           "run's first evaluation at or above it; median over seeds, 'did not reach' when censored. 95% CIs: "
           "percentile bootstrap over seeds. vs GRPO / vs DAPO: their median / this median. / oracle: this median "
           "/ the oracle's (the oracle's pass-rate probes are not counted; see docs/allocators.md). "
           "acc at GRPO's budget: seed-mean val/acc of each run's last evaluation within "
           + (NA if report.get("budget") is None else f"{report['budget']:,.0f}")
           + " cumulative rollouts (GRPO's median final count), 95% bootstrap CI of the mean; final / best acc: "
           "median final val/acc, best seed-mean val/acc.", "",
           *aa_lines(report), "## Rollouts to target (paper target)", "", *rollouts_table(report["records"]), "",
           *starved_lines(report),
           *reference_lines(report), *regime_lines(report),
           "## Wall-clock", "",
           "Medians over seeds of per-run means. step s: steps without an evaluation; ms/rollout: those steps' "
           "time over their generated rollouts (generation + PPO update + allocator); generate s: the backend's "
           "generation calls only (the oracle's include its uncounted probes); gen calls/step: sampling rounds, "
           "each one batched generation call.", "", *timing_table(report["timing"]), "",
           "## The issue's goals", "", *goals_list(report["goals"]), ""]
    if report["failures"]:
        out += ["## Failed runs", ""] + [f"- {f['method']} seed {f['seed']}: {f['error']} (log: {f['log']})"
                                         for f in report["failures"]] + [""]
    if report.get("notes"):
        out += ["## Notes", "", *report["notes"], ""]
    return "\n".join(out)
