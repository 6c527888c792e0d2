"""pcbench.bench as a user runs it, on the tiny embedded config: run folders, reuse, the
committed report's contents, config errors before training, failed runs reported."""

import json
import subprocess
import sys

import pytest

TINY = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null", "model.warmstart.steps=250", "model/warmstart=stop_only", "data.train_size=240",
        "data.tiers.add33=0.0", "data.tiers.add44=0.0", "++data.tiers.add21=0.5",
        "data.val_size=16", "data.sft_size=1000", "train.batch_size=4", "train.mini_batch_size=2",
        "train.eval_every=1", "method.max_rounds=30"]
METHODS = "grpo,dapo,pilot_commit_bayes,oracle"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("warmstart-cache")


def bench(*args, cache, timeout=600):
    overrides = [x for o in TINY + [f"paths.cache={cache}"] for x in ("-o", o)]
    cmd = [sys.executable, "-m", "pcbench.bench", args[0], *overrides, *args[1:]]  # the test's -o come last, win
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_sample_efficiency_end_to_end_and_reuse(tmp_path, cache):
    runs, out = tmp_path / "runs", tmp_path / "out"
    proc = bench("sample_efficiency", "--seeds", "2", "--aa-seeds", "2", "--methods", METHODS, "--steps", "3",
                 "--runs", str(runs), "--out", str(out), "--n-boot", "200", cache=cache)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((out / "sample_efficiency.json").read_text())
    assert len(report["provenance"]["commit"]) == 40 and report["setup"]["steps"] == 3
    assert [r["method"] for r in report["records"]] == ["grpo", "dapo", "oracle", "pilot_commit_bayes"]
    assert all(r["seeds"] == 2 for r in report["records"]) and len(report["per_run"]) == 8
    assert report["target"] is not None and {r["method"] for r in report["timing"]} == set(METHODS.split(","))
    assert set(report["goals"]) == {"pc_vs_grpo", "pc_vs_dapo", "bayes_vs_pc", "best_vs_oracle"}
    oracle = next(r for r in report["records"] if r["method"] == "oracle")
    assert oracle["ratio_to_oracle"] in (1.0, None)
    md = (out / "sample_efficiency.md").read_text()
    assert report["provenance"]["commit"] in md and "| Pilot-Commit (Bayes) |" in md  # labels: pcbench/analysis/methods.py
    # the A/A (GRPO on seeds 2, 3) is scored apart from the main table, its runs in their own experiment
    assert report["aa_seeds"] == [2, 3] and set(report["aa"]) == {"paper", "reference"}
    assert md.index("A/A noise floor") < md.index("## Rollouts to target (paper target)")
    assert (runs / "sample_efficiency_aa").is_dir() and len(report["per_run"]) == 8
    curves = (out / "curves.csv").read_text().splitlines()
    assert curves[0].startswith("method,seed_set,seed,step,cumulative_rollouts,val_acc") and "val_acc_se" in curves[0]
    assert len(curves) == 1 + 10 * 4  # 10 runs x evaluations at steps 0..3
    regime = (out / "regime.csv").read_text().splitlines()
    assert regime[0].startswith("method,seed,step,cumulative_rollouts,groups,all_correct,all_wrong")
    assert len(regime) == 1 + 8 * 3 and (out / "regime_card.png").exists()
    # the same request again trains nothing, and each folder is the one pcbench.run would use
    again = bench("sample_efficiency", "--seeds", "2", "--aa-seeds", "2", "--methods", METHODS, "--steps", "3",
                  "--runs", str(runs), "--out", str(out), "--n-boot", "200", cache=cache)
    assert again.returncode == 0 and "10 already finished, 0 to train" in again.stdout
    rescore = bench("sample_efficiency", "--seeds", "2", "--aa-seeds", "2", "--methods", METHODS, "--steps", "3",
                    "--runs", str(runs), "--out", str(out), "--n-boot", "200", "--score-only", cache=cache)
    rescored = json.loads((out / "sample_efficiency.json").read_text())
    assert rescore.returncode == 0 and "rescored" in rescored["provenance"]
    assert rescored["provenance"]["date_utc"] == report["provenance"]["date_utc"]  # the training run's record
    assert rescored["budget"] is not None and all("acc_at_budget" in r for r in rescored["records"])
    cmd = report["runs"][0]["command"].split()[3:]
    direct = subprocess.run([sys.executable, "-m", "pcbench.run", *cmd, *TINY, f"paths.cache={cache}"],
                            capture_output=True, text=True, timeout=300)
    assert direct.returncode != 0 and "finished run of this exact config" in direct.stderr


def test_config_error_stops_the_benchmark_before_training(tmp_path, cache):
    proc = bench("sample_efficiency", "--methods", "pods", "--runs", str(tmp_path / "runs"),
                 "--out", str(tmp_path / "out"), "-o", "method.extra.n_generate=8", cache=cache)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("pcbench.bench: config error: ")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()


def test_a_starved_run_is_scored_not_fatal(tmp_path, cache):
    """Pilot-Commit cannot fill a step in one round (commits come a round later): the run stops at the
    round bound, the benchmark goes on and scores it, censored from its last evaluation (docs/method.md
    #rollouts-to-target); a crash would be listed as a failure instead (tests/bench/test_starved.py)."""
    proc = bench("sample_efficiency", "--seeds", "1", "--methods", "grpo,pilot_commit", "--steps", "2",
                 "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--n-boot", "100",
                 "-o", "method.max_rounds=1", cache=cache)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((tmp_path / "out" / "sample_efficiency.json").read_text())
    assert report["failures"] == []
    (stopped,) = [r for r in report["runs"] if r["status"] == "starved"]
    assert stopped["method"] == "pilot_commit" and stopped["reason"] == "round_bound"
    assert "AllocationError" in stopped["error"] and "after 1 sampling rounds" in stopped["error"]
    pc = next(r for r in report["records"] if r["method"] == "pilot_commit")
    assert (pc["seeds"], pc["starved"], pc["unfinished"]) == (1, 1, 0)  # scored, not dropped
    (row,) = [r for r in report["per_run"] if r["method"] == "pilot_commit"]
    assert (row["status"], row["stop_reason"]) == ("starved", "round_bound")
    md = (tmp_path / "out" / "sample_efficiency.md").read_text()
    assert "- Pilot-Commit: 1 of 1 runs stopped by the round bound (method.max_rounds)" in md
    assert "## Failed runs" not in md


def test_throughput_compares_both_samplers(tmp_path, cache):
    proc = bench("throughput", "--batch", "16,32", "--repeats", "1", "--weights", "random", "--out", str(tmp_path),
                 cache=cache)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads((tmp_path / "throughput.json").read_text())["rows"]
    assert [(r["batch"], r["sampler"]) for r in rows] == [(16, "embedded sample"), (16, "hf generate"),
                                                          (32, "embedded sample"), (32, "hf generate")]
    assert all(r["tokens_per_s"] > 0 and 0 < r["mean_length"] <= 8 for r in rows)
    assert all(r["same_tokens"] == 1.0 for r in rows)  # seeded alike, below the 512-row chunk: identical
    assert "| 32 | embedded sample |" in (tmp_path / "throughput.md").read_text()


def test_killing_the_bench_stops_its_workers(tmp_path, cache):
    """`kill <bench pid>` (SIGTERM to the parent only, as a scheduler or a user does) must not
    leave its workers training as orphans."""
    import os
    import signal
    import time

    import psutil

    overrides = [x for o in TINY + [f"paths.cache={cache}"] for x in ("-o", o)]
    cmd = [sys.executable, "-m", "pcbench.bench", "sample_efficiency", *overrides, "--seeds", "1", "--aa-seeds", "0",
           "--methods", "grpo,dapo", "--steps", "500", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = []
    try:
        deadline = time.time() + 240
        while time.time() < deadline and len(workers) < 2:
            time.sleep(1)
            workers = psutil.Process(proc.pid).children()
        assert len(workers) >= 2, "the bench did not start its workers"
        time.sleep(3)
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        gone, alive = psutil.wait_procs(workers, timeout=30)
        assert not alive, f"orphaned workers still running: {[p.pid for p in alive]}"
    finally:  # a failed run of this test must not leave them either; only the bench's own processes
        # (not every child of pytest: that killed the reward guard's idle workers of other tests)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in workers:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass


# how the bench spelt its jobs before it composed exp=sample_efficiency (issue 21); every run
# folder it made must still be the one the bench finds, so the two spellings compose alike
OLD_COMMON = ("experiment={experiment}", "paths.results={runs}", "train.threads=1", "logging.progress=false")


@pytest.mark.parametrize("extra", [[], ["--experiment", "foo", "--runs", "/tmp/r", "--steps", "3"]])
def test_bench_jobs_compose_the_exp_into_the_same_run_folders(extra):
    from pathlib import Path

    from omegaconf import OmegaConf

    from pcbench.bench.__main__ import build_parser
    from pcbench.config import compose_cfg
    from pcbench.bench.sample_efficiency import plan_jobs
    from pcbench.rundir import run_path

    args = build_parser().parse_args(["sample_efficiency", "--seeds", "1", "--aa-seeds", "1", *extra])
    jobs, aa_jobs, home = plan_jobs(args, ["grpo", "pilot_commit_bayes"])
    experiment, runs = ("foo", "/tmp/r") if extra else ("sample_efficiency", "results/bench_runs")
    assert home == Path(runs) / experiment and len(jobs) == 2 and len(aa_jobs) == 1
    for job in jobs + aa_jobs:
        assert "exp=sample_efficiency" in job.overrides
        assert not any(o.startswith(("train.threads=", "logging.progress=")) for o in job.overrides)
        name = experiment + ("_aa" if job in aa_jobs else "")
        old = [o.format(experiment=name, runs=runs) for o in OLD_COMMON] + (["train.steps=3"] if extra else [])
        before, now = compose_cfg([f"method={job.method}", f"seed={job.seed}", *old]), compose_cfg(job.overrides)
        assert run_path(now) == run_path(before)
        assert OmegaConf.to_container(now, resolve=True) == OmegaConf.to_container(before, resolve=True)
