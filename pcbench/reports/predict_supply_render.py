"""results/bench/predict_supply.md from its .json (pcbench.reports.predict_supply builds both)."""

from __future__ import annotations


def _number(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def _stopped(r: dict) -> str:
    n = sum(r["stopped"].values())
    return f"{r['flag_measured']} ({n}/{r['runs']})" if n else "-"


def _step(r: dict) -> str:
    s = r["drain_step"] if r["flag_predicted"] == "DRAIN" else r["starve_step"]
    return f"{r['flag_predicted']} @{s}" if s is not None else "-"


def render(rep: dict) -> str:
    s, fit = rep["summary"], rep["fit"]
    cols = ["cell", "source", "rounds measured (mean; thirds)", "rounds predicted (mean; thirds)", "stopped (measured)",
            "flag predicted", "PC/GRPO measured", "PC/GRPO predicted", "error"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rep["cells"]:
        mt = " / ".join(_number(x) for x in r["measured_thirds"])
        pt = " / ".join(_number(x) for x in r["predicted_thirds"])
        lines.append("| " + " | ".join([
            r["cell"], r["source"], f"{_number(r['measured_rounds'])}; {mt}", f"{_number(r['predicted_rounds'])}; {pt}",
            _stopped(r), _step(r), _number(r["ratio_measured"], "{:.2f}x"), _number(r["ratio_predicted"], "{:.2f}x"),
            _number(r["ratio_error"], "{:.0%}")]) + " |")
    missed = ", ".join(s["starved_missed"]) or "none"
    false = ", ".join(s["false_flags"]) or "none"
    over = ", ".join(s["ratio_over_tolerance"]) or "none"
    tol = rep["ratio_tolerance"]
    return "\n".join([
        "# Pilot-Commit's supply, predicted before a run (leave one cell out)",
        "",
        "`python -m pcbench.reports.predict_supply` from committed files only: the regime map (8 cells), the "
        "paper-regime map (6 cells), the probes (results/bench/probes/). Model: pcbench/analysis/supply.py "
        "(band mass learnt out at a fitted rate per step, hard and learnt-near-solved prompts keeping a fitted "
        "share of pilots in the band, solved prompts evicted at epoch ends; rounds = max(1, 1 / (3 f))). Each "
        "row is projected from the cell's step-0 pool card and probe with rates and thresholds fitted on the "
        "other cells. Measured rounds: seed means per step (stopped runs leave the later steps), by thirds of "
        "the horizon; '-' where no PC run of the cell has per-step rows (p8-ladder-high's 5 runs all stopped "
        "and were not kept).",
        "",
        f"Fit on all cells (what `python -m pcbench.predict` uses): learn {fit['learn']:.4f} of the band per step "
        f"(at lr 1e-4), q_hard {fit['q_hard']}, q_near {fit['q_near']}, STARVE at projected rounds >= "
        f"{fit['starve']:.3f} x max_rounds, DRAIN when a pass over the active pool holds < {fit['margin']:.2f} "
        "batches of in-band prompts.",
        "",
        *lines,
        "",
        "## Criteria",
        "",
        f"- every cell whose PC runs stopped (starved or drained) flagged: {s['starved_flagged']} of "
        f"{s['starved_cells']} (missed: {missed})",
        f"- no other cell flagged: {len(s['false_flags'])} false flags of {s['clean_cells']} cells (flagged: {false})",
        f"- PC/GRPO ratio error <= {tol:.0%}: max {_number(s['ratio_error_max'], '{:.0%}')}, mean "
        f"{_number(s['ratio_error_mean'], '{:.0%}')} over {s['ratio_cells']} cells with a measured ratio (over: {over})",
        "",
    ])
