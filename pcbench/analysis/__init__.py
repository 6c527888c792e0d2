"""The analysis library: pure functions from run folders (or their committed CSVs) to numbers.

- `run_frames`: walk result folders, read `config.yaml` + `metrics.jsonl` (+ `summary.json`) into a runs
  frame (one row per run) and a metrics frame (one row per (run, step)); `setups`: which runs compare.
- `scoring`: the metrics, each defined once: the target (the maximum of `seed_mean_curve`), the first
  crossing (`evals_at_target`), rollouts-to-target with censoring, the bootstrap (`N_BOOT`) and speedups.
- `targets`: the benchmark's two GRPO targets and the A/A noise floor; `map_scoring`: a map cell's
  crossings, ratios and A/A; `survival`: rollouts-to-target as survival data.
- `law`, `mixed_groups_prediction`: the informative-group law and the speedups it predicts (mixed groups
  per rollout, from regime rows or a pre-run probe).
- `regime` (+ `regime_plot`): the regime card of any run folders (`python -m pcbench.analysis.regime`).
- `formats`: how numbers leave (null for inf/NaN in JSON; a ratio with its interval, rollouts,
  percentages in markdown); `speedup_table`: the speedup table in markdown, csv, latex, json;
  `methods`: the one label / colour / order table.
- `speedup`, `figures` (+ `figure_tables`, `plotstyle`): the table and figure commands
  (`analysis/speedup.py`, `analysis/figures.py`).

The reports that render one committed file of results/bench each are in `pcbench.reports`; nothing
here imports them or `pcbench.bench` (tests/test_imports.py). `law_report`, `engine_speed` and
`quoted` here are command aliases of their reports. The run-folder contract is `docs/run_folder.md`.
"""
