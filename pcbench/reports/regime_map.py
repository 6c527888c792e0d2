"""The regime map's outputs: the tidy per-cell frames read from run folders (merged into the
committed regime_map_*.csv), regime_map.json / .md next to the CSVs, and the heatmap
(paper_figures/regime_map.{png,pdf,csv}): PC/GRPO per cell with its interval and A/A verdict,
annotated with PC's sampling rounds per step and the in-band share of its fresh pilots.

Which cells exist and which runs they hold is the grid's business (pcbench/bench/regime_map.py):
it hands this module run folders, cell names and their knob levels."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from pcbench.analysis.formats import (NA, decimal, interval_text, md_table, percent, ratio_entry_text,
                                      ratio_text, ratio_with_interval)
from pcbench.analysis.map_scoring import criteria_met, score_map
from pcbench.analysis.methods import label
from pcbench.analysis.regime import regime_table
from pcbench.analysis.speedup_table import starved_line
from pcbench.analysis.run_frames import failed_runs
from pcbench.analysis.targets import AA, AA_BAND, curves_table
from pcbench.reports.regime_map_by_target import by_target
from pcbench.analysis.warmstart_note import warmstart_notice
from pcbench.rundir import atomic_write_json, atomic_write_text


def report_md(report: dict) -> str:
    grid, cells = report["grid"], report["cells"]
    pm = grid["paper_matched"]
    out = [f"# {grid.get('title', 'Regime map: where does Pilot-Commit pay off?')}", "", warmstart_notice(report.get("provenance")), "",
           f"Grid `{report['grid_path']}` (committed before the runs). Seeds per cell: DAPO and Pilot-Commit "
           f"{grid['seeds']}, GRPO {grid['grpo_seeds']} + {grid['aa_seeds']} for the A/A. Target per cell: GRPO's best "
           f"seed-mean val/acc. Ratios: median rollouts-to-target of the baseline over the method's, 95% bootstrap "
           f"interval. A cell resolves when its A/A interval lies inside [{AA_BAND[0]}, {AA_BAND[1]}]; a cell that "
           "does not makes no claim.", "",
           *md_table(["cell", *grid["knobs"], "runs", "target", "A/A", "resolves", "PC vs GRPO", "PC vs GRPO (survival)",
                      "signal per rollout", "PC vs DAPO", "GRPO zero-var", "PC rounds/step", "PC pilots in band",
                      "PC epochs at target"])]
    for name, c in cells.items():
        levels = c["levels"]
        runs = "complete" if c["runs"]["complete"] else "partial: " + ", ".join(f"{k} {v}" for k, v in c["runs"]["counts"].items())
        if c["status"] != "scored":
            out.append(f"| {name} | " + " | ".join(levels.values()) + f" | {c['status']} |" + " |" * 12)
            continue
        r = c["regime"]
        out.append(f"| {name} | " + " | ".join(levels.values()) + f" | {runs} | {percent(c['target'], 0)} | {ratio_entry_text(c['aa'])} "
                   f"| {'yes' if c['aa']['resolves'] else 'NO'} | {ratio_entry_text(c['pc_vs_grpo'])} | {ratio_entry_text(c.get('survival', {}).get('pc_vs_grpo'), 'speedup')} "
                   f"| {ratio_text(c['signal_per_rollout'].get('pilot_commit'))} | {ratio_entry_text(c['pc_vs_dapo'])} "
                   f"| {percent(r['grpo_zero_variance'], 0)} | {decimal(r['pc_rounds_per_step'])} | {percent(r['pc_in_band'], 0)} "
                   f"| {decimal(r['pc_epochs_at_target'])} |")
    out += ["", "## Signal per rollout vs measured speedup over GRPO", "",
            "Signal per rollout = (learning signal per step / GRPO's) / (rollouts per step / GRPO's), the signal being the "
            "sum of p(1-p) over a step's trained groups; means over each method's seeds and steps (per run: the .json).",
            "", *md_table(["cell", "method", "signal / GRPO's", "rollouts / GRPO's", "signal per rollout", "measured"])]
    for name, c in cells.items():
        if c["status"] != "scored":
            continue
        for method, key in (("pilot_commit", "pc_vs_grpo"), ("dapo", "dapo_vs_grpo")):
            if method in c["signal_per_rollout"]:
                out.append(f"| {name} | {method} | {decimal(c['signal_ratio'].get(method))} | {decimal(c['rollouts_ratio'].get(method))} "
                           f"| {ratio_text(c['signal_per_rollout'].get(method))} | {ratio_entry_text(c[key])} |")
    for name in pm.get("cells") or [pm["cell"]]:
        out += ["", f"## Pre-registered paper-matched cell: `{name}`", "", *aiming_lines(cells.get(name, {}), pm["criteria"],
                                                                                     (grid.get("predictions") or {}).get(name))]
    out += ["", "Cells meeting every paper-matched criterion: "
            + (", ".join(report["paper_matched"]["cells_meeting"]) or "none"), ""]
    if grid.get("goal"):
        hit = [n for n, c in cells.items() if c.get("goal_met")]
        out += [f"Pre-registered goal ({', '.join(f'{k} >= {v}x' for k, v in grid['goal'].items())}, each interval "
                f"above 1): " + (", ".join(hit) or "met by no cell"), ""]
    out += starved_lines(cells) + target_lines(cells)
    if report["failures"]:
        out += ["## Failed runs", ""] + [f"- {f['method']} seed {f['seed']}: {f['error']}" for f in report["failures"]]
    return "\n".join(out + [""])


def aiming_lines(c: dict, crit: dict, predicted: dict | None) -> list[str]:
    """One aiming cell: each pre-registered criterion (goal, measured, met), the registered prediction
    beside the measurement, and the ratios."""
    if c.get("status") != "scored":
        return [f"not scored yet ({c.get('status', 'absent')})"]
    r, met, pred = c["regime"], c["met"], predicted or {}
    def p(key, fmt):  # the registered prediction of one quantity, "-" where none was registered
        return "-" if pred.get(key) is None else fmt(pred[key])
    rows = [("GRPO zero-variance share", str(crit["grpo_zero_variance"]), p("grpo_zero_variance", lambda v: percent(v, 0)),
             percent(r["grpo_zero_variance"], 0), met["grpo_zero_variance"]),
            ("PC sampling rounds per step", f"<= {crit['pc_rounds_per_step_max']}", p("pc_rounds_per_step", decimal),
             decimal(r["pc_rounds_per_step"]), met["pc_rounds_per_step"]),
            ("PC pool epochs at target", str(crit["epochs_at_target"]), p("pc_epochs_at_target", decimal),
             decimal(r["pc_epochs_at_target"]), met["epochs_at_target"])]
    if "near_solved_max" in crit:
        rows.append(("pool near-solved share (card)", f"<= {crit['near_solved_max']}", p("near_solved", lambda v: percent(v, 0)),
                     percent(r.get("near_solved"), 0), met.get("near_solved")))
    out = [*md_table(["criterion", "goal", "predicted (registered)", "measured", "met"], rows), ""]
    sv = c.get("survival", {})
    out.append("Survival (Weibull AFT speedup, Wald 95%; censored runs count to their last evaluation): "
               f"PC vs GRPO {ratio_entry_text(sv.get('pc_vs_grpo'), 'speedup')}, PC vs DAPO {ratio_entry_text(sv.get('pc_vs_dapo'), 'speedup')}, A/A {ratio_entry_text(sv.get('aa'), 'speedup')}.")
    out.append(f"PC vs GRPO {ratio_entry_text(c['pc_vs_grpo'])} (registered prediction {p('pc_vs_grpo', ratio_text)}), "
               f"vs DAPO {ratio_entry_text(c['pc_vs_dapo'])} (registered {p('pc_vs_dapo', ratio_text)}); A/A {ratio_entry_text(c['aa'])} "
               f"({'resolves' if c['aa']['resolves'] else 'does not resolve'}).")
    return out


def target_lines(cells: dict) -> list[str]:
    """The exploratory table of pcbench.reports.regime_map_by_target: each scored cell at lower targets."""
    rows = [(n, r) for n, c in cells.items() if c["status"] == "scored" for r in c.get("by_target", [])]
    if not rows:
        return []
    out = ["## Exploratory, not pre-registered: the same runs at lower targets", "",
           "Target = GRPO's seed-mean val/acc at its first evaluation + fraction x (its peak - that); fraction 1 is "
           "the registered target. Which target would have resolved the A/A, and whether the verdicts depend on it "
           "(pcbench/reports/regime_map_by_target.py). No claim rests on this table.", "",
           *md_table(["cell", "fraction", "target", "A/A", "resolves", "PC vs GRPO", "PC vs DAPO"])]
    out += [f"| {n} | {r['fraction']:.2f} | {100 * r['target']:.1f}% | {ratio_entry_text(r['aa'])} | {'yes' if r['aa']['resolves'] else 'NO'} "
            f"| {ratio_entry_text(r['pc_vs_grpo'])} | {ratio_entry_text(r['pc_vs_dapo'])} |" for n, r in rows]
    return out + [""]


def starved_lines(cells: dict) -> list[str]:
    """One line per cell and method with runs stopped because the allocator starved (none: no section)."""
    lines = [f"- {name}: " + starved_line(label(m), s["starved"], s["runs"], s["reasons"])
             for name, c in cells.items() for m, s in c.get("starved", {}).items()]
    return ["## Runs stopped because the allocator starved", "", *lines, ""] if lines else []


def run_counts(curves: pd.DataFrame, grid: dict) -> dict:
    """Scored runs (finished or starved) per method (and the A/A) in one cell against the grid's plan;
    complete when all are in."""
    have = curves.groupby(["method", "seed_set"])["seed"].nunique().to_dict() if len(curves) else {}
    plan = {("grpo", "main"): int(grid["grpo_seeds"]), ("grpo", "aa"): int(grid["aa_seeds"]),
            **{(m, "main"): int(grid["seeds"]) for m in grid["methods"] if m != "grpo"}}
    counts = {f"{m}{'_aa' if s == 'aa' else ''}": f"{have.get((m, s), 0)}/{n}" for (m, s), n in plan.items()}
    return {"counts": counts, "complete": all(have.get(k, 0) >= n for k, n in plan.items())}


def heatmap_table(report: dict) -> pd.DataFrame:
    rows = []
    for name, c in report["cells"].items():
        row = {"cell": name, **c["levels"], "status": c["status"]}
        if c["status"] == "scored":
            pc = c["pc_vs_grpo"]
            row.update(pc_vs_grpo=pc["ratio"], low=pc["low"], high=pc["high"], aa_resolves=c["aa"]["resolves"],
                       complete=c["runs"]["complete"],
                       signal_per_rollout=c["signal_per_rollout"].get("pilot_commit"), rounds=c["regime"]["pc_rounds_per_step"],
                       in_band=c["regime"]["pc_in_band"])
            sv = (c.get("survival") or {}).get("pc_vs_grpo") or {}
            row.update(survival=sv.get("speedup"), survival_low=sv.get("low"), survival_high=sv.get("high"))
        rows.append(row)
    return pd.DataFrame(rows)


def goal_met(cell: dict, goal: dict | None) -> bool | None:
    """The grid's pre-registered success (`goal`: {pc_vs_grpo: 1.5, pc_vs_dapo: 2.3}): every named ratio at
    least its goal with the interval's low end above 1; None when the grid sets no goal."""
    if not goal:
        return None
    def ok(r, at_least):
        return bool(r and r.get("ratio") is not None and r["ratio"] >= at_least and (r.get("low") or 0) > 1)
    return all(ok(cell.get(k), v) for k, v in goal.items())


def draw_heatmap(table: pd.DataFrame, knobs: list[str], out_dir: Path, name: str = "regime_map") -> list[Path]:
    """Rows: the first knob's levels; columns: the other knobs' level combinations. Colour: log2 PC/GRPO."""
    import matplotlib.colors as mcolors
    import numpy as np

    from pcbench.analysis.plotstyle import save_figure
    import matplotlib.pyplot as plt

    first, rest = knobs[0], knobs[1:]
    row_levels = list(dict.fromkeys(table[first]))
    col_keys = list(dict.fromkeys(tuple(r[k] for k in rest) for _, r in table.iterrows()))
    fig, ax = plt.subplots(figsize=(2.3 * len(col_keys) + 1.5, 1.7 * len(row_levels) + 1.0))
    val = np.full((len(row_levels), len(col_keys)), np.nan)
    for _, r in table.iterrows():
        i, j = row_levels.index(r[first]), col_keys.index(tuple(r[k] for k in rest))
        if r["status"] == "scored" and r.get("pc_vs_grpo") is not None and not pd.isna(r.get("pc_vs_grpo")):
            val[i, j] = math.log2(r["pc_vs_grpo"])
        text = r["status"]
        if r["status"] == "scored":
            ratio = ratio_text(r.get("pc_vs_grpo"))
            ci = interval_text(r.get("low"), r.get("high"), missing_high=NA)
            if ratio == NA:  # a censored median has no ratio; the survival fit still uses every run
                ratio, ci = "median censored", ("" if pd.isna(r.get("survival")) else
                                                "\nsurvival " + ratio_with_interval(r["survival"], r["survival_low"], r["survival_high"]))
            verdict = "ok" if r["aa_resolves"] else ("NO" if r["complete"] else "partial runs")
            text = (f"{ratio} {ci}\nA/A {verdict}"
                    f"\nrounds {decimal(r.get('rounds'), 1)}, "
                    f"in band {percent(r.get('in_band'), 0)}")
        ax.text(j, i, text, ha="center", va="center", fontsize=7)
    ax.imshow(np.ma.masked_invalid(val), cmap="RdBu", norm=mcolors.TwoSlopeNorm(0.0, -1.5, 1.5), aspect="auto")
    ax.set_xticks(range(len(col_keys)), ["/".join(k) for k in col_keys])
    ax.set_yticks(range(len(row_levels)), row_levels)
    ax.set_xlabel(" / ".join(rest))
    ax.set_ylabel(first)
    ax.set_title("Pilot-Commit vs GRPO, rollouts to target (blue: PC ahead)")
    return save_figure(fig, table, out_dir, name)


def write_outputs(grid: dict, levels: dict[str, dict[str, str]], curves: pd.DataFrame, regime: pd.DataFrame,
                  pools: pd.DataFrame, args, meta: dict, results: list[dict]) -> dict:
    """Score every cell of `levels` ({cell: {knob: level}}, the grid's order) from the frames and write
    args.out/regime_map.{json,md} and the heatmap in args.figures (when a cell is scored). -> the report."""
    scores = score_map(curves, regime, list(levels), args.n_boot)
    for name, c in scores.items():
        c["levels"] = levels[name]
        own = curves[curves["cell"] == name]
        c["runs"] = run_counts(own, grid)
        if c["status"] == "scored":
            c["by_target"] = by_target(own, args.n_boot)
        if c["status"] == "scored" and not c["runs"]["complete"]:
            c["aa"]["resolves"] = False  # a cell short of its planned runs makes no claim either
            for r in c["by_target"]:
                r["aa"]["resolves"] = False
        c["pool"] = {r["key"]: r["value"] for _, r in pools[pools["cell"] == name].iterrows()} if len(pools) else {}
    pm, stem = grid["paper_matched"], grid.get("stem", "regime_map")
    for c in scores.values():
        if c["status"] == "scored":
            c["regime"]["near_solved"] = c["pool"].get("card/near_solved")
            c["met"] = criteria_met(c["regime"], pm["criteria"])
            c["goal_met"] = goal_met(c, grid.get("goal"))
    meeting = [n for n, c in scores.items() if c["status"] == "scored" and all(v is True for v in c["met"].values())]
    aiming = pm.get("cells") or [pm["cell"]]
    report = {"provenance": meta, "grid_path": str(args.grid), "grid": grid, "cells": scores,
              "paper_matched": {"cell": aiming[0], "cells": aiming, "cells_meeting": meeting,
                                "met": scores.get(aiming[0], {}).get("met", {})},
              "failures": failed_runs(results), "runs": results}
    atomic_write_json(args.out / f"{stem}.json", report)
    atomic_write_text(args.out / f"{stem}.md", report_md(report))
    if any(c["status"] == "scored" for c in scores.values()):
        args.figures.mkdir(parents=True, exist_ok=True)
        draw_heatmap(heatmap_table(report), list(grid["knobs"]), args.figures, stem)
    return report


def tidy_cell(name: str, levels: dict[str, str], main: list[str], aa: list[str]) -> tuple | None:
    """(curves rows, regime rows, cell name, pool rows) of one cell's run folders; None if none.
    main / aa: the cell's finished and starved folders (pcbench.bench.launch.is_scored), never a
    crashed or running one (its truncated curve would count as censored). A starved run's curve and
    regime rows are its steps up to the stop; `stopped` in the curves names why (empty: finished)."""
    from pcbench.analysis.run_frames import load_runs

    if not main:
        return None
    runs, metrics, _ = load_runs(main)
    both, stops = metrics, _stops(runs, "main")
    if aa:
        aa_runs, aa_metrics, _ = load_runs(aa)
        both = pd.concat([metrics, aa_metrics.assign(method=AA)], ignore_index=True)
        stops.update(_stops(aa_runs.assign(method="grpo"), "aa"))
    curves = curves_table(both)
    curves["stopped"] = [stops.get(k) for k in zip(curves["method"], curves["seed_set"], curves["seed"])]
    regime = regime_table(metrics).assign(cell=name, **levels)
    return curves.assign(cell=name, **levels), regime, name, pool_rows(name, main)


def _stops(runs: pd.DataFrame, seed_set: str) -> dict:
    """{(method, seed_set, seed): stop reason} of the starved runs (the curves' run key in a cell)."""
    starved = runs[runs["stop_reason"].notna()]
    return {(m, seed_set, s): r for m, s, r in zip(starved["method"], starved["seed"], starved["stop_reason"])}


def merge(path: Path, parts: list[pd.DataFrame], replaced: set[str]) -> pd.DataFrame:
    """The committed CSV at `path` with the rows of `replaced` cells swapped for `parts`."""
    # round_trip: to_csv writes each float's shortest repr, and only this parser reads every one back to
    # the same double; pandas' default fast parser is off by an ulp on some, so a cell scored from the
    # CSV would differ in the last digit from the same cell scored from its run folders
    old = pd.read_csv(path, float_precision="round_trip") if path.exists() else pd.DataFrame(columns=["cell"])
    keep = old[~old["cell"].isin(replaced)]
    frames = [f for f in [keep, *parts] if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else old


def pool_rows(cell: str, folders: list[str]) -> pd.DataFrame:
    """The pool's pass rates after the warm start (summary.json details.warmstart of the cell's first
    finished run): rows cell, key (histogram/<bin>, per_tier/<tier>, in_band, sft_steps), value."""
    for f in folders:
        path = Path(f) / "summary.json"
        if not path.exists():
            continue
        ws = json.loads(path.read_text()).get("details", {}).get("warmstart", {})
        if "histogram" not in ws:
            continue
        rows = [(f"histogram/{k}", v) for k, v in ws["histogram"].items()]
        rows += [(f"per_tier/{k}", v) for k, v in ws.get("per_tier", {}).items()]
        rows += [(k, ws[k]) for k in ("in_band", "sft_steps", "mean_pass_rate") if k in ws]
        # the pool card's class shares over all probed prompts (exact at the RL settings; absent before v2)
        rows += [(f"card/{k}", v) for k, v in ws.get("card", {}).get("tiers", {}).get("all", {}).items() if k != "n"]
        return pd.DataFrame([{"cell": cell, "key": k, "value": v} for k, v in rows])
    return pd.DataFrame(columns=["cell", "key", "value"])
