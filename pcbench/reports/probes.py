"""results/bench/probes/probes.md: the probe table (design -> the criteria of conf/bench/probes.yaml, measured),
the plan's findings, the designs and each design's pool card, from probes.json (written by
`python -m pcbench.bench.probes run|score`)."""

from __future__ import annotations

from pcbench.analysis.formats import decimal, md_table, percent


def _points(gain) -> str:
    """A val/acc gain (best seed-mean evaluation over step 0's) in points."""
    return "-" if gain is None else f"{100 * gain:+.1f}"


def _mark(ok) -> str:
    return "" if ok is None else (" ok" if ok else " MISS")


def table_md(spec: dict, results: dict) -> list[str]:
    cols = ["design", "GRPO zero-var (all-correct / all-wrong)", "PC rounds (thirds)", "PC pilots in band (thirds)",
            "target (GRPO start -> best)", "val/acc gain GRPO / PC", "PC epochs at target (per seed)", "near-solved",
            "met"]
    out = md_table(cols)
    for name, m in results.items():
        if not m:
            out.append(f"| {name} | not run |" + " |" * (len(cols) - 2))
            continue
        met = m["met"]
        eps = ", ".join("-" if e is None else f"{e:.2f}" for e in m["pc_epochs_at_target"])
        out.append(" | ".join([
            f"| {name}",
            f"{percent(m['grpo_zero_variance'], 0)}{_mark(met['grpo_zero_variance'])} "
            f"({percent(m['grpo_all_correct'], 0)} / {percent(m['grpo_all_wrong'], 0)})",
            f"{decimal(m['pc_rounds'])}{_mark(met['pc_rounds'])} ({decimal(m.get('pc_rounds_t1'))} / {decimal(m.get('pc_rounds_t2'))} / "
            f"{decimal(m.get('pc_rounds_t3'))}{_mark(met['pc_rounds_last_third'])})",
            f"{percent(m.get('pc_in_band_t1'), 0)} / {percent(m.get('pc_in_band_t2'), 0)} / {percent(m.get('pc_in_band_t3'), 0)}",
            f"{decimal(m['target'])} ({decimal(m['grpo_start'])} -> best at step {m['grpo_best_step']})",
            f"{_points(m.get('grpo_gain'))} / {_points(m.get('pc_gain'))}",
            f"{decimal(m['pc_epochs_median'])}{_mark(met['epochs_at_target'])} ({eps})",
            f"{percent(m['near_solved'], 0)}{_mark(met['near_solved'])}",
            f"{sum(bool(v) for v in met.values())}/{len(met)} |"]))
    return out


def report_md(spec: dict, results: dict, cards: dict) -> str:
    from pcbench.pool_card import card_md

    c = spec["criteria"]
    lines = ["# Probes: task designs against the paper's regime (issue 43)", "",
             f"Short runs ({len(spec['seeds'])} seeds unless the design says more, x {spec['steps']} steps of {', '.join(spec['methods'])}) per design "
             f"(conf/bench/probes.yaml), common overrides `{' '.join(spec['common'])}`. Criteria: GRPO zero-variance "
             f"in [{c['grpo_zero_variance'][0]:.2f}, {c['grpo_zero_variance'][1]:.2f}] of trained groups; PC sampling "
             f"rounds per step <= {c['pc_rounds_max']} on average and <= {c['pc_rounds_last_third_max']} in the last "
             f"third; PC's pool epochs at the target (GRPO's best seed-mean val/acc in the probe) in "
             f"[{c['epochs_at_target'][0]}, {c['epochs_at_target'][1]}] (seed median); the pool card's near-solved "
             f"share <= {c['near_solved_max']:.2f} (exact pass rates, 256 pool prompts).", "",
             *spec.get("machine_note", "").strip().splitlines(), "", "Rerun: `" + spec["command"] + "`", "",
             *table_md(spec, results), "", *spec.get("findings", "").strip().splitlines(), "", "## Designs", ""]
    for name, d in spec["designs"].items():
        lines.append(f"- `{name}`: {d['note'].strip()} Overrides: `{' '.join(d['overrides'])}`")
    for name, card in cards.items():
        lines += ["", f"## Pool card of `{name}` (exact pass rates of the whole pool at T 1, top_p 1; "
                  f"{card['pool_size']} prompts, warm start {card['warmstart']})", "", *card_md(card["pool"]), "",
                  "By skill:", "", *card_md(card["pool_by_skill"]), "",
                  "Expected at step 0 (binomial from these rates): GRPO zero-variance "
                  f"{percent(card['expected']['grpo_zero_variance'], 0)}, fresh pilots in band "
                  f"{percent(card['expected']['pilot_in_band'], 0)}, PC rounds {card['expected']['pc_rounds_now']:.2f}."]
    return "\n".join(lines) + "\n"
