"""The embedded 3-method sweep of pcbench's own trainer as one Slurm job array.

    python -m pcbench.run -m +cluster=debug_ci method=grpo,dapo,pilot_commit train.steps=2 ...

goes through conf/cluster/debug_ci.yaml -> conf/hydra/launcher/slurm.yaml (submitit_slurm) and
must leave three finished run folders under paths.results where `analysis` finds them.
"""

from __future__ import annotations

import json
import os
import re
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


def test_embedded_sweep_runs_as_job_array(slurm_cluster, trainer_available, default_warmstart_cache, tmp_path):
    results = tmp_path / "results"
    cache = default_warmstart_cache  # the session's default warm start (tests/conftest.py), trained before the jobs
    cmd = [sys.executable, "-m", "pcbench.run", "-m", "+cluster=debug_ci",
           f"method={','.join(METHODS)}", *TINY, f"paths.results={results}", f"paths.cache={cache}"]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)  # ~100 s loaded
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

    from pcbench.analysis.run_frames import load_runs

    runs, metrics, warnings = load_runs([results])
    assert sorted(runs["method"]) == sorted(METHODS), (runs, warnings)
    assert set(runs["status"]) == {"finished"}, runs[["method", "status"]]
    assert (runs["last_step"] == 2).all(), runs[["method", "last_step"]]


def _steps(run: Path) -> list[int]:
    path = run / "metrics.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(int(json.loads(line)["step"]))
        except (ValueError, KeyError):
            break  # a line being written
    return out


def test_requeued_trainer_job_resumes_from_its_checkpoint(needs_accounting, trainer_available, default_warmstart_cache,
                                                          tmp_path):
    """`scontrol requeue` of a running pcbench.run job: submitit reruns it from scratch (no
    checkpoint() on an external requeue), the rerun finds the same run folder (same config ->
    same run_id) and resumes from checkpoint/: every step exactly once, one summary."""
    import time

    # The first attempt ignores SIGTERM and runs on for KillWait (5 s) after the requeue; it must
    # be SIGKILLed before it finishes. Measured: 6 steps/s on the AMD development machine, 17 steps/s
    # on CI's machine (80 steps were too few there: the attempt finished inside KillWait). 300 steps
    # leave 3.5x margin.
    STEPS = 300
    results = tmp_path / "results"
    cache = default_warmstart_cache  # trained before the job: the job's first steps come within seconds
    cmd = [sys.executable, "-m", "pcbench.run", "-m", "+cluster=debug_ci", "method=grpo",
           *[o for o in TINY if not o.startswith(("train.steps", "train.eval_every"))],
           f"train.steps={STEPS}", f"train.eval_every={STEPS // 2}", "train.checkpoint_every=1",
           f"paths.results={results}", f"paths.cache={cache}"]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job_ids: list[str] = []
    try:
        deadline = time.monotonic() + 240  # the job's start-up and 2 steps: ~30 s loaded
        run = None
        while time.monotonic() < deadline and proc.poll() is None:
            runs = list(results.glob("embedded/*/metrics.jsonl"))
            if runs and len(_steps(runs[0].parent)) >= 3:   # step 0 eval + 2 training steps
                run = runs[0].parent
                break
            time.sleep(0.2)
        assert run is not None, f"run did not reach step 2 (rc={proc.poll()})"
        # a one-job sweep is a plain job (submitit only makes arrays of >= 2): .submitit/<jobid>/
        job_ids = [p.name for p in results.glob(".hydra/multirun_*/.submitit/*") if p.is_dir()]
        assert len(job_ids) == 1, job_ids
        needs_accounting.cmd("scontrol", "requeue", job_ids[0])
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            needs_accounting.cmd("scancel", *job_ids, check=False)
    assert proc.returncode == 0, out[-6000:]
    log = next(results.glob(f".hydra/multirun_*/.submitit/{job_ids[0]}/*_log.out")).read_text()
    # submitit's log: two starts, SIGTERM ignored (no checkpoint()), then the trainer's resume line
    assert log.count("Starting with JobEnvironment") == 2, ("the first attempt was not killed: it finished "
                                                            "inside KillWait? " + log[-3000:])
    assert "Bypassing signal SIGTERM" in log and "Calling checkpoint method" not in log, log[-3000:]
    resumed = re.search(r"resumed \S+ at step (\d+)", log)
    assert resumed and 2 <= int(resumed.group(1)) < STEPS, log[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["steps"] == STEPS
    assert _steps(run) == list(range(0, STEPS + 1)), _steps(run)   # no step twice, none skipped
    show = needs_accounting.cmd("scontrol", "show", "job", job_ids[0])
    assert "Restarts=1" in show, show
