"""The embedded 3-method sweep of pcbench's own trainer as one Slurm job array.

    python -m pcbench.run -m +cluster=debug_ci method=grpo,dapo,pilot_commit train.steps=2 ...

goes through conf/cluster/debug_ci.yaml -> conf/hydra/launcher/slurm.yaml (submitit_slurm) and
must leave three finished run folders under paths.results where `analysis` finds them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
METHODS = ("grpo", "dapo", "pilot_commit")
# Tiny sizes: 2 steps of 4 prompts x 8 rollouts (Pilot-Commit: 2 pilot + 6 commit), small eval.
TINY = ("train.steps=2", "train.batch_size=4", "train.mini_batch_size=2", "rollout.n=8",
        "train.eval_every=1", "data.val_size=16", "seed=0", "logging.progress=false")


@pytest.fixture
def trainer_available():
    if not (REPO / "pcbench" / "run.py").exists():
        pytest.skip("pcbench/run.py does not exist yet")


def test_embedded_sweep_runs_as_job_array(slurm_cluster, trainer_available, tmp_path):
    results = tmp_path / "results"
    # the warm-start cache is keyed by model+data config: keep it with the cluster, across sessions
    cache = slurm_cluster.dir / "pcbench-cache"
    cmd = [sys.executable, "-m", "pcbench.run", "-m", "+cluster=debug_ci",
           f"method={','.join(METHODS)}", *TINY, f"paths.results={results}", f"paths.cache={cache}"]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-6000:]}"

    # one job array of 3 tasks, its submitit logs inside the sweep dir under results/.hydra/
    sweeps = list((results / ".hydra").glob("multirun_*"))
    assert len(sweeps) == 1, sweeps
    logs = sorted((sweeps[0] / ".submitit").glob("*/*_log.out"))
    assert len(logs) == 3, logs
    assert len({p.parent.name.split("_")[0] for p in logs}) == 1, logs   # <array id>_<task>
    hydra_cfg = yaml.safe_load((sweeps[0] / "0" / ".hydra" / "hydra.yaml").read_text())
    assert hydra_cfg["hydra"]["launcher"]["_target_"].endswith("SlurmLauncher")
    assert hydra_cfg["hydra"]["launcher"]["partition"] == "debug"

    # run folders where analysis looks: results/<experiment>/<run_id>/
    run_dirs = sorted(p.parent for p in results.glob("*/*/summary.json"))
    assert len(run_dirs) == 3, sorted(str(p) for p in results.rglob("*") if p.is_file())
    for run in run_dirs:
        assert (run / "config.yaml").is_file() and (run / "metrics.jsonl").is_file()
        summary = json.loads((run / "summary.json").read_text())
        assert summary["status"] == "finished" and summary["steps"] == 2, summary
    methods = {yaml.safe_load((r / "config.yaml").read_text())["method"]["name"] for r in run_dirs}
    assert methods == set(METHODS)

    from analysis.runs import load_runs

    runs, metrics, warnings = load_runs([results])
    assert sorted(runs["method"]) == sorted(METHODS), (runs, warnings)
    assert set(runs["status"]) == {"finished"}, runs[["method", "status"]]
    assert (runs["last_step"] == 2).all(), runs[["method", "last_step"]]
