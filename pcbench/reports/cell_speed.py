"""The cell-speed comparison (`python -m pcbench.bench cell_speed`) as a table, from its folder alone.

The folder holds times.json (the commits and one entry per launch: version, repeat, key, wall_s,
loadavg), identity.json (the run-by-run comparison of the versions the plan calls identical, or whose
picture it compares) and, per
launch, the regime map's own report `<key>/regime_map.json` (its per-run seconds and the cell's
scores). Everything below is computed from those files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pcbench.analysis.formats import md_table, ratio_entry_text
from pcbench.reports.engine_speed import wall_table


def load(folder: Path, cell: str) -> tuple[pd.DataFrame, dict[str, dict]]:
    """-> one row per launch (its runs, failures and the cell's headline scores), and each launch's report by key."""
    meta = json.loads((folder / "times.json").read_text())
    reports = {e["key"]: json.loads((folder / e["key"] / "regime_map.json").read_text()) for e in meta["launches"]}
    rows = []
    for entry in meta["launches"]:
        report = reports[entry["key"]]
        scores = report["cells"].get(cell, {})  # the report lists every cell of the grid, run or not
        rows.append({**entry, "runs": len(report["runs"]), "failed": len(report["failures"]),
                     "pc_vs_grpo": _map_ratio(scores.get("pc_vs_grpo")), "aa": _map_ratio(scores.get("aa"))})
    return pd.DataFrame(rows), reports


def _map_ratio(entry: dict | None) -> str:
    """A ratio of the map's report as '1.33 [0.87, inf]' (no 'x': the column says what it is)."""
    return ratio_entry_text(entry, unit="")


def wall_time_ratio(table: pd.DataFrame, slow: str, fast: str) -> float | None:
    by = table.set_index("version")
    if slow not in by.index or fast not in by.index:
        return None
    return float(by.wall_median[slow] / by.wall_median[fast])


def _inside(x: float, entry: dict) -> bool:
    high = float("inf") if entry.get("high_inf") or entry.get("high") is None else entry["high"]
    return entry["low"] <= x <= high


def same_picture(a: dict, b: dict, scores=("pc_vs_grpo", "aa")) -> dict[str, bool | None]:
    """Two launches' scores of one cell -> per score, whether each point estimate lies in the other's 95% interval.

    The criterion for a change that alters arithmetic (issue 29): its runs diverge from the old ones
    value by value, so what must hold is the picture, PC vs GRPO and the A/A floor, within noise.
    None where either launch has no such score.
    """
    out: dict[str, bool | None] = {}
    for key in scores:
        x, y = a.get(key), b.get(key)
        if not (isinstance(x, dict) and isinstance(y, dict) and x.get("ratio") is not None and y.get("ratio") is not None):
            out[key] = None
            continue
        out[key] = _inside(x["ratio"], y) and _inside(y["ratio"], x)
    return out


def _picture_lines(reports: dict[str, dict], plan: dict) -> list[str]:
    pair = plan["success"].get("same_picture") or []
    keys = [f"{v}1" for v in pair]
    if len(keys) != 2 or not all(k in reports for k in keys):
        return []
    a, b = (reports[k]["cells"].get(plan["cell"], {}) for k in keys)
    verdict = same_picture(a, b)
    parts = [f"{name} {_map_ratio(a.get(name))} vs {_map_ratio(b.get(name))}: "
             + {True: "each inside the other's interval", False: "NOT inside", None: "missing"}[ok]
             for name, ok in verdict.items()]
    met = "met" if all(v is True for v in verdict.values()) else "not met"
    return [f"- Same picture, {' vs '.join(keys)}: {'; '.join(parts)} (plan: {met})."]


def _numerics(report: dict) -> str:
    prov = report.get("provenance", {})
    m = prov.get("machine", {})
    return (f"ATen {m.get('capability')} ({m.get('pinned')}), products {m.get('matmul', m.get('blas'))}, fingerprint "
            f"{m.get('fingerprint')}, warm start {', '.join(prov.get('warmstart_digests', [])) or '?'}")


def render(folder: Path, plan: dict) -> str:
    frame, reports = load(folder, plan["cell"])
    table = wall_table(frame, reports)  # the engine comparison's: per version, wall min / median / max, runs' seconds
    meta = json.loads((folder / "times.json").read_text())
    prov = meta["provenance"]
    order = ", ".join(frame.key)
    plan_file = "conf/" + meta["plan"].split("/conf/", 1)[1] if "/conf/" in meta["plan"] else meta["plan"]
    lines = ["# One regime-map cell end to end, side by side", "",
             f"Plan: `{plan_file}` (committed before the launches). Cell `{plan['cell']}`; launches in the order "
             f"run: {order}; each `python -m pcbench.bench regime_map --cells {plan['cell']} --jobs 2` from a clean "
             "worktree of its commit, with that commit's default warm start (trained beforehand, untimed).",
             f"Machine: {prov['machine'].get('cpu', '?')}, {prov['cpus']} CPUs, torch {prov['torch']}; started "
             f"{prov['date_utc']} UTC; {meta['note']}.",
             "Whose floats, per version (its first launch's report): " + "; ".join(
                 f"{v}: {_numerics(reports[f'{v}1'])}" for v in dict.fromkeys(frame.version)) + ".", "",
             *md_table(["version", "commit", "launches", "launcher wall s (min / median / max)", "runs' own s (median of sums)"])]
    for r in table.itertuples():
        lines.append(f"| {r.version} | {r.commit} | {r.launches} | {r.wall_min:.0f} / {r.wall_median:.0f} / "
                     f"{r.wall_max:.0f} | {r.run_seconds_median:.0f} |")
    lines += ["", *md_table(["launch", "wall s", "runs", "failed", "load at end", "PC vs GRPO [95% CI]", "A/A [95% CI]"])]
    for r in frame.itertuples():
        lines.append(f"| {r.key} | {r.wall_s:.0f} | {r.runs} | {r.failed} | {r.loadavg[0]} | {r.pc_vs_grpo} | {r.aa} |")
    lines.append("")
    versions = list(plan["versions"])
    goal = plan["success"].get("speedup_min")
    for slow in versions:
        for fast in versions:
            s = wall_time_ratio(table, slow, fast) if slow != fast and fast == versions[-1] else None
            if s is not None:
                met = f" (plan: >= {goal}x: {'met' if s >= goal else 'not met'})" if goal and slow == versions[0] else ""
                lines.append(f"- Median launcher wall, {slow} / {fast}: **{s:.2f}x**{met}.")
    lines += _picture_lines(reports, plan)
    ident = folder / "identity.json"
    if ident.is_file():
        d = json.loads(ident.read_text())
        verdict = "every value equal" if d["differences"] == 0 else f"{d['differences']} differences (first: {d['first'][:3]})"
        judged = "" if plan["success"].get("identical") else " (reported, not judged: the arithmetic changed)"
        lines.append(f"- Identity, {' vs '.join(d['compared'])}: {d['runs']} runs, {d['values']:,} logged values "
                     f"(timings aside): {verdict}{judged}.")
    return "\n".join(lines) + "\n"


def write_report(folder: Path, plan: dict) -> str:
    text = render(folder, plan)
    (folder / "cell_speed.md").write_text(text)
    return text
