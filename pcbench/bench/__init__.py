"""pcbench.bench: the experiments: every allocator in one harness, one ledger, on the embedded task.

bench owns which jobs run (plans from committed configs: conf/exp/, conf/bench/), launching and
resuming them (launch.py), and handing their run folders to the reports (pcbench.reports: one per
committed file), which score them with the library (pcbench.analysis: targets, A/A, the regime card)
and render them. bench imports both, neither imports bench (tests/test_imports.py).

    python -m pcbench.bench sample_efficiency [--seeds 5] [--methods grpo,dapo,...] [--steps N]
                                              [--jobs 2] [--out results/bench/] [-o KEY=VALUE ...]
    python -m pcbench.bench regime_map [--part 1 | --cells A,B] [--jobs 2] [--score-only]
    python -m pcbench.bench throughput [--batch 64,256,768] [--out results/bench/] [-o KEY=VALUE ...]
    python -m pcbench.bench profile [--methods grpo,dapo,pilot_commit] [--ns 32,64] [--steps 8] [--out results/bench/]
    python -m pcbench.bench regime RESULTS_DIR [...] [--out DIR]   # alias of python -m pcbench.analysis.regime
    python -m pcbench.bench cell_speed [--plan conf/bench/cell_speed.yaml] [--work DIR] [--cache-from DIR]

`sample_efficiency` trains every (method, seed) into its own run folder (the same folder
`python -m pcbench.run <the same overrides>` would use, so reruns resume or reuse it), then
scores them with `analysis` (rollouts-to-target as docs/method.md#rollouts-to-target defines it, bootstrap intervals,
speedups vs GRPO / DAPO, ratio to the oracle) and measures wall-clock per step and per
rollout. `throughput` times the embedded KV-cache sampler against transformers' own
`generate` on the same model and batch. `profile` splits one short job per method and group size
into start-up, generation, reward, update, evaluation and allocator time (wall and CPU). `regime_map` runs GRPO, DAPO, Pilot-Commit and an
A/A in every cell of a committed grid of task shapes and pilot resolutions
(conf/bench/regime_map.yaml) and maps where Pilot-Commit pays off. `cell_speed` times one map cell end
to end on several commits side by side (conf/bench/cell_speed.yaml) and checks two of them give the
same numbers. Each writes <name>.md + <name>.json with the commit.
"""
