"""Render scoring records (pcbench.analysis.scoring.score) as markdown, csv, latex or json text."""

from __future__ import annotations

import csv
import io
import json

from pcbench.analysis.methods import label
from pcbench.analysis.formats import NA, fmt_rollouts, md_table, percent, ratio_with_interval, rollouts_with_interval
from pcbench.analysis.scoring import N_BOOT
COLUMNS = ("model", "data", "target", "method", "reached", "rollouts to target", "95% CI",
           "vs GRPO", "vs DAPO", "final acc", "final rollouts")
UNFINISHED_MARK = "*"


def _speedup_text(rec: dict, name: str) -> str:
    """speedup_vs_<name> with its interval, one decimal: '1.3x [0.9, inf]'."""
    key = f"speedup_vs_{name}"
    return ratio_with_interval(rec[key], rec[f"{key}_ci_low"], rec[f"{key}_ci_high"], digits=1)


def table_cells(rec: dict) -> list[str]:
    """One row of the human-readable table, in COLUMNS order."""
    reached = NA if rec["reached"] is None else f"{rec['reached']}/{rec['seeds']}"
    if rec.get("unfinished"):
        reached += UNFINISHED_MARK
    return [rec["model"], rec["data"], percent(rec["target"]), label(rec["method"]),
            reached, *rollouts_with_interval(rec), _speedup_text(rec, "grpo"), _speedup_text(rec, "dapo"),
            percent(rec["final_val_acc"]), fmt_rollouts(rec["cumulative_rollouts"])]


STOP_TEXT = {"round_bound": "stopped by the round bound (method.max_rounds)",
             "pool_exhausted": "stopped when an epoch of active prompts could not fill a batch"}


def starved_line(who: str, starved: int, runs: int, reasons=()) -> str:
    """"Pilot-Commit: 4 of 5 runs stopped by the round bound (method.max_rounds), counted as censored
    from their last evaluation". reasons: the runs' stop reasons (rundir.STOPPED), one per run."""
    kinds = sorted(set(reasons)) or ["round_bound"]
    how = " or ".join(STOP_TEXT.get(k, f"stopped ({k})") for k in kinds)
    return (f"{who}: {starved} of {runs} runs {how}, counted as censored from their last evaluation "
            "unless they had reached the target")


def footnote(records: list[dict], seed: int, n_boot: int) -> str:
    unfinished = sum(r.get("unfinished") or 0 for r in records)
    starved = sum(r.get("starved") or 0 for r in records)
    mark = (f" {UNFINISHED_MARK} counts {unfinished} unfinished run(s) (no finished summary.json) as they stand."
            if unfinished else "")
    mark += (f" {starved} run(s) stopped because their allocator starved; each counts with its evaluations "
             "up to the stop (censored from the last one unless it had reached the target)." if starved else "")
    return ("Rollouts to target: median over seeds of cumulative rollouts at the first evaluation with "
            "val/acc >= target (censored seeds count as never; 'did not reach' when the median is censored). "
            f"Intervals: 95% percentile bootstrap over seeds (seed {seed}, {n_boot} resamples); "
            "speedup = comparator median / method median." + mark)


def to_markdown(records: list[dict], seed: int = 0, n_boot: int = N_BOOT) -> str:
    lines = md_table(COLUMNS, ([c.replace("|", "\\|") for c in table_cells(r)] for r in records))
    return "\n".join(lines) + "\n\n" + footnote(records, seed, n_boot) + "\n"


def _latex_escape(text: str) -> str:
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#")):
        text = text.replace(char, escaped)
    return text


def to_latex(records: list[dict], seed: int = 0, n_boot: int = N_BOOT) -> str:
    head = " & ".join(_latex_escape(c) for c in COLUMNS) + r" \\"
    body = [" & ".join(_latex_escape(c) for c in table_cells(r)) + r" \\" for r in records]
    lines = [r"\begin{tabular}{" + "l" * 4 + "r" * (len(COLUMNS) - 4) + "}", r"\toprule", head, r"\midrule",
             *body, r"\bottomrule", r"\end{tabular}", "% " + footnote(records, seed, n_boot)]
    return "\n".join(lines) + "\n"


def to_csv(records: list[dict], seed: int = 0, n_boot: int = N_BOOT) -> str:
    if not records:
        return ""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow({k: ("" if v is None else " ".join(map(str, v)) if isinstance(v, list) else v)
                         for k, v in rec.items()})
    return buf.getvalue()


def to_json(records: list[dict], seed: int = 0, n_boot: int = N_BOOT) -> str:
    return json.dumps(records, indent=2, allow_nan=False) + "\n"


FORMATS = {"markdown": to_markdown, "csv": to_csv, "latex": to_latex, "json": to_json}
