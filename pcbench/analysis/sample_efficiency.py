"""Scoring of the sample-efficiency benchmark: its run folders in, the report's numbers out.

`score_benchmark(main folders, A/A folders, out)` reads the folders (pcbench.analysis.runs), scores
rollouts-to-target at GRPO's best seed-mean val/acc and at the reference-budget target
(pcbench.analysis.targets), the A/A floor, accuracy at GRPO's budget, wall-clock per step and per
rollout, the issue's goals, and writes the raw curves (curves.csv), regime.csv and the regime
card (regime_card.md + figure) into `out`. Which jobs ran, and where, is pcbench.bench's business:
it adds the setup and the provenance and renders the report (pcbench.analysis.bench_md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pcbench.analysis.regime import build_card, card_md, warm_start_pools
from pcbench.analysis.regime_plot import draw_regime_card
from pcbench.analysis.runs import load_runs
from pcbench.analysis.scoring import N_BOOT
from pcbench.analysis.tables import budget_accuracy, goals, rollouts_records, timing_records
from pcbench.analysis.targets import AA, aa_record, curves_table, grpo_targets
from pcbench.rundir import atomic_write_text

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
