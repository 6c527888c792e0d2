"""Which hardware a verl run targets (backend.platform) and what the CPU platform changes.

    backend.platform=auto   cpu when torch sees no CUDA device AND the layout is one node x one
                            GPU (the only layout a CPU run can host, e.g. model=tiny-verl);
                            otherwise gpu, so a GPU config dry-run on a login node shows the GPU run
    backend.platform=cpu    force the CPU platform: one process per node, so model.n_gpus_per_node=1
                            (model.nnodes > 1 is a multi-node Slurm job: slurm_ray.py gives each
                            node one fake GPU; tests/slurm/test_multinode_verl.py)
    backend.platform=gpu    never the CPU platform

On gpu nothing here touches the verl config or the environment. On cpu, `cpu_overrides` are the
verl keys a CPU run needs (each with the failure it answers) and `cpu_env` the environment of
every verl process; the code that runs inside verl is pcbench/backends/verl/cpu_platform.py.
"""

from __future__ import annotations

import os
from typing import Mapping

from omegaconf import DictConfig, OmegaConf, open_dict

from pcbench.config import ConfigError

TRAINER_MODULE = "pcbench.backends.verl.trainer"
CPU_MODULE = "pcbench.backends.verl.cpu_platform"
# Environment variables holding lists: ours are appended, never replacing the user's.
LIST_VARS = {"VERL_USE_EXTERNAL_MODULES": ",", "PYTHONPATH": os.pathsep}

# (verl key, value, why). `+` keys are absent from verl's defaults.
CPU_OVERRIDES: list[tuple[str, object, str]] = [
    ("trainer.device", "cpu", "verl's default is cuda"),
    ("ray_kwargs.ray_init.num_gpus", 1, "verl places workers on Ray 'GPU' resources: one fake GPU"),
    ("actor_rollout_ref.actor.strategy", "fsdp2", "FSDP1 needs a CUDA device id"),
    ("actor_rollout_ref.ref.strategy", "fsdp2", "as the actor"),
    ("actor_rollout_ref.actor.fsdp_config.strategy", "fsdp2", "as the actor"),
    ("actor_rollout_ref.ref.fsdp_config.strategy", "fsdp2", "as the actor"),
    # not sdpa: its bf16 CPU kernel fails on an AMX CPU under pcbench's numerics pin ("pack_vnni2 is
    # only supported when avx512 is supported"), and vLLM's CPU engine needs that pin there (bf16
    # without it: "free(): invalid next size", its worker dies); measured on an Intel Xeon, 2026-12-06
    ("actor_rollout_ref.model.override_config.attn_implementation", "eager",
     "default wants flash-attn (CUDA); sdpa's bf16 CPU kernel fails on AMX CPUs under the numerics pin"),
    ("actor_rollout_ref.model.use_remove_padding", False, "remove-padding needs flash-attn's varlen kernels"),
    ("actor_rollout_ref.actor.use_torch_compile", False, "inductor on CPU: minutes of compile per shape"),
    ("actor_rollout_ref.actor.fsdp_config.use_torch_compile", False, "as above"),
    ("actor_rollout_ref.ref.use_torch_compile", False, "as above"),
    ("actor_rollout_ref.ref.fsdp_config.use_torch_compile", False, "as above"),
    ("actor_rollout_ref.rollout.enforce_eager", True, "no CUDA graphs on CPU"),
    ("actor_rollout_ref.rollout.free_cache_engine", False, "vLLM CPU: 'Sleep mode is not supported'"),
    ("actor_rollout_ref.rollout.enable_sleep_mode", False, "vLLM CPU: 'Sleep mode is not supported'"),
    ("actor_rollout_ref.rollout.agent.num_workers", 1, "one agent-loop worker per core is plenty"),
    ("reward.num_workers", 1, "as above"),
    ("data.dataloader_num_workers", 0, "no dataloader processes on 2 cores"),
    ("transfer_queue.backend.SimpleStorage.num_data_storage_units", 1,
     "with verl's default 8 storage units the TaskRunner waited forever on CPU"),
]
CPU_ENV = {
    "VERL_PLATFORM": "cpu",  # verl's platform registry picks pcbench's cpu platform
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache for vLLM's CPU engine (its default is 4)
}


def resolve(cfg: DictConfig, cuda_available: bool | None = None) -> str:
    """'cpu' or 'gpu' for this run (backend.platform; see the module docstring)."""
    want = str(cfg.backend.get("platform", "auto"))
    one_device = int(cfg.model.nnodes) * int(cfg.model.n_gpus_per_node) == 1
    if want not in ("auto", "cpu", "gpu"):
        raise ConfigError(f"backend.platform={want!r}: use auto, cpu or gpu")
    if want == "cpu" and int(cfg.model.n_gpus_per_node) != 1:
        raise ConfigError(f"backend.platform=cpu runs one process per node, not model={cfg.model.name}'s "
                          f"{cfg.model.n_gpus_per_node} GPUs per node; set model.n_gpus_per_node=1 "
                          f"(or use model=tiny-verl)")
    if want != "auto":
        return want
    if cuda_available is None:
        import torch

        cuda_available = torch.cuda.is_available()
    return "cpu" if one_device and not cuda_available else "gpu"


def apply_cpu(verl: DictConfig) -> None:
    """The CPU keys, in place, on a resolved standalone verl config."""
    with open_dict(verl):
        for key, value, _why in CPU_OVERRIDES:
            OmegaConf.update(verl, key, value, force_add=True)
        if int(verl.trainer.nnodes) > 1:
            # a multi-node job's Ray is started by slurm_ray.py (`ray start --num-gpus=1 --num-cpus=..`
            # per node); ray.init refuses resource counts when it connects to a running cluster
            verl.ray_kwargs.ray_init.num_gpus = None
            return
        if verl.ray_kwargs.ray_init.get("num_cpus") is None:
            # verl's workers ask Ray for more CPUs than a laptop has ("No available node types can
            # fulfill resource request {'CPU': 3.0, 'GPU': 1.0}"): logical CPUs, not cores
            verl.ray_kwargs.ray_init.num_cpus = 16


def env_for(platform: str, repo: str) -> dict[str, str]:
    """What every verl process needs: our modules on VERL_USE_EXTERNAL_MODULES (the CPU platform
    first: it must register before the trainer module imports verl's trainer), pcbench importable."""
    modules = ([CPU_MODULE] if platform == "cpu" else []) + [TRAINER_MODULE]
    env = {"VERL_USE_EXTERNAL_MODULES": ",".join(modules), "PYTHONPATH": repo}
    if platform == "cpu":
        env.update(CPU_ENV)
    return env


def merge_env(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """Later layers add to earlier ones. List variables (LIST_VARS) are joined, each entry once,
    earlier entries first (the user's VERL_USE_EXTERNAL_MODULES stays and ours are appended);
    for any other variable the first layer that sets it wins (the user's setting)."""
    out: dict[str, str] = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            value = str(value)
            if key in LIST_VARS and key in out:
                sep = LIST_VARS[key]
                have = [x for x in out[key].split(sep) if x]
                out[key] = sep.join(have + [x for x in value.split(sep) if x and x not in have])
            else:
                out.setdefault(key, value)
    return out
