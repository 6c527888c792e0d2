"""`python -m pcbench.reports.engine_speed DIR`: the side-by-side engine comparison in DIR as a table.

DIR holds `times.json` (one entry per launch: version, repeat, wall_s, loadavg, commit) and, per
launch, the benchmark's output folder `<version><repeat>/` (sample_efficiency.json, curves.csv),
as results/bench/engine_speed/ does. Everything printed is computed from those files: launcher
wall time (min / median / max per version), the runs' own seconds, step times per method, and
whether the versions agree (every logged val/acc, every cumulative rollout count, every scored
ratio and A/A interval).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import pandas as pd

from pcbench.analysis.formats import md_table
from pcbench.analysis.targets import aa_from_json


def load(folder: Path) -> tuple[pd.DataFrame, dict[str, dict], dict[str, pd.DataFrame]]:
    """-> launches (one row each), each launch's report json and curves, keyed '<version><repeat>'."""
    launches = pd.DataFrame(json.loads((folder / "times.json").read_text()))
    keys = [f"{v}{r}" for v, r in zip(launches.version, launches.repeat)]
    reports = {k: json.loads((folder / k / "sample_efficiency.json").read_text()) for k in keys}
    curves = {k: pd.read_csv(folder / k / "curves.csv") for k in keys}
    return launches, reports, curves


def wall_table(launches: pd.DataFrame, reports: dict[str, dict]) -> pd.DataFrame:
    rows = []
    for version, part in launches.groupby("version", sort=False):
        walls = sorted(part.wall_s)
        runs = [sum(r["seconds"] for r in reports[f"{version}{rep}"]["runs"]) for rep in part.repeat]
        rows.append({"version": version, "commit": ", ".join(sorted(set(part.commit))), "launches": len(walls),
                     "wall_min": walls[0], "wall_median": statistics.median(walls), "wall_max": walls[-1],
                     "run_seconds_median": statistics.median(runs)})
    return pd.DataFrame(rows)


def agreement(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """Two launches' curves.csv, row for row: largest val/acc difference, rollout counts equal."""
    key = ["method", "seed_set", "seed", "step"]
    m = a.merge(b, on=key, suffixes=("_a", "_b"), validate="one_to_one")
    return {"rows": len(m), "rows_a": len(a), "rows_b": len(b),
            "max_abs_val_acc": float((m.val_acc_a - m.val_acc_b).abs().max()),
            "rollouts_equal": bool((m.cumulative_rollouts_a == m.cumulative_rollouts_b).all())}


RATIOS = ("method", "reached", "starved", "rollouts_to_target", "rtt_ci_low", "rtt_ci_high", "speedup_vs_grpo",
          "speedup_vs_grpo_ci_low", "speedup_vs_grpo_ci_high", "speedup_vs_dapo", "speedup_vs_dapo_ci_low",
          "speedup_vs_dapo_ci_high")


def scored(report: dict) -> dict:
    """What a reader takes from a report besides accuracies: every rollouts-to-target record with its
    ratios and intervals, and the A/A's ratio and interval (paths, timing, provenance left out)."""
    recs = [{k: r.get(k) for k in RATIOS} for r in report["records"] + report["reference_records"]]
    aa = {t: {k: v for k, v in aa_from_json(a).items() if k in ("ratio", "low", "high", "resolves", "grpo_rtt", "aa_rtt")}
          for t, a in report["aa"].items()}
    return {"records": recs, "aa": aa}


def _machine(prov: dict) -> str:
    m = prov.get("machine", {})
    return (f"Machine: {m.get('cpu')}, {prov.get('cpus')} CPUs, arithmetic {m.get('capability')} ({m.get('pinned')}), "
            f"{m.get('blas')}, torch {m.get('torch')}, fingerprint {m.get('fingerprint')}; warm start "
            f"{', '.join(prov.get('warmstart_digests', []))}; nothing else ran on it (the launches ran one after another).")


def render(folder: Path) -> str:
    launches, reports, curves = load(folder)
    walls = wall_table(launches, reports)
    first = {v: f"{v}{launches[launches.version == v].repeat.iloc[0]}" for v in walls.version}
    (va, ka), (vb, kb) = list(first.items())[:2]
    agree = agreement(curves[ka], curves[kb])
    same_scores = scored(reports[ka]) == scored(reports[kb])
    ratio = walls.wall_median.iloc[0] / walls.wall_median.iloc[1]
    lines = [f"# Engine speed: {va} vs {vb}, side by side", "",
             f"Launches in the order run (alternating): {', '.join(f'{v}{r}' for v, r in zip(launches.version, launches.repeat))}; "
             f"load average at the end of each: {', '.join(str(x[0]) for x in launches.loadavg)}.",
             f"Command of each: `{reports[ka]['provenance']['command']}` (the run folders and output folder per launch).",
             _machine(reports[ka]["provenance"]), "",
             *md_table(["version", "commit", "launches", "launcher wall s (min / median / max)",
                        "runs' own s (median, sum over runs)"])]
    for r in walls.itertuples():
        lines.append(f"| {r.version} | {r.commit} | {r.launches} | {r.wall_min:.0f} / {r.wall_median:.0f} / {r.wall_max:.0f} | {r.run_seconds_median:.0f} |")
    lines += ["", f"Median launcher wall: {va} / {vb} = **{ratio:.2f}x** "
              f"(runs' own seconds: {walls.run_seconds_median.iloc[0] / walls.run_seconds_median.iloc[1]:.2f}x).", "",
              *md_table(["method", *(f"step s {v}" for v in walls.version), *(f"generate s/step {v}" for v in walls.version)])]
    for i, t in enumerate(reports[ka]["timing"]):
        other = reports[kb]["timing"][i]
        lines.append(f"| {t['method']} | {t['step_s']:.3f} | {other['step_s']:.3f} | {t['generate_s']:.3f} | {other['generate_s']:.3f} |")
    lines += ["", f"Agreement of {ka} and {kb} ({agree['rows']} evaluations, row for row): largest |val/acc difference| "
              f"{agree['max_abs_val_acc']:.4f}; cumulative rollout counts {'all equal' if agree['rollouts_equal'] else 'DIFFERENT'}; "
              f"rollouts-to-target, ratios, intervals and A/A {'the same' if same_scores else 'DIFFERENT'}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pcbench.reports.engine_speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, help="write the markdown here (default: print it)")
    a = ap.parse_args(argv)
    text = render(a.folder)
    if a.out:
        a.out.write_text(text)
        print(f"wrote {a.out}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
