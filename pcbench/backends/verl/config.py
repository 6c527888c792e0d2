"""pcbench's composed config -> the standalone verl config a verl run takes.

`cfg.verl` is verl's own ppo_trainer tree (conf/verl/ppo_trainer.yaml) with pcbench's values
interpolated in (conf/backend/verl.yaml). Resolving it against the whole pcbench config and
cutting it loose gives exactly what `python -m verl.trainer.main_ppo` would hold, plus one
top-level key `pcbench:` (verl's section dataclasses reject unknown keys, its root does not)
that the `pcbench` trainer mode reads: the method, batch, seed and run folder.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import pcbench
from pcbench.backends.verl.platform import apply_cpu
from pcbench.backends.verl.platform import resolve as resolve_platform
from pcbench.config import ConfigError

REPO = Path(pcbench.__file__).resolve().parents[1]
PLUGIN = "pcbench.backends.verl.trainer"
REWARD_FILE = Path(pcbench.__file__).resolve().parent / "reward" / "verl_entry.py"

# (verl key, pcbench key): verl.* values the backend yaml derives from pcbench settings. A user
# who overrides the verl side directly would desynchronise the allocator from the trainer.
MIRRORED = [
    ("data.train_batch_size", "train.batch_size"),
    ("actor_rollout_ref.actor.ppo_mini_batch_size", "train.mini_batch_size"),
    ("actor_rollout_ref.rollout.n", "method.n"),
    ("trainer.total_training_steps", "train.steps"),
]


def check_backend_config(cfg: DictConfig) -> None:
    """One-line ConfigErrors for a verl run that cannot work, before anything is built."""
    if str(cfg.model.get("backend", "")) != "verl":
        raise ConfigError(f"model={cfg.model.name} is for backend={cfg.model.get('backend')}; the verl backend needs "
                          f"a verl model config, e.g. model=qwen2.5-math-1.5b (conf/model/qwen*.yaml)")
    if "train_files" not in cfg.data or "val_files" not in cfg.data:
        raise ConfigError(f"data={cfg.data.name} has no train_files/val_files; the verl backend needs a parquet "
                          f"data config, e.g. data=deepmath (conf/data/deepmath.yaml)")
    for verl_key, pcb_key in MIRRORED:
        v, p = OmegaConf.select(cfg.verl, verl_key), OmegaConf.select(cfg, pcb_key)
        if v != p:
            raise ConfigError(f"verl.{verl_key}={v} differs from {pcb_key}={p}; set {pcb_key} instead "
                              f"(pcbench's allocator reads it)")
    check_gpu_capacity(cfg.model)
    if cfg.verl.algorithm.filter_groups.enable:
        raise ConfigError("verl.algorithm.filter_groups.enable=true would filter groups twice; use method=dapo")
    if cfg.verl.trainer.v1.trainer_mode != "pcbench" or not cfg.verl.trainer.use_v1:
        raise ConfigError("the verl backend needs verl.trainer.use_v1=true and verl.trainer.v1.trainer_mode=pcbench")


def check_gpu_capacity(model) -> None:
    """Refuse layouts that cannot hold the model, by a coarse bf16 budget (not a guarantee it fits).

    vLLM keeps 2 bytes/param per tensor-parallel shard inside `gpu_memory_utilization` of each GPU;
    FSDP training state (bf16 weights + grads, fp32 master + Adam moments: ~16 bytes/param) is
    sharded over every GPU and lives in the rest, unless offloaded to CPU.
    """
    gpus, tp = int(model.nnodes) * int(model.n_gpus_per_node), int(model.tensor_parallel)
    if tp < 1 or tp > int(model.n_gpus_per_node) or gpus % tp:
        raise ConfigError(f"model.tensor_parallel={tp} must divide the {gpus} GPUs and be <= model.n_gpus_per_node="
                          f"{model.n_gpus_per_node}")
    if "params_b" not in model:
        return
    mem, util, params = float(model.get("gpu_memory_gb", 80)), float(model.gpu_memory_utilization), float(model.params_b)
    vllm_gb = 2.0 * params / tp
    if vllm_gb > util * mem:
        raise ConfigError(f"model={model.name} needs ~{vllm_gb:.0f} GB per GPU for vLLM weights at tensor_parallel={tp}, "
                          f"more than gpu_memory_utilization x {mem:.0f} GB; raise model.tensor_parallel")
    fsdp_gb = 16.0 * params / gpus
    if not model.get("offload", False) and fsdp_gb > (1.0 - util) * mem:
        raise ConfigError(f"model={model.name} needs ~{fsdp_gb:.0f} GB per GPU of FSDP training state on {gpus} GPUs, "
                          f"more than the {(1 - util) * mem:.0f} GB left beside vLLM; add GPUs (model.nnodes) or "
                          f"set model.offload=true")


def runtime_env_vars(platform: str = "gpu", base: dict | None = None, module: str = "") -> dict[str, str]:
    """Set for every Ray worker and the driver: our modules register themselves on `import verl`
    (VERL_USE_EXTERNAL_MODULES), pcbench is importable, and so is `module` (method.module) from
    the folder this process imports it from. Appended to what `base` (the config's env_vars) and
    this process's environment already list, never replacing them."""
    from pcbench.backends.verl.platform import LIST_VARS, env_for, merge_env

    inherited = {k: os.environ[k] for k in LIST_VARS if os.environ.get(k)}
    own = {"PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [module_root(module)])])}
    return merge_env(base, own, inherited, env_for(platform, str(REPO)))


def module_root(module: str) -> str | None:
    """The sys.path entry `module` is imported from here (a folder outside pcbench, e.g. the
    current directory), for Ray workers on other nodes, which start elsewhere and do not share
    this process's sys.path; None when it cannot be found or needs no path (pcbench itself)."""
    if not module:
        return None
    import importlib.util

    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return None
    top = Path(spec.origin).parent  # <root>/<mod>.py or <root>/<pkg>/__init__.py
    root = top.parent if spec.submodule_search_locations else top
    return None if root.resolve() == REPO.resolve() else str(root.resolve())


def _absolute(path: str) -> str:
    """Local paths absolute (Ray workers do not start in this directory); URIs and hub ids as given."""
    if "://" in path:
        return path
    p = Path(path).expanduser()
    return str(p.resolve()) if p.is_absolute() or p.exists() or path.endswith(".parquet") else path


def build_verl_config(cfg: DictConfig, run_dir: str | None, resumed: bool = False, run_name: str = "") -> DictConfig:
    """Resolved, standalone verl config (with the `pcbench:` key) for this pcbench config."""
    check_backend_config(cfg)
    platform = resolve_platform(cfg)
    verl = OmegaConf.create(OmegaConf.to_container(cfg.verl, resolve=True))
    verl.data.train_files = _absolute(str(verl.data.train_files))
    verl.data.val_files = [_absolute(str(f)) for f in verl.data.val_files]
    verl.actor_rollout_ref.model.path = _absolute(str(verl.actor_rollout_ref.model.path))
    rf = verl.reward.custom_reward_function
    if rf.path in (None, "pcbench/reward/verl_entry.py"):
        rf.path = str(REWARD_FILE)  # absolute: reward workers may not start in this directory
    if run_dir is not None:
        verl.trainer.default_local_dir = str(Path(run_dir).resolve() / "checkpoint")
    if run_name:
        verl.trainer.experiment_name = run_name
    if cfg.logging.get("wandb", False) and "wandb" not in verl.trainer.logger:
        verl.trainer.logger = list(verl.trainer.logger) + ["wandb"]
    ray_init = verl.ray_kwargs.ray_init
    if cfg.backend.get("ray_num_cpus") is not None and int(cfg.model.nnodes) == 1:
        ray_init.num_cpus = int(cfg.backend.ray_num_cpus)  # multi-node: `ray start --num-cpus` (slurm_ray.py)
    env = dict(ray_init.runtime_env.get("env_vars") or {})
    ray_init.runtime_env.env_vars = runtime_env_vars(platform, env, str(cfg.method.get("module") or ""))
    if platform == "cpu":
        apply_cpu(verl)
    verl.pcbench = {
        "method": OmegaConf.to_container(cfg.method, resolve=True),
        "train_batch": int(cfg.train.batch_size),
        "seed": int(cfg.seed),
        "run_dir": None if run_dir is None else str(Path(run_dir).resolve()),
        "resumed": bool(resumed),
        "platform": platform,
        "backend": {"poll_interval_s": float(cfg.backend.poll_interval_s),
                    "max_retries": int(cfg.backend.max_retries)},
    }
    return verl


def run_details(verl: DictConfig) -> dict:
    """The `details` of a verl run's summary.json (pcbench.runs.finish)."""
    return {"platform": str(verl.pcbench.platform)}


def verl_command(config_file: str | Path, verl: DictConfig) -> str:
    """The verl command equivalent to this run: verl's own entry on the written config."""
    p = Path(config_file)
    env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in verl.ray_kwargs.ray_init.runtime_env.env_vars.items())
    return f"{env} python -m verl.trainer.main_ppo --config-path {shlex.quote(str(p.parent.resolve()))} " \
           f"--config-name {shlex.quote(p.stem)}"
