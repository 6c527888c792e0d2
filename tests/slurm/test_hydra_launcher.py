"""Hydra multirun through hydra-submitit-launcher on a tiny throwaway app written into tmp_path.

- plain `hydra/launcher=submitit_slurm` against the test cluster;
- pcbench's own launcher configs (conf/hydra/launcher/slurm.yaml via +cluster=debug_ci, and
  conf/hydra/launcher/local.yaml, which needs no Slurm) found through hydra.searchpath.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

APP = textwrap.dedent('''
    import json, os
    from pathlib import Path
    import hydra
    from hydra.core.hydra_config import HydraConfig

    @hydra.main(version_base=None, config_path="conf", config_name="config")
    def main(cfg):
        hc = HydraConfig.get()
        out = {
            "x": cfg.x,
            "y": cfg.x * 10,
            "job_num": hc.job.num,
            "override_dirname": hc.job.override_dirname,
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "array_job_id": os.environ.get("SLURM_ARRAY_JOB_ID"),
            "array_task_id": os.environ.get("SLURM_ARRAY_TASK_ID"),
            "partition": os.environ.get("SLURM_JOB_PARTITION"),
            "cpus": os.environ.get("SLURM_CPUS_PER_TASK"),
            "omp_threads": os.environ.get("OMP_NUM_THREADS"),
            "cwd": os.getcwd(),
        }
        Path(hc.runtime.output_dir, "result.json").write_text(json.dumps(out))
        return out["y"]

    if __name__ == "__main__":
        main()
''')


def write_app(tmp_path: Path) -> Path:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("x: 0\n")
    (tmp_path / "app.py").write_text(APP)
    return tmp_path / "app.py"


def multirun(tmp_path: Path, *overrides: str, env: dict | None = None, timeout: float = 120):
    app = write_app(tmp_path)
    sweep = tmp_path / "multirun"
    cmd = [sys.executable, str(app), "-m", f"hydra.sweep.dir={sweep}", *overrides]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env or dict(os.environ), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    results = sorted((json.loads(p.read_text()) for p in sweep.glob("*/result.json")), key=lambda r: r["x"])
    return sweep, results, proc


def assert_one_array(results, sweep: Path) -> None:
    assert [r["x"] for r in results] == [1, 2, 3]
    assert [r["y"] for r in results] == [10, 20, 30]
    assert len({r["array_job_id"] for r in results}) == 1, results        # one job array ...
    assert sorted(r["array_task_id"] for r in results) == ["0", "1", "2"]  # ... of 3 tasks
    # job output dirs (0/, 1/, 2/ with .hydra/) and submitit logs both live in the sweep dir
    for r in results:
        assert (sweep / str(r["job_num"]) / ".hydra" / "overrides.yaml").exists()
    logs = list((sweep / ".submitit").glob("*/*_log.out"))
    assert len(logs) == 3, logs


@pytest.mark.slurm
def test_multirun_submitit_slurm(slurm_cluster, tmp_path):
    sweep, results, _ = multirun(tmp_path, "hydra/launcher=submitit_slurm",
                                 f"hydra.launcher.partition={slurm_cluster.partition}",
                                 "hydra.launcher.timeout_min=5", "hydra.launcher.mem_gb=1",
                                 "x=1,2,3")
    assert_one_array(results, sweep)
    assert all(r["partition"] == slurm_cluster.partition for r in results)


@pytest.mark.slurm
def test_multirun_pcbench_cluster_preset(slurm_cluster, tmp_path):
    """conf/cluster/debug_ci.yaml -> conf/hydra/launcher/slurm.yaml (setup lines set the threads)."""
    sweep, results, _ = multirun(tmp_path, f"hydra.searchpath=[file://{REPO / 'conf'}]", "+cluster=debug_ci",
                                 "x=1,2,3")
    assert_one_array(results, sweep)
    assert all(r["partition"] == "debug" and r["cpus"] == "1" and r["omp_threads"] == "1" for r in results)
    cfg = (sweep / ".submitit").glob("*/*_submission.sh")
    script = next(cfg).read_text()
    assert "#SBATCH --partition=debug" in script and "#SBATCH --job-name=pcbench-app" in script, script


def test_multirun_pcbench_local_launcher(tmp_path):
    """conf/hydra/launcher/local.yaml: no Slurm needed; every job gets one OpenMP thread."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    sweep, results, _ = multirun(tmp_path, f"hydra.searchpath=[file://{REPO / 'conf'}]", "hydra/launcher=local",
                                 "x=1,2,3", env=env)
    assert [r["y"] for r in results] == [10, 20, 30]
    assert all(r["omp_threads"] == "1" and r["slurm_job_id"] is None for r in results), results
