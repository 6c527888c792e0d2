"""Does the supply model (pcbench.analysis.supply) see Pilot-Commit starve or drain before a run?

    python -m pcbench.reports.predict_supply            # writes results/bench/predict_supply.{md,json}

From committed files only (pcbench.reports.supply_cells: the 8 regime-map cells, the 6 paper-regime
cells, the probes), leave one cell out: the rates (learn, q_hard, q_near) are fitted on the other
cells' in-band series (squared log error of 1 / rounds per step, steps >= 3, on a fixed grid), the
STARVE and DRAIN thresholds on the other cells' flags (5% beyond the largest value of an
unflagged cell), and the held-out cell is projected from
its step-0 facts. The PC/GRPO ratio: the pre-run law (pcbench.analysis.mixed_groups_prediction.prerun on the
cell's step-0 pass-rate histogram) with the projected mean rounds, times the measured / law factor
of the other cells that have a measured ratio (geometric mean).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import numpy as np

from pcbench.analysis.mixed_groups_prediction import Setup, histogram_rates, prerun
from pcbench.analysis.supply import SupplyRates, project, thirds
from pcbench.reports.supply_cells import BENCH, Cell, all_cells, measured_thirds

LEARN = tuple(float(x) for x in np.round(np.logspace(-2, -0.3, 18), 5))
Q_HARD = (0.02, 0.05, 0.1, 0.2, 0.3)
Q_NEAR = (0.0, 0.15, 0.3, 0.45, 0.6, 0.8)
GRID = tuple(itertools.product(LEARN, Q_HARD, Q_NEAR))
RATIO_TOLERANCE = 0.15
CUT_MARGIN = 0.05


def series_loss(cell: Cell, rates: SupplyRates) -> float:
    """Squared log error of the projected against the measured 1 / rounds per step (steps >= 3)."""
    meas = 1.0 / np.asarray(cell.rounds, float) if cell.rounds else np.array([])
    if not meas.size:
        return 0.0
    pred = 1.0 / np.asarray(project(cell.pool, cell.run, rates)["rounds"])
    ok = np.isfinite(meas) & (np.arange(meas.size) >= 2)
    return float(np.sum((np.log(pred[ok]) - np.log(meas[ok])) ** 2))


def threshold(values: list[float], flagged: list[bool], above: bool) -> float:
    """The cut between flagged and unflagged values: flagged when value >= cut (above) or < cut.
    Just beyond the most extreme unflagged value (CUT_MARGIN of it; at most midway to the nearest
    flagged value beyond it): the cut that flags the most stopped cells and no clean one."""
    s = 1.0 if above else -1.0
    u, f = s * np.asarray(values, float), np.asarray(flagged, bool)
    clean = u[~f].max() if (~f).any() else -math.inf
    beyond = u[f][u[f] > clean]
    if not beyond.size:
        return s * (clean + 1e-9)
    if not math.isfinite(clean):
        return s * beyond.min()
    return s * min(clean + CUT_MARGIN * abs(clean), (clean + beyond.min()) / 2)


def fit(cells: list[Cell], losses: np.ndarray) -> SupplyRates:
    """Rates minimising the summed loss of `cells` (losses: grid x cells, same order), then the
    STARVE share of the bound and the DRAIN margin from their flags."""
    learn, q_hard, q_near = GRID[int(np.argmin(losses.sum(axis=1)))]
    base = SupplyRates(learn, q_hard, q_near, margin=0.0, starve=1.0)
    peak, supply = [], []
    for c in cells:
        p = project(c.pool, c.run, base)
        peak.append(max(p["rounds"][1:]) / c.run.max_rounds)
        supply.append(min(c.pool.size * a * f for a, f in zip(p["active"], p["f"])) / c.run.batch)
    keep = [i for i, c in enumerate(cells) if not c.stopped.get("pool_exhausted")]  # a drained run stopped first
    starve = threshold([peak[i] for i in keep], [cells[i].stopped.get("round_bound", 0) > 0 for i in keep], above=True)
    margin = threshold(supply, [c.stopped.get("pool_exhausted", 0) > 0 for c in cells], above=False)
    return SupplyRates(learn, q_hard, q_near, margin=round(margin, 4), starve=round(starve, 4))


def law_ratio(cell: Cell, rounds: float) -> float:
    """The pre-run law's PC/GRPO ratio on the cell's step-0 histogram with `rounds` per step."""
    p, w = histogram_rates(cell.hist)
    s = Setup(n=cell.n, batch=cell.run.batch)
    k = cell.n // 4
    rec = prerun(p, s, pilots=[k], weights=w)
    g, pc = rec["grpo"], rec["pilot_commit"][k]
    cost = rounds * s.candidates * s.batch * k + s.batch * (cell.n - k)
    return (pc["value"] / cost) / (g["value"] / g["cost"])


def loco(cells: list[Cell]) -> tuple[list[dict], SupplyRates]:
    """Per cell the held-out projection and flags; and the fit on all cells."""
    losses = np.array([[series_loss(c, SupplyRates(*g, margin=0.0)) for c in cells] for g in GRID])
    rows = []
    for i, c in enumerate(cells):
        rest = [x for j, x in enumerate(cells) if j != i]
        rates = fit(rest, np.delete(losses, i, axis=1))
        p = project(c.pool, c.run, rates)
        rounds = float(np.mean(p["rounds"]))
        rows.append({"cell": c.name, "source": c.source, "rates": rates.__dict__, "runs": c.runs, "stopped": c.stopped,
                     "measured_rounds": _nan(float(np.nanmean(c.rounds))) if c.rounds and np.isfinite(c.rounds).any() else None,
                     "measured_thirds": [_nan(x) for x in measured_thirds(c.rounds)] if c.rounds else [None] * 3,
                     "predicted_rounds": rounds, "predicted_thirds": thirds(p["rounds"]),
                     "starve_step": p["starve_step"], "drain_step": p["drain_step"],
                     "flag_measured": _flag(c.stopped), "flag_predicted": _pflag(p),
                     "ratio_measured": _nan(c.ratio), "law": law_ratio(c, rounds) if c.hist else None})
    _calibrate(rows)
    return rows, fit(cells, losses)


def _nan(x):
    return None if x is None or not math.isfinite(x) else float(x)


def _flag(stopped: dict) -> str:
    if stopped.get("pool_exhausted"):
        return "DRAIN"
    return "STARVE" if stopped.get("round_bound") else "-"


def _pflag(p: dict) -> str:
    s, d = p["starve_step"], p["drain_step"]
    if d is not None and (s is None or d <= s):
        return "DRAIN"
    return "STARVE" if s is not None else "-"


def _calibrate(rows: list[dict]) -> None:
    """ratio_predicted = law x (geometric mean of measured / law over the other cells with both)."""
    both = [r for r in rows if r["law"] and r["ratio_measured"]]
    for r in rows:
        others = [math.log(o["ratio_measured"] / o["law"]) for o in both if o is not r]
        r["calibration"] = math.exp(np.mean(others)) if others and r["law"] else None
        r["ratio_predicted"] = r["law"] * r["calibration"] if r["calibration"] else None
        r["ratio_error"] = (abs(r["ratio_predicted"] / r["ratio_measured"] - 1)
                            if r["ratio_predicted"] and r["ratio_measured"] else None)


def summary(rows: list[dict]) -> dict:
    flagged = [r for r in rows if r["flag_measured"] != "-"]
    clean = [r for r in rows if r["flag_measured"] == "-"]
    errs = [r["ratio_error"] for r in rows if r["ratio_error"] is not None]
    return {"starved_cells": len(flagged), "starved_flagged": sum(r["flag_predicted"] != "-" for r in flagged),
            "starved_missed": [r["cell"] for r in flagged if r["flag_predicted"] == "-"],
            "clean_cells": len(clean), "false_flags": [r["cell"] for r in clean if r["flag_predicted"] != "-"],
            "ratio_cells": len(errs), "ratio_error_max": max(errs) if errs else None,
            "ratio_error_mean": float(np.mean(errs)) if errs else None,
            "ratio_over_tolerance": [r["cell"] for r in rows if (r["ratio_error"] or 0) > RATIO_TOLERANCE]}


def build(bench: Path = BENCH) -> dict:
    rows, rates = loco(all_cells(bench))
    return {"fit": rates.__dict__, "grid": {"learn": LEARN, "q_hard": Q_HARD, "q_near": Q_NEAR},
            "ratio_tolerance": RATIO_TOLERANCE, "summary": summary(rows), "cells": rows}


def main(argv=None) -> int:
    from pcbench.reports.predict_supply_render import render

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=BENCH)
    args = ap.parse_args(argv)
    rep = build(args.bench)
    (args.bench / "predict_supply.json").write_text(json.dumps(rep, indent=1, sort_keys=True) + "\n")
    (args.bench / "predict_supply.md").write_text(render(rep))
    print(f"wrote {args.bench / 'predict_supply.md'} and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
