"""submitit against the real test cluster: job arrays, preemption with checkpoint, external requeue.

Job code lives in this module and is pickled by value (the job process cannot import a test
module collected in importlib mode). Every wait is bounded; a job left behind is cancelled.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import cloudpickle
import pytest
import submitit

pytestmark = pytest.mark.slurm
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# ---------------------------------------------------------------- job code (runs on the node)

def square(x: int) -> dict:
    return {
        "x": x,
        "y": x * x,
        "job_id": os.environ.get("SLURM_JOB_ID"),
        "array_job_id": os.environ.get("SLURM_ARRAY_JOB_ID"),
        "array_task_id": os.environ.get("SLURM_ARRAY_TASK_ID"),
        "omp_threads": os.environ.get("OMP_NUM_THREADS"),
    }


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class StepCounter(submitit.helpers.Checkpointable):
    """Counts `steps` steps of `step_s` seconds, logging each to workdir/steps.log.

    Resumes from workdir/checkpoint.txt when it exists. That file is written by `checkpoint()`,
    which submitit calls on its preemption/timeout signal (USR2) before it requeues the job;
    with `save_every_step=True` it is also written after every step, as pcbench's trainer does
    with its own checkpoints (the only thing that helps after an external `scontrol requeue`).
    """

    def __init__(self, workdir: str, steps: int, step_s: float, save_every_step: bool = False):
        self.workdir, self.steps, self.step_s, self.save_every_step = workdir, steps, step_s, save_every_step
        self.count = 0

    def _log(self, line: str) -> None:
        with open(Path(self.workdir) / "steps.log", "a") as f:
            f.write(line + "\n")

    def __call__(self) -> dict:
        ckpt = Path(self.workdir) / "checkpoint.txt"
        start = int(ckpt.read_text()) if ckpt.exists() else 0
        attempt = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
        self._log(f"start attempt={attempt} from={start}")
        self.count = start
        while self.count < self.steps:
            time.sleep(self.step_s)
            self.count += 1
            self._log(f"step {self.count} attempt={attempt}")
            if self.save_every_step:
                _write_atomic(ckpt, str(self.count))
        self._log(f"done attempt={attempt}")
        return {"start": start, "count": self.count, "attempt": attempt}

    def checkpoint(self, *args, **kwargs):
        _write_atomic(Path(self.workdir) / "checkpoint.txt", str(self.count))
        self._log(f"checkpoint count={self.count}")
        return super().checkpoint(*args, **kwargs)


# ---------------------------------------------------------------- helpers (run in pytest)

def make_executor(cluster, folder: Path, **params) -> submitit.AutoExecutor:
    # cluster="slurm" always: auto-detection would also pick Slurm here, but never rely on it
    ex = submitit.AutoExecutor(folder=folder / "%j", cluster="slurm")
    ex.update_parameters(**{"timeout_min": 5, "cpus_per_task": 1, "mem_gb": 1,
                            "slurm_partition": cluster.partition, **params})
    return ex


def wait_done(jobs, timeout: float) -> None:
    """Wait until all jobs are done; on timeout cancel them and fail with their state and logs."""
    end = time.monotonic() + timeout
    while not all(j.done() for j in jobs):
        if time.monotonic() > end:
            info = "\n".join(f"{j.job_id}: {j.state}\n{(j.stderr() or '')[-2000:]}" for j in jobs)
            for j in jobs:
                j.cancel(check=False)
            pytest.fail(f"jobs not done after {timeout}s:\n{info}")
        time.sleep(0.5)


def wait_for(predicate, timeout: float, what: str, jobs=()):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            for j in jobs:
                j.cancel(check=False)
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def log_lines(workdir: Path) -> list[str]:
    path = workdir / "steps.log"
    return path.read_text().splitlines() if path.exists() else []


def steps_seen(workdir: Path) -> list[int]:
    return [int(line.split()[1]) for line in log_lines(workdir) if line.startswith("step ")]


def steps_by_attempt(workdir: Path) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for line in log_lines(workdir):
        if line.startswith("step "):
            _, step, attempt = line.split()
            out.setdefault(int(attempt.split("=")[1]), []).append(int(step))
    return out


# ---------------------------------------------------------------- tests

def test_map_array_returns_results(slurm_cluster, tmp_path):
    ex = make_executor(slurm_cluster, tmp_path, slurm_setup=["export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK"])
    jobs = ex.map_array(square, [1, 2, 3])
    wait_done(jobs, timeout=60)
    results = [j.result() for j in jobs]
    assert [r["y"] for r in results] == [1, 4, 9]
    # one Slurm job array, one task per input
    assert len({r["array_job_id"] for r in results}) == 1
    assert sorted(r["array_task_id"] for r in results) == ["0", "1", "2"]
    assert all(r["omp_threads"] == "1" for r in results)
    # Slurm's own record (sacct) agrees; it may lag the result pickle by a moment (COMPLETING)
    wait_for(lambda: all(slurm_cluster.job_state(j.job_id) == "COMPLETED" for j in jobs), 30,
             "sacct/squeue to report COMPLETED")


def test_preempted_checkpointable_resumes_from_checkpoint(needs_accounting, tmp_path):
    """job._interrupt() = what Slurm does on preemption (SIGTERM, then USR2): submitit calls
    checkpoint(), requeues the job, and the rerun continues the count."""
    work = tmp_path / "work"
    work.mkdir()
    ex = make_executor(needs_accounting, tmp_path)
    job = ex.submit(StepCounter(str(work), steps=8, step_s=0.5))
    wait_for(lambda: len(steps_seen(work)) >= 3, 60, "3 steps before the interrupt", [job])
    job._interrupt()
    wait_done([job], timeout=90)
    result = job.result()
    lines = log_lines(work)
    steps = steps_seen(work)
    ckpt_lines = [line for line in lines if line.startswith("checkpoint")]
    assert len(ckpt_lines) == 1, lines
    ckpt_count = int(ckpt_lines[0].split("=")[1])
    assert ckpt_count >= 3
    # the rerun started where the checkpoint left off: the count continues, every step once
    assert result == {"start": ckpt_count, "count": 8, "attempt": 1}, lines
    assert steps == list(range(1, 9)), lines
    assert steps_by_attempt(work)[1] == list(range(ckpt_count + 1, 9)), lines
    assert f"start attempt=1 from={ckpt_count}" in lines


def test_external_requeue_reruns_job(needs_accounting, tmp_path):
    """`scontrol requeue` (an admin, or a node failure with --requeue) kills and reruns the job.
    submitit does NOT checkpoint then (it ignores the SIGTERM; only USR2 triggers checkpoint()),
    so the rerun starts from scratch unless the job saved its own state: pcbench's trainer must
    resume from its run folder's checkpoint/."""
    plain, saving = tmp_path / "plain", tmp_path / "saving"
    plain.mkdir()
    saving.mkdir()
    ex = make_executor(needs_accounting, tmp_path)
    # 16 steps: the first attempt ignores SIGTERM and runs on for KillWait (5 s) before SIGKILL
    jobs = [ex.submit(StepCounter(str(plain), steps=16, step_s=0.5)),
            ex.submit(StepCounter(str(saving), steps=16, step_s=0.5, save_every_step=True))]
    wait_for(lambda: all(len(steps_seen(w)) >= 2 for w in (plain, saving)), 60, "2 steps in both jobs", jobs)
    for job in jobs:
        needs_accounting.cmd("scontrol", "requeue", job.job_id)
    wait_done(jobs, timeout=120)
    r_plain, r_saving = (j.result() for j in jobs)
    for work in (plain, saving):
        lines = log_lines(work)
        assert [line for line in lines if line.startswith("start ")][0] == "start attempt=0 from=0", lines
        assert len([line for line in lines if line.startswith("start ")]) == 2, lines  # ran twice
        assert not any(line.startswith("checkpoint") for line in lines), lines       # no checkpoint()
    # no own checkpoint: the rerun restarted the count from 0
    assert r_plain == {"start": 0, "count": 16, "attempt": 1}
    assert steps_by_attempt(plain)[1] == list(range(1, 17))
    # own per-step checkpoint: the rerun resumed where the first attempt was killed
    first = steps_by_attempt(saving)[0]
    assert len(first) >= 2
    assert r_saving == {"start": first[-1], "count": 16, "attempt": 1}
    assert steps_by_attempt(saving)[1] == list(range(first[-1] + 1, 17))
