"""Analysis of pcbench run folders: pure functions over one tidy DataFrame.

- `pcbench.analysis.runs`: walk result folders, read `config.yaml` + `metrics.jsonl` (+ `summary.json`)
  into a runs frame (one row per run) and a metrics frame (one row per (run, step)).
- `pcbench.analysis.scoring`: target accuracy, rollouts-to-target with censoring, bootstrap intervals
  over seeds, speedups.
- `pcbench.analysis.speedup`: the table CLI (`python analysis/speedup.py results/`).
- `pcbench.analysis.figures`: the paper figures, each saved as PDF + PNG + the CSV behind it.
- `pcbench.analysis.law`, `predictor`, `survival`, `law_report`: the informative-group law, speedups
  predicted from regime rows or a pre-run probe, rollouts-to-target as survival data (issue 30).

The run-folder contract these read is `docs/run_folder.md`.
"""
