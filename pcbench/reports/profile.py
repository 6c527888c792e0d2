"""profile.md: where an embedded job spends its time (`python -m pcbench.bench profile`)."""

from __future__ import annotations

from pcbench.analysis.formats import md_table

# how a phase is titled in the table; the phases and their order are the report's own `phases`, as
# pcbench/bench/profile.py timed them
PHASE_TITLES = {"startup": "start-up"}


def profile_md(report: dict) -> str:
    meta, phases = report["provenance"], report["phases"]
    lines = ["# Embedded engine profile", "", *([report["note"], ""] if report.get("note") else []),
             f"`{meta['command']}` at commit `{meta['commit'][:10]}`"
             f"{' (dirty: ' + ', '.join(meta['dirty_files']) + ')' if meta['dirty_files'] else ''}, "
             f"{meta['date_utc']} UTC; {meta['cpu']}, {meta['cpus']} CPUs, torch {meta['torch']}, "
             f"transformers {meta['transformers']}, python {meta['python']}; one job at a time, one torch thread; "
             f"load average {meta['loadavg_start']} at start, {meta.get('loadavg_end')} at end.", "",
             f"Each job: `exp=sample_efficiency data.val_mode=exact`, {report['steps']} steps (exact evaluation at "
             f"step 0, every `train.eval_every` steps and the last, which also samples the cross-check), in a fresh "
             f"process. Seconds, wall (CPU in brackets); start-up = imports + config + model + warm-start load + "
             f"verl import (imports alone in the last column).", "",
             *md_table(["job", *(PHASE_TITLES.get(p, p) for p in phases), "total", "imports"], right_from=1)]
    for j in report["jobs"]:
        cells = [f"{j['wall'][p]:.2f} ({j['cpu'][p]:.2f})" for p in phases]
        lines.append(f"| {j['method']} n={j['n']} | " + " | ".join(cells)
                     + f" | {j['total_wall']:.1f} ({j['total_cpu']:.1f}) | {j['imports_wall']:.1f} ({j['imports_cpu']:.1f}) |")
    tot = {p: sum(j["wall"][p] for j in report["jobs"]) for p in phases}
    all_wall = sum(tot.values())
    lines += ["", "Share of all jobs' wall time: " + ", ".join(f"{p} {100 * tot[p] / all_wall:.0f}%" for p in phases)
              + f" (of {all_wall:.1f} s).", ""]
    return "\n".join(lines)
