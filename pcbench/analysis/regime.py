"""The regime card: is this data in the regime where rollout allocation matters?

    python -m pcbench.analysis.regime RESULTS_DIR [RESULTS_DIR ...] [--out DIR]
    python -m pcbench.bench regime RESULTS_DIR ...     # the same command, kept as an alias

Reads any run folders (embedded or verl: both log the same allocator and ledger counters)
and reports, per method:
- per step, the shares of all-correct / all-wrong / mixed groups: the groups a method trained
  (`alloc/groups*`, logged for every allocator) and the groups it sampled before any filter
  (`alloc/sampled/<kind>/*`: GRPO's and DAPO's plain groups, Pilot-Commit's pilots);
- the pass-rate histogram of sampled groups over the first and the last steps;
- accuracy per validation set (`val/<set>/acc`) at the first and the last evaluation;
- how many prompts were once sampled all-wrong (PC: deferred) and later got a correct rollout;
- the pool after the warm start (embedded runs' summary.json): its pass-rate histogram and its
  pool card, per tier the share of prompts solved / near-solved / band / hard / never by exact
  pass rate at the RL settings (pcbench.pool_card).
It writes regime.csv (one row per run and step) and regime_card.md, and checks the issue's
regime targets on GRPO's runs (printed; they are facts about the data, not pass/fail of code).

Everything here is a pure function of the metrics frame of pcbench.analysis.run_frames.load_runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pcbench.analysis.formats import md_table, percent
from pcbench.pool_card import CLASS_NOTE, card_caption, card_md as pool_card_table
from pcbench.analysis.run_frames import ACC
from pcbench.ledger import PASS_BINS

EDGE_STEPS = 5  # "start" / "end" of a run: its first / last this many training steps
REGIME_COLUMNS = ("method", "seed", "step", "cumulative_rollouts", "groups", "all_correct", "all_wrong", "mixed",
                  "sampled_kind", "sampled", "sampled_all_correct", "sampled_all_wrong", "zero_seen",
                  "zero_later_solved", "rollouts_step", "rounds", "sampled_in_band", "signal", "pool_epochs")
# per step (docs/method.md#regime-map): rollouts_step generated, rounds = generation calls (sampling
# rounds), sampled_in_band = sampled groups with 1/8 <= p <= 3/4, signal = sum of p(1-p) over the
# trained groups, pool_epochs = prompts drawn so far / pool size (NaN in runs logged before them)
# what counts as "the groups a method sampled before filtering": PC's pilots, else plain groups
SAMPLED_KINDS = ("pilot", "plain")


def _col(frame: pd.DataFrame, key: str) -> pd.Series:
    return frame[key] if key in frame else pd.Series(np.nan, index=frame.index)


def sampled_kind(rows: pd.DataFrame) -> str | None:
    """The kind of sampled group a run screens: "pilot" when it piloted at all, else "plain"."""
    for kind in SAMPLED_KINDS:
        key = f"alloc/sampled/{kind}/groups"
        if key in rows and rows[key].fillna(0).sum() > 0:
            return kind
    return None


def regime_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, training step): trained-group and sampled-group counts (REGIME_COLUMNS)."""
    parts = []
    steps = metrics[metrics["step"] >= 1]
    for _, rows in steps.groupby("path", sort=True):
        rows = rows.sort_values("step")
        kind = sampled_kind(rows)
        pre = f"alloc/sampled/{kind}/" if kind else "alloc/sampled/none/"
        groups = _col(rows, "alloc/groups")
        right, wrong = _col(rows, "alloc/groups_all_correct"), _col(rows, "alloc/groups_all_wrong")
        parts.append(pd.DataFrame({
            "method": rows["method"], "seed": rows["seed"], "step": rows["step"],
            "cumulative_rollouts": rows["cumulative_rollouts"], "groups": groups, "all_correct": right,
            "all_wrong": wrong, "mixed": groups - right - wrong, "sampled_kind": kind or "",
            "sampled": _col(rows, pre + "groups").fillna(0), "sampled_all_correct": _col(rows, pre + "all_correct").fillna(0),
            "sampled_all_wrong": _col(rows, pre + "all_wrong").fillna(0),
            "zero_seen": _col(rows, "alloc/zero_seen"), "zero_later_solved": _col(rows, "alloc/zero_later_solved"),
            "rollouts_step": _col(rows, "rollouts/step"), "rounds": _col(rows, "rollouts/rounds"),
            "sampled_in_band": _col(rows, pre + "in_band"), "signal": _col(rows, "alloc/signal"),
            "pool_epochs": _col(rows, "alloc/pool_epochs"),
            **{f"hist/{label}": _col(rows, pre + f"hist/{label}").fillna(0) for *_, label in PASS_BINS}}))
    if not parts:
        return pd.DataFrame(columns=list(REGIME_COLUMNS))
    return pd.concat(parts, ignore_index=True)


def group_share(num: pd.Series, den: pd.Series) -> float:
    total = float(den.sum())
    return float(num.sum()) / total if total > 0 else math.nan


def histogram(rows: pd.DataFrame) -> dict[str, float]:
    """Share of sampled groups per pass-rate bin over `rows`."""
    counts = {label: float(rows[f"hist/{label}"].sum()) for *_, label in PASS_BINS}
    total = sum(counts.values())
    return {k: (v / total if total else math.nan) for k, v in counts.items()}


def per_set(metrics: pd.DataFrame, method: str) -> dict[str, tuple[float, float]]:
    """{set: (seed-mean acc at the first evaluation, at the last)} from val/<set>/acc and ood/<set>/acc."""
    evals = metrics[(metrics["method"] == method) & metrics[ACC].notna()]
    cols = [c for c in evals.columns if (c.startswith("val/") or c.startswith("ood/")) and c.endswith("/acc")
            and c != ACC and evals[c].notna().any()]
    out = {}
    for c in [ACC] + sorted(cols):
        mean = evals.groupby("step")[c].mean().dropna()
        if len(mean):
            out[c.removesuffix("/acc") if c != ACC else "val (all)"] = (float(mean.iloc[0]), float(mean.iloc[-1]))
    return out


def method_summary(table: pd.DataFrame, metrics: pd.DataFrame, method: str) -> dict:
    """Mean shares over a method's runs and steps, start/end histograms, per-set acc, deferred-then-solved."""
    rows = table[table["method"] == method]
    last = rows.groupby("seed")["step"].transform("max")
    start, end = rows[rows["step"] <= EDGE_STEPS], rows[rows["step"] > last - EDGE_STEPS]
    final = rows[rows["step"] == last]
    return {"method": method, "seeds": int(rows["seed"].nunique()), "steps": int(rows["step"].max()),
            "sampled_kind": rows["sampled_kind"].iloc[0] if len(rows) else "",
            "trained_all_correct": group_share(rows["all_correct"], rows["groups"]),
            "trained_all_wrong": group_share(rows["all_wrong"], rows["groups"]),
            "sampled_all_correct": group_share(rows["sampled_all_correct"], rows["sampled"]),
            "sampled_all_wrong": group_share(rows["sampled_all_wrong"], rows["sampled"]),
            "sampled_zero_var_start": group_share(start["sampled_all_correct"] + start["sampled_all_wrong"], start["sampled"]),
            "sampled_zero_var_end": group_share(end["sampled_all_correct"] + end["sampled_all_wrong"], end["sampled"]),
            "hist_start": histogram(start), "hist_end": histogram(end),
            "zero_seen": float(final["zero_seen"].mean()), "zero_later_solved": float(final["zero_later_solved"].mean()),
            "per_set": per_set(metrics, method)}


def regime_checks(table: pd.DataFrame, metrics: pd.DataFrame, method: str = "grpo") -> list[dict]:
    """The issue's regime targets measured on `method`'s runs (its trained groups are all it sampled)."""
    rows = table[table["method"] == method]
    evals = metrics[(metrics["method"] == method) & metrics[ACC].notna()]
    if rows.empty or evals.empty:
        return []
    zero = group_share(rows["all_correct"] + rows["all_wrong"], rows["groups"])
    right, wrong = group_share(rows["all_correct"], rows["groups"]), group_share(rows["all_wrong"], rows["groups"])
    mean = evals.groupby("step")[ACC].mean()
    gain, best_step, horizon = float(mean.max() - mean.iloc[0]), int(mean.idxmax()), int(mean.index.max())
    se = float(evals["val/acc_se"].max()) if "val/acc_se" in evals else math.nan
    return [
        {"check": "zero-variance groups (mean share)", "measured": zero, "goal": ">= 50%", "met": zero >= 0.5},
        {"check": "all-correct groups", "measured": right, "goal": ">= 15%", "met": right >= 0.15},
        {"check": "all-wrong groups", "measured": wrong, "goal": ">= 15%", "met": wrong >= 0.15},
        {"check": "seed-mean val/acc gain over step 0", "measured": gain, "goal": ">= 10 points", "met": gain >= 0.10},
        {"check": f"best evaluation step (horizon {horizon})", "measured": best_step, "goal": "in the second half",
         "met": best_step > horizon / 2},
        {"check": "largest val/acc_se of one evaluation", "measured": se, "goal": "<= 0.5 points",
         "met": bool(se <= 0.005) if math.isfinite(se) else None}]


def warm_start_pools(runs: pd.DataFrame | None) -> dict[str, dict]:
    """{data setup: pass-rate histogram of its pool after the warm start} from the runs' summary.json
    (details.warmstart, written by the embedded backend; absent for verl runs): one per setup."""
    import json

    out: dict[str, dict] = {}
    for _, run in (runs if runs is not None else pd.DataFrame(columns=["path", "data"])).iterrows():
        if run["data"] in out:
            continue
        path = Path(run["path"]) / "summary.json"
        try:
            ws = json.loads(path.read_text()).get("details", {}).get("warmstart", {})
        except (OSError, ValueError):
            continue
        if "histogram" in ws:
            out[run["data"]] = {"histogram": ws["histogram"], "per_tier": ws.get("per_tier", {}),
                                "in_band": ws.get("in_band"), "n": ws.get("n_rollouts"),
                                "card": ws.get("card")}  # None in runs from before the pool card
    return out


def pools_md(pools: dict[str, dict]) -> list[str]:
    if not pools:
        return []
    labels = list(next(iter(pools.values()))["histogram"])
    out = ["", "## The pool after the warm start (pass rates over n rollouts of 256 training prompts)", "",
           *md_table(["data", "n", *labels, "in the band [1/8, 3/4]", "per tier"])]
    for name, p in pools.items():
        tiers = ", ".join(f"{t} {percent(v)}" for t, v in p["per_tier"].items())
        out.append(f"| {name} | {p['n'] or '-'} | " + " | ".join(percent(p["histogram"].get(k)) for k in labels)
                   + f" | {percent(p['in_band'])} | {tiers} |")
    return out + pool_cards_md(pools)


def pool_cards_md(pools: dict[str, dict]) -> list[str]:
    """The pool card per data setup (the histogram's prompts, by their exact pass rates), for the
    pools whose warm-start report has one (embedded runs since the card; verl runs log none)."""
    cards = {name: p["card"] for name, p in pools.items() if p.get("card")}
    if not cards:
        return []
    out = ["", "## The pool card after the warm start (share of prompts per pass-rate class)", "",
           f"Classes: {CLASS_NOTE}."]
    for name, card in cards.items():
        out += ["", f"{name}: {card_caption(card)}", "", *pool_card_table(card["tiers"])]
    return out


def card_md(summaries: list[dict], checks: list[dict], title: str = "Regime card", pools: dict | None = None) -> str:
    """Markdown of the regime card (the numbers behind the figure)."""
    out = [f"# {title}", "",
           "Shares are over every step and seed of a method. trained: the groups it updated on "
           "(`alloc/groups*`); sampled: the groups it generated before any filter (plain groups; "
           f"Pilot-Commit's pilots of n/4 rollouts). start / end: its first / last {EDGE_STEPS} steps. "
           "p=0 later solved: prompts once sampled with every rollout wrong (for PC: deferred) that a later "
           "sample answered correctly at least once (seed mean at the end).", ""]
    if checks:
        out += ["## Regime targets (GRPO)", "", *md_table(["check", "measured", "goal", "met"])]
        for c in checks:
            m = c["measured"]
            val = f"{m}" if isinstance(m, int) else (f"{100 * m:.2f} points" if "se" in c["check"] or "gain" in c["check"]
                                                    else percent(m))
            out.append(f"| {c['check']} | {val} | {c['goal']} | {'yes' if c['met'] else 'NO'} |")
        out.append("")
    out += ["## Groups by reward variance", "",
            *md_table(["method", "seeds", "steps", "trained all-correct", "trained all-wrong", "sampled kind",
                       "sampled all-correct", "sampled all-wrong", "sampled zero-var start", "sampled zero-var end",
                       "p=0 seen", "p=0 later solved"])]
    for s in summaries:
        out.append(f"| {s['method']} | {s['seeds']} | {s['steps']} | {percent(s['trained_all_correct'])} "
                   f"| {percent(s['trained_all_wrong'])} | {s['sampled_kind'] or '-'} | {percent(s['sampled_all_correct'])} "
                   f"| {percent(s['sampled_all_wrong'])} | {percent(s['sampled_zero_var_start'])} "
                   f"| {percent(s['sampled_zero_var_end'])} | {s['zero_seen']:.0f} | {s['zero_later_solved']:.0f} |")
    labels = [label for *_, label in PASS_BINS]
    out += ["", "## Pass-rate histogram of sampled groups (start -> end)", "",
            *md_table(["method", *(f"p in {lab}" if "-" in lab else f"p={lab}" for lab in labels)])]
    for s in summaries:
        out.append(f"| {s['method']} | " + " | ".join(f"{percent(s['hist_start'][lab])} -> {percent(s['hist_end'][lab])}"
                                                  for lab in labels) + " |")
    sets = sorted({k for s in summaries for k in s["per_set"]}, key=lambda k: (k != "val (all)", k))
    out += ["", "## Accuracy per set, seed mean (first -> last evaluation; ood/* is not part of val/acc)", "",
            *md_table(["method", *sets])]
    for s in summaries:
        cells = [f"{percent(s['per_set'][k][0])} -> {percent(s['per_set'][k][1])}" if k in s["per_set"] else "-" for k in sets]
        out.append(f"| {s['method']} | " + " | ".join(cells) + " |")
    return "\n".join(out + pools_md(pools or {}) + [""])


def build_card(metrics: pd.DataFrame) -> tuple[pd.DataFrame, list[dict], list[dict]]:
    """-> (regime table, per-method summaries, GRPO's regime checks)."""
    from pcbench.analysis.scoring import method_order

    table = regime_table(metrics)
    summaries = [method_summary(table, metrics, m) for m in method_order(table["method"].unique())]
    return table, summaries, regime_checks(table, metrics)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="+", type=Path, help="run folders, or folders holding them (embedded or verl)")
    p.add_argument("--out", type=Path, default=None, help="write regime.csv, regime_card.md and the figure here")


def main(args) -> int:
    from pcbench.analysis.run_frames import load_runs

    runs, metrics, warnings = load_runs(args.results)
    for w in warnings:
        print(f"warning: {w}")
    if metrics is None or metrics.empty:
        print(f"no run folders with metrics under {', '.join(map(str, args.results))}")
        return 2
    table, summaries, checks = build_card(metrics)
    text = card_md(summaries, checks, pools=warm_start_pools(runs))
    print(text)
    if args.out is not None:
        from pcbench.analysis.regime_plot import draw_regime_card
        from pcbench.rundir import atomic_write_text

        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "regime.csv", index=False)
        atomic_write_text(args.out / "regime_card.md", text)
        for path in draw_regime_card(table, summaries, args.out):
            print(f"wrote {path}")
        print(f"wrote {args.out / 'regime.csv'} and {args.out / 'regime_card.md'}")
    return 0


def cli(argv: list[str] | None = None) -> int:
    """`python -m pcbench.analysis.regime`: the card of run folders, printed (and written with --out)."""
    parser = argparse.ArgumentParser(prog="python -m pcbench.analysis.regime", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(cli())
