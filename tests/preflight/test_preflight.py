"""`python -m pcbench.preflight`: every check against fakes of what a GPU node or a Slurm login node
answers (torch.cuda, NCCL, sinfo / sacctmgr / sbatch on PATH, free disk, installed versions), and
against this machine's real state: a CPU box says which checks need a GPU node and exits non-zero
for a GPU config, and passes the embedded default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from pcbench import preflight_checks as host_checks
from pcbench import preflight_files as file_checks
from pcbench.preflight import TARGETS, compose_args, verdict

REPO = Path(__file__).resolve().parents[2]
QWEN = ["backend=verl", "model=qwen2.5-math-1.5b", "data=deepmath", "method=pilot_commit"]
GB = 10**9


def states(checks, name):
    return [(c.state, c.text) for c in checks if c.name == name]


@pytest.fixture
def gpu_node(monkeypatch):
    """torch as it answers on a node with `n` H100s of 80 GB, `free` GB free on GPU 0."""
    def make(n=8, free=79, total=80, nccl=True):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H100 80GB HBM3")
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i=0: (free * GB, total * GB))
        monkeypatch.setattr(torch.version, "cuda", "12.8")
        monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: nccl)
        monkeypatch.setattr(torch.cuda.nccl, "version", lambda: (2, 27, 3))
    return make


def test_gpus_nccl_and_rollout_memory_on_a_fake_gpu_node(gpu_node):
    cfg = compose_args([*QWEN, "model.nnodes=1"])
    gpu_node(n=8)
    assert states(host_checks.gpus(cfg), "gpus")[0][0] == "ok"
    assert states(host_checks.nccl(cfg), "nccl") == [("ok", "NCCL 2.27.3 with 8 visible GPU(s)")]
    assert states(file_checks.memory(cfg), "rollout memory")[0][0] == "ok"
    gpu_node(n=4)
    assert states(host_checks.gpus(cfg), "gpus") == [("FAIL", "torch sees 4 x NVIDIA H100 80GB HBM3, the run wants 8 per node; "
                                                      "run on a node with 8 GPUs (Slurm: gpus_per_node) or set "
                                                      "model.n_gpus_per_node=4")]
    gpu_node(nccl=False)
    assert states(host_checks.nccl(cfg), "nccl")[0][0] == "FAIL"
    gpu_node(free=20)
    assert states(file_checks.memory(cfg), "rollout memory") == [("FAIL", "vLLM asks gpu_memory_utilization=0.6 x 80 GB = 48 GB, "
                                                                  "only 20 GB free on GPU 0 (another process holds it); "
                                                                  "free the GPU or lower model.gpu_memory_utilization")]
    gpu_node(free=39, total=40)
    assert states(file_checks.memory(cfg), "rollout memory") == [("FAIL", "the GPUs hold 40 GB, model.gpu_memory_gb=80 assumes "
                                                                  "more; set model.gpu_memory_gb=40")]
    big = compose_args([*QWEN, "model.nnodes=1", "model.params_b=30", "model.gpu_memory_gb=40", "model.offload=true",
                        "model.tensor_parallel=4"])
    assert states(file_checks.memory(big), "rollout memory")[0][0] == "ok"
    gpu_node(free=39, total=40)
    small_tp = compose_args([*QWEN, "model.nnodes=1", "model.params_b=30", "model.gpu_memory_gb=40", "model.offload=true",
                             "model.tensor_parallel=2", "model.gpu_memory_utilization=0.7"])
    assert "raise model.tensor_parallel" in states(file_checks.memory(small_tp), "rollout memory")[0][1]


def test_versions_against_the_ones_the_verl_path_targets(monkeypatch):
    cfg = compose_args(QWEN)
    monkeypatch.setattr(host_checks, "installed", lambda d: {**TARGETS, "torch": "2.11.0+cu130"}.get(d))
    assert states(host_checks.versions(cfg), "versions") == [("ok", "verl 0.9.1, vllm 0.24.0, torch 2.11.0+cu130, flash-attn 2.8.3")]
    monkeypatch.setattr(host_checks, "installed", lambda d: {**TARGETS, "vllm": "0.23.1", "flash-attn": None}.get(d))
    [(state, text)] = states(host_checks.versions(cfg), "versions")
    assert state == "FAIL" and "found verl 0.9.1, vllm 0.23.1, torch 2.11.0, flash-attn not installed" in text
    assert "pip install -e '.[gpu]'" in text


def fake_slurm(tmp_path, monkeypatch, sinfo: str, assoc: str = "") -> Path:
    """sinfo / sacctmgr answering as a site would, and an sbatch that records any call."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    for name, body in (("sinfo", sinfo), ("sacctmgr", assoc)):
        (bin_ / name).write_text(f"#!/bin/sh\ncat <<'EOF'\n{body}\nEOF\n")
    (bin_ / "sbatch").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/sbatch_calls\necho 'Submitted batch job 1'\n")
    for p in bin_.iterdir():
        p.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    return bin_


SLURM = [*QWEN, "hydra/launcher=slurm_verl"]


@pytest.mark.parametrize("env,sinfo,assoc,want", [
    ({}, "gpu 16 gpu:h100:8(S:0-1)", "", ("FAIL", "no partition set; export PCBENCH_SLURM_PARTITION")),
    ({"PCBENCH_SLURM_PARTITION": "gpu"}, "", "", ("FAIL", "partition 'gpu' not found by sinfo")),
    ({"PCBENCH_SLURM_PARTITION": "gpu"}, "gpu 16 gpu:4", "", ("FAIL", "partition 'gpu' nodes have 4 GPUs (gres), the job asks 8")),
    ({"PCBENCH_SLURM_PARTITION": "gpu"}, "gpu 1 gpu:8", "", ("FAIL", "partition 'gpu' has 1 nodes, the job asks 2")),
    ({"PCBENCH_SLURM_PARTITION": "gpu"}, "gpu 16 gpu:h100:8(S:0-1)", "", ("ok", "partition 'gpu': 16 node(s) with 8 GPUs")),
])
def test_slurm_partition_against_a_fake_sinfo(tmp_path, monkeypatch, env, sinfo, assoc, want):
    for k in ("PCBENCH_SLURM_PARTITION", "PCBENCH_SLURM_ACCOUNT", "PCBENCH_SLURM_QOS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    fake_slurm(tmp_path, monkeypatch, sinfo, assoc)
    [first, *_] = host_checks.slurm(compose_args(SLURM))
    assert (first.state, first.text[:len(want[1])]) == want


@pytest.mark.parametrize("account,qos,want", [
    ("proj", "normal", ("ok", "account=proj qos=normal associated with user")),
    ("other", None, ("FAIL", "user tester has no association with account 'other' (has: proj, proj2)")),
    ("proj", "high", ("FAIL", "QOS 'high' is not allowed for account proj (allowed: long, normal)")),
])
def test_slurm_account_and_qos_against_a_fake_sacctmgr(tmp_path, monkeypatch, account, qos, want):
    monkeypatch.setenv("PCBENCH_SLURM_PARTITION", "gpu")
    monkeypatch.setenv("PCBENCH_SLURM_ACCOUNT", account)
    monkeypatch.setenv("USER", "tester")
    if qos:
        monkeypatch.setenv("PCBENCH_SLURM_QOS", qos)
    else:
        monkeypatch.delenv("PCBENCH_SLURM_QOS", raising=False)
    fake_slurm(tmp_path, monkeypatch, "gpu 16 gpu:8", "proj|normal,long\nproj2|debug")
    checks = host_checks.slurm(compose_args(SLURM))
    [(state, text)] = states(checks, "slurm account")
    assert (state, text[:len(want[1])]) == want


def test_no_sinfo_means_not_a_login_node(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert states(host_checks.slurm(compose_args(SLURM)), "slurm")[0][0] == "FAIL"
    assert states(host_checks.slurm(compose_args(QWEN)), "slurm")[0][0] == "skip"  # launched here: no Slurm needed


def verl_rows(n: int) -> pd.DataFrame:
    return pd.DataFrame({"data_source": ["s"] * n, "prompt": [[{"role": "user", "content": "q"}]] * n,
                         "ability": ["math"] * n, "reward_model": [{"style": "rule", "ground_truth": "1"}] * n,
                         "extra_info": [{"index": i} for i in range(n)]})


def test_data_files_present_with_verls_columns_and_rows(tmp_path):
    verl_rows(5).to_parquet(tmp_path / "train.parquet")
    verl_rows(0).to_parquet(tmp_path / "empty.parquet")
    verl_rows(3).drop(columns=["reward_model"]).to_parquet(tmp_path / "foreign.parquet")
    cfg = compose_args([*QWEN, f"data.train_files={tmp_path}/train.parquet",
                        f"data.val_files=[{tmp_path}/empty.parquet,{tmp_path}/foreign.parquet,{tmp_path}/aime24.parquet]"])
    got = {c.name: (c.state, c.text) for c in file_checks.data(cfg)}
    assert got["data train.parquet"] == ("ok", f"{tmp_path}/train.parquet: 5 rows, verl's columns")
    assert got["data empty.parquet"][0] == "FAIL" and "no rows" in got["data empty.parquet"][1]
    assert got["data foreign.parquet"][0] == "FAIL" and "['reward_model']" in got["data foreign.parquet"][1]
    assert got["data aime24.parquet"] == ("FAIL", f"missing data file(s) {tmp_path}/aime24.parquet; prepare them with: "
                                                  f"python -m pcbench.data.prepare aime24 --out {tmp_path}")


def test_own_data_is_checked_at_its_source(tmp_path):
    (tmp_path / "mine.jsonl").write_text('{"question": "1+1?", "answer": "2"}\n')
    cfg = compose_args(["backend=verl", "model=tiny-verl", "data=own", f"data.source={tmp_path}/mine.jsonl",
                        f"paths.cache={tmp_path}"])
    [(state, text)] = states(file_checks.data(cfg), "data source")
    assert state == "FAIL" and text == (f"{tmp_path}/mine.jsonl: no column 'problem' (data.question); the file has "
                                        f"['question', 'answer']; set data.question=<one of them>")


def test_model_weights_where_the_config_points(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    [(state, text)] = states(file_checks.model(compose_args(QWEN)), "model")
    assert state == "FAIL" and "not in the Hugging Face cache here" in text
    folder = tmp_path / "qwen"
    folder.mkdir()
    assert states(file_checks.model(compose_args([*QWEN, f"model.path={folder}"])), "model")[0][0] == "FAIL"
    (folder / "config.json").write_text('{"hidden_size": 1536, "num_attention_heads": 12}')
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    assert states(file_checks.model(compose_args([*QWEN, f"model.path={folder}"])), "model")[0][0] == "ok"


def test_free_disk_for_the_checkpoints(monkeypatch, tmp_path):
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(file_checks.shutil, "disk_usage", lambda p: usage(10**13, 0, 100 * GB))
    cfg = compose_args([*QWEN, f"paths.results={tmp_path}"])
    [(state, text)] = states(file_checks.disk(cfg), "disk")
    assert state == "FAIL" and text.startswith("20 checkpoint(s) (train.steps=1000 / every 50) of ~24.6 GB")
    assert "verl.trainer.max_actor_ckpt_to_keep=2" in text
    kept = compose_args([*QWEN, f"paths.results={tmp_path}", "+verl.trainer.max_actor_ckpt_to_keep=2"])
    assert states(file_checks.disk(kept), "disk")[0][0] == "ok"


def test_a_reward_that_fails_on_a_sample(tmp_path, monkeypatch):
    from pcbench.reward import procguard

    monkeypatch.setattr(procguard, "_default", None)  # a new guard: its workers get this sys.path
    (tmp_path / "brokenreward.py").write_text("def score(r, g, e):\n    return {'score': 1}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = compose_args(["backend=verl", "model=tiny-verl", "data=own", "data.reward=brokenreward:score"])
    [(state, text)] = states(file_checks.reward(cfg), "reward")
    assert state == "FAIL" and "returned a dict without 'acc'" in text
    procguard._default.shutdown()


def test_verdict_needs_every_check_ok():
    from pcbench.preflight import Check

    assert verdict([Check("a", "ok", ""), Check("b", "skip", "")])[0] == 0
    assert verdict([Check("a", "ok", ""), Check("b", "GPU", "")]) == (
        1, "preflight: 1 ok, 1 need a GPU node (b): the run cannot start here")
    assert verdict([Check("a", "FAIL", "")])[0] == 1


def preflight(*argv, env=None):
    return subprocess.run([sys.executable, "-m", "pcbench.preflight", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine's real state: a CPU box")
def test_this_cpu_machine_says_which_checks_need_a_gpu_node():
    out = preflight(*QWEN)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    gpu = [line.split(":")[0].split(None, 1)[1] for line in lines if line.startswith("GPU ")]
    assert gpu == ["gpus", "nccl", "rollout memory"]
    assert all("needs a GPU node" in line for line in lines if line.startswith("GPU "))
    assert lines[-1].endswith("3 need a GPU node (gpus, nccl, rollout memory): the run cannot start here")
    default = preflight()
    assert default.returncode == 0 and default.stdout.splitlines()[-1].endswith("ok: the run can start here")


def test_a_bad_override_is_one_line_and_exit_2():
    out = preflight("method=nope")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and out.stderr.startswith("pcbench: config error:")


def test_dry_run_prints_each_job_and_submits_nothing(tmp_path, monkeypatch):
    bin_ = fake_slurm(tmp_path, monkeypatch, "gpu 16 gpu:8")
    out = preflight("--dry-run", "-m", "--config-dir", "sweeps", "--config-name", "qwen3_8b_polaris",
                    env={"PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}", "PCBENCH_SLURM_PARTITION": "gpu"})
    lines = out.stdout.splitlines()
    assert lines[0] == "# pcbench preflight --dry-run: 3 job(s) this command would submit (nothing submitted)"
    for i, method in enumerate(("grpo", "dapo", "pilot_commit")):
        assert lines[1 + i] == (f"job {i}: slurm job: nodes=4 gpus_per_node=8 timeout_min=1440 requeues=20 "
                                f"partition=gpu account=None qos=None: python -m pcbench.run --config-dir=sweeps "
                                f"--config-name=qwen3_8b_polaris method={method} seed=0")
    assert out.returncode == 1  # then the first job's checks: this is no GPU node
    assert not (tmp_path / "sbatch_calls").exists()  # sbatch was on PATH and never called


def test_dry_run_of_a_command_line_sweep_keeps_its_launcher(monkeypatch):
    from pcbench.preflight import dry_run

    monkeypatch.setenv("PCBENCH_SLURM_PARTITION", "gpu")
    lines: list[str] = []
    jobs = dry_run(["-m", *QWEN[:2], "model.nnodes=1", "method=grpo,pilot_commit", "hydra/launcher=slurm_verl"],
                   out=lines.append)
    assert jobs == [[*QWEN[:2], "model.nnodes=1", "method=grpo"], [*QWEN[:2], "model.nnodes=1", "method=pilot_commit"]]
    assert lines[1] == ("job 0: slurm job: nodes=1 gpus_per_node=8 timeout_min=1440 requeues=20 partition=gpu "
                        "account=None qos=None: python -m pcbench.run backend=verl model=qwen2.5-math-1.5b "
                        "model.nnodes=1 method=grpo")
    local: list[str] = []
    dry_run(["-m", "method=grpo,dapo"], out=local.append)
    assert local[1] == "job 0: local (hydra/launcher=BasicLauncher, nothing submitted): python -m pcbench.run method=grpo"
