"""`python -m pcbench.bench regime_map`: where does Pilot-Commit pay off?

A grid of cells (conf/bench/regime_map.yaml, committed before any run: knobs, levels, seeds,
the parts each session runs and the pre-registered paper-matched criteria). Per cell GRPO,
DAPO and Pilot-Commit train on their seeds and GRPO on a disjoint seed set for the A/A; then

1. every job of the selected cells is composed and checked before anything trains;
2. unfinished jobs train (2 workers x 1 thread; finished folders are skipped, unfinished resume; a
   run stopped because its allocator starved is a result, scored and not retrained);
3. each selected cell's run folders become rows of two tidy frames, merged into the committed
   `regime_map_curves.csv` and `regime_map_regime.csv` (rows of other cells are kept), so the
   report always covers every part run so far;
4. the report (`regime_map.md` / `.json`) and the heatmap (`paper_figures/regime_map.*`) are
   computed from those two files alone (pcbench/analysis/map_scoring.py, pcbench/reports/regime_map.py).

    python -m pcbench.bench regime_map --part 1          # the cells of part 1 (one session)
    python -m pcbench.bench regime_map --cells p16-continuum-low
    python -m pcbench.bench regime_map --score-only      # rebuild the report from the CSVs
    python -m pcbench.bench regime_map --grid conf/bench/paper_regime.yaml --part 1   # another grid

Every output is named after the grid file's stem (regime_map.yaml -> regime_map.md,
regime_map_curves.csv, paper_figures/regime_map.png, experiment=regime_map_<cell>), so two grids
never overwrite each other's files or run folders. A grid may name several cells aiming at the
paper's regime (`paper_matched.cells`), its criteria may include `near_solved_max` (the pool card's
near-solved share after the warm start), and `predictions` / `goal` register, before any run, what
each cell is expected to show and what would count as success; the report prints them beside the
measurement.
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from pcbench.reports.regime_map import merge, tidy_cell, write_outputs
from pcbench.analysis.scoring import N_BOOT
from pcbench.analysis.warmstart_note import warmstart_digests
from pcbench.paths import CONF_DIR
from pcbench.bench.launch import Job, is_scored, launch, run_folder
from pcbench.config import ConfigError

GRID = CONF_DIR / "bench" / "regime_map.yaml"
GRID_KEYS = ("methods", "seeds", "grpo_seeds", "aa_seeds", "common", "knobs", "parts", "paper_matched")


@dataclass(frozen=True)
class Cell:
    name: str  # levels joined by "-", in knob order: "p16-continuum-low"
    levels: tuple[tuple[str, str], ...]  # ((knob, level), ...)
    overrides: tuple[str, ...]


def load_grid(path: Path) -> dict:
    """The grid config, checked: one line naming the key when something is missing or malformed."""
    if not path.is_file():
        raise ConfigError(f"regime map grid {path} not found; pass --grid FILE")
    grid = yaml.safe_load(path.read_text()) or {}
    grid["stem"] = path.stem  # every output's name: regime_map.md, paper_regime_curves.csv, experiment=paper_regime_<cell>
    missing = [k for k in GRID_KEYS if k not in grid]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)} (see conf/bench/regime_map.yaml)")
    if not all(isinstance(v, dict) and v and all(isinstance(o, list) for o in v.values()) for v in grid["knobs"].values()):
        raise ConfigError(f"{path}: knobs must map knob -> level -> [hydra overrides]")
    names = {c.name for c in cells(grid)}
    for part, listed in grid["parts"].items():
        unknown = sorted(set(listed) - names)
        if unknown:
            raise ConfigError(f"{path}: part {part} names unknown cells {unknown}; cells are {sorted(names)}")
    pm = grid["paper_matched"]
    aiming = pm.get("cells") or [pm.get("cell")]
    pm["cells"], pm["cell"] = aiming, aiming[0]
    unknown = [c for c in [*aiming, *(grid.get("predictions") or {})] if c not in names]
    if unknown:
        raise ConfigError(f"{path}: paper_matched / predictions name {unknown}, which are not cells; cells are {sorted(names)}")
    return grid


def cells(grid: dict) -> list[Cell]:
    """The full product of the knobs' levels, first knob slowest."""
    knobs = list(grid["knobs"].items())
    out = []
    for combo in itertools.product(*[list(levels.items()) for _, levels in knobs]):
        levels = tuple((k, lvl) for (k, _), (lvl, _) in zip(knobs, combo))
        overrides = tuple(o for _, ovs in combo for o in ovs)
        out.append(Cell("-".join(lvl for _, lvl in levels), levels, overrides))
    return out


def cell_jobs(grid: dict, cell: Cell, runs: Path) -> tuple[list[Job], list[Job]]:
    """(main jobs: every method on its seeds, seed-major; A/A jobs: GRPO on the next grid['aa_seeds'])."""
    common = [*grid["common"], *cell.overrides, f"paths.results={runs}"]
    exp = f"experiment={grid.get('stem', 'regime_map')}_{cell.name}"
    main = []
    for s in range(max(int(grid["seeds"]), int(grid["grpo_seeds"]))):
        for m in grid["methods"]:
            if s < (int(grid["grpo_seeds"]) if m == "grpo" else int(grid["seeds"])):
                main.append(Job(m, s, (f"method={m}", f"seed={s}", exp, *common)))
    first = int(grid["grpo_seeds"])
    aa = [Job("grpo", s, ("method=grpo", f"seed={s}", f"{exp}_aa", *common))
          for s in range(first, first + int(grid["aa_seeds"]))]
    return main, aa


def select(grid: dict, names: str | None, part: str | None) -> list[Cell]:
    every = cells(grid)
    if part is not None:
        if str(part) not in {str(p) for p in grid["parts"]}:
            raise ConfigError(f"--part {part}: the grid has parts {sorted(map(str, grid['parts']))}")
        wanted = next(v for p, v in grid["parts"].items() if str(p) == str(part))
    elif names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
    else:
        wanted = [c.name for c in every]
    unknown = sorted(set(wanted) - {c.name for c in every})
    if unknown:
        raise ConfigError(f"--cells: unknown {unknown}; the grid's cells are {[c.name for c in every]}")
    by_name = {c.name: c for c in every}
    return [by_name[n] for n in dict.fromkeys(wanted)]  # the order asked for: a part lists its first cell first


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--grid", type=Path, default=GRID, help=f"the grid config (default {GRID})")
    p.add_argument("--cells", default=None, help="comma-separated cell names (default: every cell)")
    p.add_argument("--part", default=None, help="run the cells the grid lists under parts.<PART>")
    p.add_argument("--jobs", type=int, default=2, help="parallel runs, 1 torch thread each (default 2)")
    p.add_argument("--out", type=Path, default=Path("results/bench"), help="report and merged CSVs (default results/bench)")
    p.add_argument("--figures", type=Path, default=Path("paper_figures"), help="where the heatmap goes")
    p.add_argument("--runs", type=Path, default=Path("results/bench_runs"), help="paths.results of the run folders")
    p.add_argument("--n-boot", type=int, default=N_BOOT, help="bootstrap resamples")
    p.add_argument("--score-only", action="store_true", help="train nothing; rebuild the report from the CSVs "
                   "(and from the selected cells' finished or starved folders, when present)")


def main(args, argv: list[str]) -> int:
    from pcbench.bench.provenance import provenance

    grid = load_grid(args.grid)
    chosen = select(grid, args.cells, args.part)
    plans = {c.name: cell_jobs(grid, c, args.runs) for c in chosen}
    jobs = [j for main, aa in plans.values() for j in main + aa]
    # A folder's name is its composed config's hash (~0.3 s a job): a rescore with no run folders to
    # read back (--score-only, --runs absent) checks one job's config per cell instead of naming 336.
    named = jobs if args.runs.is_dir() or not args.score_only else [main[0] for main, _ in plans.values()]
    folders = {j: run_folder(j) for j in named}  # ConfigError before training
    # a starved run is a result: resuming it would replay the same steps into the same stop
    unfinished = [j for j in jobs if j not in folders or not is_scored(folders[j])]
    todo = [] if args.score_only else unfinished
    print(f"regime map: {len(chosen)} cell(s), {len(jobs)} runs, {len(jobs) - len(unfinished)} finished "
          f"(or starved), {len(todo)} to train on {args.jobs} worker(s)", flush=True)
    stem = grid["stem"]
    meta = provenance(argv)  # before training: the commit and load the runs started from
    results = launch(todo, args.jobs, args.runs / f"{stem}_logs")
    args.out.mkdir(parents=True, exist_ok=True)
    curves_path, regime_path = args.out / f"{stem}_curves.csv", args.out / f"{stem}_regime.csv"
    def scored(jobs: list[Job]) -> list[str]:  # a crash's truncated curve would count as censored: never scored
        return [str(folders[j]) for j in jobs if j in folders and is_scored(folders[j])]

    # analysis reads each cell's folders into tidy rows; the merged CSVs are all the report is computed from
    fresh = [tidy_cell(c.name, dict(c.levels), scored(plans[c.name][0]), scored(plans[c.name][1])) for c in chosen]
    fresh = [f for f in fresh if f is not None]
    pools_path = args.out / f"{stem}_pools.csv"
    done = {f[2] for f in fresh}
    curves = merge(curves_path, [f[0] for f in fresh], done)
    regime = merge(regime_path, [f[1] for f in fresh], done)
    pools = merge(pools_path, [f[3] for f in fresh], done)
    for frame, path in ((curves, curves_path), (regime, regime_path), (pools, pools_path)):
        frame.to_csv(path, index=False)
    digests = warmstart_digests([f for c in chosen for f in scored(plans[c.name][0]) + scored(plans[c.name][1])])
    report = write_outputs(grid, {c.name: dict(c.levels) for c in cells(grid)}, curves, regime, pools, args,
                           run_provenance(meta, digests if results else [], args.out / f"{stem}.json"),
                           results)
    print(f"wrote {args.out / (stem + '.md')}, .json, {curves_path.name}, {regime_path.name}")
    return 0 if not report["failures"] else 1


def run_provenance(meta: dict, digests: list[str], previous: Path) -> dict:
    """This command's provenance; a rescore that trained nothing keeps the report's recorded one (its warm-start
    digests above all: without them the warm-start notice would name the wrong warm start)."""
    from pcbench.bench.provenance import rescored

    old = json.loads(previous.read_text()) if previous.is_file() else {}
    if digests:
        # another part's runs stay in the merged CSVs, so their command's record stays too
        before = {k: v for k, v in old.get("provenance", {}).items() if k not in ("earlier", "rescored")}
        earlier = [e for e in old.get("provenance", {}).get("earlier", []) + [before]
                   if e.get("command") and e["command"] != meta.get("command")]
        return {**meta, "warmstart_digests": digests, **({"earlier": earlier} if earlier else {})}
    return rescored(meta, old) if old.get("provenance") else meta
