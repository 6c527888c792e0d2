"""The committed cells as the supply model sees them: step-0 facts in, measured PC supply out.

Reads committed files only: the regime map (results/bench/regime_map*), the paper-regime map
(results/bench/paper_regime*) and the probes (results/bench/probes/). Per cell: the step-0 pool
(SupplyPool: the pool card's class shares, from the card where the map recorded one, else from the
sampled pass-rate histogram; the in-band share of an n/4 pilot), the run knobs (SupplyRun), and
what PC did: seed-mean in-band share and rounds per step, runs stopped by the round bound or by a
drained pool, the measured PC/GRPO ratio and the pre-run law's ratio inputs (the pass-rate histogram).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pcbench.analysis.supply import SupplyPool, SupplyRun
from pcbench.config import compose_cfg

BENCH = Path("results/bench")
MAP_POOL = 2000          # conf/data/synthetic*.yaml train_size, the regime map's pools
PAPER_POOL = {"solved": 2000, "unsolved": 2000, "drain": 500}  # conf/bench/paper_regime.yaml
# results/bench/README.md: the regime map's unfinished PC runs (p8-ladder-high 5, p16-ladder-high 4)
# stopped at the 10-round bound
MAP_STOP_REASON = "round_bound"


@dataclass
class Cell:
    name: str
    source: str                      # "map", "paper", "probe"
    n: int                           # rollouts per trained group (pilot n/4)
    pool: SupplyPool
    run: SupplyRun
    f: list = field(default_factory=list)        # measured seed-mean in-band share per step
    rounds: list = field(default_factory=list)   # measured seed-mean rounds per step (NaN past the last run)
    runs: int = 0
    stopped: dict = field(default_factory=dict)  # reason -> PC runs stopped
    ratio: float = math.nan                      # measured PC/GRPO rollouts-to-target
    hist: dict = field(default_factory=dict)     # step-0 pass-rate histogram (for the law)

    @property
    def starved(self) -> bool:
        return sum(self.stopped.values()) > 0


def _card_from_hist(pool: dict) -> tuple[float, float, float, float]:
    """(band, hard, solved, near-solved) shares: the card's when recorded, else the 7-bin
    histogram's ([5/8, 7/8) split evenly at the band's 3/4 edge)."""
    if "card/band" in pool:
        return pool["card/band"], pool["card/hard"], pool["card/solved"], pool["card/near_solved"]
    h = lambda k: float(pool.get(f"histogram/{k}", 0.0))  # noqa: E731
    half = 0.5 * h("[5/8,7/8)")
    return h("[1/8,3/8)") + h("[3/8,5/8)") + half, h("(0,1/8)"), h("p=1"), h("[7/8,1)") + half


def _measured(regime: pd.DataFrame, steps: int) -> tuple[list, list]:
    """Seed means per step of PC's in-band share of fresh pilots and its rounds (steps 1..steps)."""
    pc = regime[regime["method"] == "pilot_commit"]
    if pc.empty:
        return [], []
    pc = pc.assign(f=pc["sampled_in_band"] / pc["sampled"])
    m = pc.groupby("step")[["f", "rounds"]].mean().reindex(range(1, steps + 1))
    return m["f"].tolist(), m["rounds"].tolist()


def map_cells(bench: Path = BENCH) -> list[Cell]:
    """The 8 regime-map cells and the 6 paper-regime cells."""
    out = []
    for part, source in (("regime_map", "map"), ("paper_regime", "paper")):
        rep = json.loads((bench / f"{part}.json").read_text())
        regime = pd.read_csv(bench / f"{part}_regime.csv")
        pools = pd.read_csv(bench / f"{part}_pools.csv")
        for name in sorted(rep["cells"]):
            c = rep["cells"][name]
            pool = dict(zip(*pools[pools["cell"] == name][["key", "value"]].to_numpy().T))
            band, hard, solved, near = _card_from_hist(pool)
            size = MAP_POOL if source == "map" else PAPER_POOL[name.split("-", 1)[1]]
            n = 32 if name.startswith("p8") else 64
            cell = Cell(name, source, n, SupplyPool(float(pool["in_band"]), band, hard, solved, near, size), SupplyRun())
            cell.f, cell.rounds = _measured(regime[regime["cell"] == name], cell.run.steps)
            if source == "paper":
                st = (c.get("starved") or {}).get("pilot_commit", {"runs": 8})
                cell.runs = int(st.get("runs", 0))
                for reason in st.get("reasons", []):
                    cell.stopped[reason] = cell.stopped.get(reason, 0) + 1
            else:
                done, total = map(int, c["runs"]["counts"]["pilot_commit"].split("/"))
                cell.runs = total
                if total > done:
                    cell.stopped[MAP_STOP_REASON] = total - done
            ratio = (c.get("pc_vs_grpo") or {}).get("ratio")
            cell.ratio = float(ratio) if ratio is not None else math.nan
            cell.hist = {k.split("/", 1)[1]: float(v) for k, v in pool.items() if k.startswith("histogram/")}
            out.append(cell)
    return out


def probe_cells(bench: Path = BENCH) -> list[Cell]:
    """The probes (results/bench/probes/): 30-50 steps; no ratio to GRPO. A PC run whose curve ends
    before the horizon stopped at its round bound (the probes' only early stop)."""
    rep = json.loads((bench / "probes" / "probes.json").read_text())
    curves = pd.read_csv(bench / "probes" / "probes_curves.csv")
    out = []
    for name, card in rep["cards"].items():
        cfg = compose_cfg(card["overrides"])  # the knobs as the probe composed them, defaults included
        steps, lr = int(cfg.train.steps), float(cfg.train.lr)
        a = card["pool"]["all"]
        pool = SupplyPool(float(card["expected"]["pilot_in_band"]), a["band"], a["hard"], a["solved"], a["near_solved"],
                          int(card["pool_size"]))
        cell = Cell(name, "probe", int(card["n"]), pool, SupplyRun(steps=steps, lr=lr))
        pc = curves[(curves["design"] == name) & (curves["method"] == "pilot_commit") & (curves["step"] > 0)]
        pc = pc.assign(f=pc["pilots_in_band"] / pc["pilots"])
        m = pc.groupby("step")[["f", "rounds"]].mean().reindex(range(1, steps + 1))
        cell.f, cell.rounds, cell.runs = m["f"].tolist(), m["rounds"].tolist(), int(pc["seed"].nunique())
        short = int((pc.groupby("seed")["step"].max() < steps).sum())
        if short:
            cell.stopped[MAP_STOP_REASON] = short
        out.append(cell)
    return out


def all_cells(bench: Path = BENCH) -> list[Cell]:
    return map_cells(bench) + probe_cells(bench)


def measured_thirds(x: list) -> list[float]:
    """Means of the measured series by thirds of the horizon (NaN where no run got that far)."""
    parts = np.array_split(np.asarray(x, float), 3)
    return [float(np.nanmean(p)) if np.isfinite(p).any() else math.nan for p in parts]
