"""Analysis of pcbench run folders: pure functions over one tidy DataFrame.

- `pcbench.analysis.runs`: walk result folders, read `config.yaml` + `metrics.jsonl` (+ `summary.json`)
  into a runs frame (one row per run) and a metrics frame (one row per (run, step)).
- `pcbench.analysis.scoring`: target accuracy, rollouts-to-target with censoring, bootstrap intervals
  over seeds, speedups.
- `pcbench.analysis.speedup`: the table CLI (`python analysis/speedup.py results/`).
- `pcbench.analysis.figures`: the paper figures, each saved as PDF + PNG + the CSV behind it.
- `pcbench.analysis.targets`: the benchmark's two GRPO targets, the A/A noise floor, the raw curves table.
- `pcbench.analysis.tables`, `pcbench.analysis.sample_efficiency`: the sample-efficiency benchmark's numbers
  from its run folders; `pcbench.analysis.bench_md`: its markdown.
- `pcbench.analysis.regime` (+ `regime_plot`): the regime card of any run folders
  (`python -m pcbench.analysis.regime RESULTS...`).
- `pcbench.pool_card`: a pool's prompts per tier in pass-rate classes (solved ... never), shown by
  the regime card, `pcbench.predict` and the warm-start spread.
- `pcbench.analysis.map_scoring`, `pcbench.analysis.map_report`: the regime map's scoring, report and heatmap.
- `pcbench.analysis.quoted`: the result numbers the docs quote, generated from results/bench/*.json.
- `pcbench.analysis.law`, `predictor`, `survival`, `law_report`: the informative-group law, speedups
  predicted from regime rows or a pre-run probe, rollouts-to-target as survival data (issue 30).

Everything here reads run folders or result files; nothing imports pcbench.bench (the experiments,
which hand their run folders to these modules).

The run-folder contract these read is `docs/run_folder.md`.
"""
