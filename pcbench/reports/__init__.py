"""The committed reports: one module per file of results/bench/ (or family of files), each rendering
it from the JSON/CSVs beside it with the library in pcbench.analysis. The library never imports a
report (tests/test_imports.py); the experiments (pcbench.bench) call them after a run.

- `law`: law.{md,json}, survival.{md,json}, prerun.{md,json} and paper_figures/law_informative_groups.*
- `regime_map` (+ `regime_map_by_target`): regime_map.{md,json}, paper_regime.{md,json} and their heatmaps
- `sample_efficiency` (+ `sample_efficiency_tables`): sample_efficiency.{md,json}
- `profile`: profile.md; `throughput`: throughput.md (not committed)
- `cell_speed`: cell_speed*/cell_speed.md; `engine_speed`: engine_speed/engine_speed.md
- `warmstart_spread`: warmstart_spread.{md,json}
- `probes`: probes/probes.md (its JSON and curves written by pcbench.bench.probes)
- `predict_supply` (+ `predict_supply_render`, `supply_cells`): predict_supply.{md,json}
- `quoted`: the quoted blocks of README.md, results/bench/README.md and docs/measurements.md
"""
