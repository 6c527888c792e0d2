"""Every committed result of results/bench/ re-scores to the same numbers from its committed raw CSVs.

- regime maps (the default grid and conf/bench/paper_regime.yaml): `python -m pcbench.bench regime_map
  --score-only` on a copy of <stem>_{curves,regime,pools}.csv rebuilds <stem>.json's cells and paper-matched
  verdicts, <stem>.md and the heatmap's CSV (paper_figures/<stem>.csv);
- sample efficiency: the run folders are not committed, so curves.csv (one row per run and evaluation)
  stands in for them: the targets, the A/A floor and every method's rollouts-to-target, interval and
  speedups of sample_efficiency.json are recomputed from it with the same analysis functions.
The regime maps re-score exactly (their CSVs are read back with pandas' round-trip float parser), but for
the survival numbers of lifelines' iterative fit, compared to 1e-9 relative;
the sample-efficiency numbers, rebuilt from curves.csv, are compared to 1e-9 relative.
"""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "bench"


def same(a, b, where=""):
    """Recursive equality, floats to 1e-9 relative; returns the differing paths."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in set(a) | set(b) for d in same(a.get(k), b.get(k), f"{where}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{where}[{i}]")]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        ok = (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        return [] if ok else [f"{where}: {a} != {b}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def without_survival(cells: dict) -> dict:
    """The cells less their survival numbers: those come from lifelines' iterative AFT fit, whose last
    digits vary with the BLAS path and the machine (seen: 1.0441620245088437 vs ...434), so they are
    compared to 1e-9 relative, everything else exactly."""
    return {cell: {k: v for k, v in rec.items() if k != "survival"} for cell, rec in cells.items()}


@pytest.mark.slow
@pytest.mark.parametrize("stem,grid", [("regime_map", None), ("paper_regime", "conf/bench/paper_regime.yaml")])
def test_map_rescores_from_its_csvs(tmp_path, stem, grid):
    """Both committed maps (the default grid and the paper's-regime part) rebuild from their raw CSVs."""
    out, figures = tmp_path / "out", tmp_path / "figures"
    out.mkdir()
    csvs = [f"{stem}_{kind}.csv" for kind in ("curves", "regime", "pools")]
    for name in csvs:
        shutil.copy(RESULTS / name, out / name)
    shutil.copy(RESULTS / f"{stem}.json", out / f"{stem}.json")  # a rescore in place keeps its provenance
    committed = json.loads((RESULTS / f"{stem}.json").read_text())
    cmd = [sys.executable, "-m", "pcbench.bench", "regime_map", "--score-only", "--out", str(out),
           "--figures", str(figures), "--runs", str(tmp_path / "runs")] + (["--grid", grid] if grid else [])
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    fresh = json.loads((out / f"{stem}.json").read_text())
    assert same(committed["cells"], fresh["cells"]) == []
    assert without_survival(committed["cells"]) == without_survival(fresh["cells"])  # exactly, not only to 1e-9
    for name in csvs:  # merged back unchanged
        assert (out / name).read_bytes() == (RESULTS / name).read_bytes(), name
    assert committed["paper_matched"] == fresh["paper_matched"]
    assert committed["grid"] == fresh["grid"]
    kept = {k: v for k, v in committed["provenance"].items() if k != "rescored"}
    assert {k: v for k, v in fresh["provenance"].items() if k != "rescored"} == kept  # who measured it, on what
    assert "--score-only" in fresh["provenance"]["rescored"]["command"]
    # the .md differs only in the grid's absolute path (the machine's checkout)
    strip = lambda text: [ln for ln in text.splitlines() if not ln.startswith("Grid `")]  # noqa: E731
    assert strip((out / f"{stem}.md").read_text()) == strip((RESULTS / f"{stem}.md").read_text())
    pd.testing.assert_frame_equal(pd.read_csv(figures / f"{stem}.csv"),
                                  pd.read_csv(ROOT / "paper_figures" / f"{stem}.csv"), rtol=1e-9)


def metrics_from_curves(curves: pd.DataFrame, setup: dict) -> pd.DataFrame:
    """The metrics frame of pcbench.analysis.run_frames.load_runs, rebuilt from curves.csv (evaluations only;
    A/A runs under the method name of pcbench.analysis.targets.AA)."""
    from pcbench.analysis.run_frames import ACC
    from pcbench.analysis.targets import AA

    method = np.where(curves["seed_set"] == "aa", AA, curves["method"])
    path = curves["method"] + "/" + curves["seed_set"] + "/" + curves["seed"].astype(str)
    return pd.DataFrame({"path": path, "run_id": path, "model": setup["model"], "data": setup["data"],
                         "method": method, "seed": curves["seed"], "step": curves["step"],
                         "cumulative_rollouts": curves["cumulative_rollouts"], ACC: curves["val_acc"]})


RECORD_KEYS = ("method", "target", "seeds", "reached", "rollouts_to_target", "rtt_ci_low", "rtt_ci_high",
               "speedup_vs_grpo", "speedup_vs_grpo_ci_low", "speedup_vs_grpo_ci_high", "speedup_vs_dapo",
               "speedup_vs_dapo_ci_low", "speedup_vs_dapo_ci_high", "final_val_acc", "ratio_to_oracle",
               "ratio_to_oracle_ci_low", "ratio_to_oracle_ci_high", "best_val_acc")


@pytest.mark.slow
def test_sample_efficiency_rescores_from_curves_csv():
    from pcbench.reports.sample_efficiency_tables import rollouts_records
    from pcbench.analysis.targets import AA, aa_record, grpo_targets

    report = json.loads((RESULTS / "sample_efficiency.json").read_text())
    both = metrics_from_curves(pd.read_csv(RESULTS / "curves.csv"), report["setup"])
    main = both[both["method"] != AA]
    targets = grpo_targets(main)
    assert same(report["targets"], targets) == []
    for name, target in targets.items():
        assert same(report["aa"][name], aa_record(both, target, 0, 10_000)) == [], name
    for key, target in (("records", None), ("reference_records", targets["reference"])):
        records, _, _ = rollouts_records(None, main, 0, 10_000, target=target)
        mine = [{k: r.get(k) for k in RECORD_KEYS} for r in records]
        theirs = [{k: r.get(k) for k in RECORD_KEYS} for r in report[key]]
        assert same(theirs, mine) == [], key


def test_committed_markdown_is_rendered_from_its_json():
    """sample_efficiency.md is its .json rendered (so a number in the .md is a number of the .json);
    regime_map.md is pinned by test_regime_map_rescores_from_its_csvs (its .json's keys are sorted,
    so rendering the .json alone orders the cells and knobs differently)."""
    from pcbench.reports.sample_efficiency import sample_efficiency_md

    se = json.loads((RESULTS / "sample_efficiency.json").read_text())
    assert sample_efficiency_md(se) == (RESULTS / "sample_efficiency.md").read_text()
