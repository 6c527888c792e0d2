"""The warm start's regime under float noise (pcbench.bench.warmstart_spread runs it):
warmstart_spread.{md,json} over the pool cards (pcbench.pool_card) of several warm starts."""

from __future__ import annotations

import json
from pathlib import Path

from pcbench.analysis.formats import md_table
from pcbench.pool_card import CLASS_NOTE, CLASSES, pool_card  # noqa: F401 (CLASSES, pool_card: moved there)

TIERS = ("add22", "add33", "add44")


def _row(r: dict) -> str:
    if "error" in r:
        return f"| {r['design']} | {r['seed']} | {r['capability']} | failed: {r['error']} |"
    pool = r["pool"]
    tiers = " / ".join(f"{pool[t]['mean']:.3f}" for t in TIERS if t in pool)
    a = pool["all"]
    return (f"| {r['design']} | {r['seed']} | {r['capability']} ({r['machine']['capability']}) | {_steps_cell(r)} | "
            f"`{r['digest'][:8]}` | {tiers} | {a['solved']:.0%} | {a['near_solved']:.0%} | {a['band']:.0%} | "
            f"{a['hard']:.0%} | {a['never']:.0%} | {_in_band(pool, 'add33')} | {r['val']['all']['mean']:.3f} |")


def _in_band(pool: dict, tier: str) -> str:
    return f"{pool[tier]['band']:.0%}" if tier in pool else "-"


STAGES = (("prelude_steps", "pre"), ("sft_steps", ""), ("consolidation_steps", "cons"), ("top_up_steps", "top-up"))
# what each design (a choice of conf/model/warmstart/, pcbench/bench/warmstart_spread.py runs them) is;
# rows of other designs show their overrides
DESIGN_NOTES = {
    "prelude": "model/warmstart=prelude, the default since 2026-12-07: first 3,000 steps on add11, add21, add22, "
               "add32 alone with lr 1e-3 -> 0, then the mixed SFT at lr 3e-4 until an exact probe, read every 2 "
               "steps, finds add33 at 0.4",
    "stop_only": "model/warmstart=stop_only, the default before 2026-12-07: SFT on the mix at lr 1e-3 until a "
                 "sampled 64 x 8 probe every 20 steps finds add33 at 0.4",
    "three_stage": "model/warmstart=three_stage: stop_only's stop, then 2,000 consolidation steps on add11, add21, "
                   "add22, add32 with lr 3e-4 -> 0, then mixed SFT at lr 3e-5 until an exact probe reads add33 at "
                   "0.4 again",
}


def _steps(r: dict) -> int:
    return sum(int(r.get(k) or 0) for k, _ in STAGES)


def _steps_cell(r: dict) -> str:
    """'1,240', '1,240 + 2,000 cons + 36 top-up' or '1,500 pre + 820' (the stages that took a step)."""
    return " + ".join(f"{int(r.get(k) or 0):,}" + (f" {label}" if label else "") for k, label in STAGES
                      if int(r.get(k) or 0) or not label)


def _design_note(design: str, rows: list[dict]) -> str:
    if design in DESIGN_NOTES:
        return DESIGN_NOTES[design]
    first = next(r for r in rows if r["design"] == design)
    return "overrides " + (", ".join(o for o in first.get("overrides", []) if not o.startswith("model.warmstart.seed="))
                           or "none")


def _spread(rows: list[dict], design: str) -> str:
    ok = [r for r in rows if r.get("design") == design and "error" not in r]
    if not ok:
        return f"- {design}: no finished warm start"
    def rng(vals):
        return f"{min(vals):.3f}-{max(vals):.3f} (range {max(vals) - min(vals):.3f})"
    steps = [_steps(r) for r in ok]
    parts = [f"SFT steps {min(steps):,}-{max(steps):,}"]
    parts += [f"{t} {rng([r['pool'][t]['mean'] for r in ok])}" for t in TIERS if t in ok[0]["pool"]]
    parts += [f"pool solved {rng([r['pool']['all']['solved'] for r in ok])}",
              f"band {rng([r['pool']['all']['band'] for r in ok])}",
              f"val/acc (exact) {rng([r['val']['all']['mean'] for r in ok])}"]
    return f"- **{design}** ({len(ok)} warm starts): " + "; ".join(parts)


def write_report(rows: list[dict], meta: dict, out: Path) -> None:
    (out / "warmstart_spread.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    designs = list(dict.fromkeys(r["design"] for r in rows))
    said = "; ".join(f"`{d}`: {_design_note(d, rows)}" for d in designs)
    lines = ["# Warm-start spread: the regime under float noise, by warm-start design", "",
             f"`{meta['command']}` at {meta['commit'][:7]}, {meta['date_utc']} UTC, {meta['wall_s']:.0f} s "
             f"({meta['jobs']} at once, {meta['cpus']} CPUs, load at start {meta['loadavg_start']}); "
             f"machine: {rows[0].get('machine', {}).get('cpu', '?')}, torch {meta['torch']}."
             + (f" Note: {meta['note']}." if meta.get("note") else "")
             + "".join(f" With the warm starts of `{m['command']}` at {m['commit'][:7]}, {m['date_utc']} UTC, "
                       f"{m['wall_s']:.0f} s ({m['jobs']} at once, load at start {m['loadavg_start']})."
                       for m in meta.get("earlier", [])), "",
             "Exact pass rates at the RL sampling settings (T 1.0, top_p 1.0) on the 2,000 pool prompts; classes: "
             f"{CLASS_NOTE}. {said}. 'SFT steps' shows each stage that ran (pre: prelude, cons: consolidation, "
             "top-up). Rows with a capability other than pinned ran with PCBENCH_NUMERICS=native (torch's products).", "",
             "## Spread", "", *[_spread(rows, d) for d in designs], "",
             "## Every warm start", "",
             *md_table(["design", "SFT order", "capability (seen)", "SFT steps", "digest", "pool add22 / add33 / add44",
                        "solved", "near", "band", "hard", "never", "add33 in band", "val (exact)"]),
             *[_row(r) for r in rows], ""]
    (out / "warmstart_spread.md").write_text("\n".join(lines))
