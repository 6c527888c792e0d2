"""Typed config schemas, registered in Hydra's ConfigStore and checked once at composition.

Every impossible setting fails in `check_config` with one line naming the key and the fix,
before any model is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf


class ConfigError(ValueError):
    """A user-facing configuration mistake; the message is one line saying how to fix it."""


@dataclass
class MethodConfig:
    name: str = MISSING
    n: int = 16  # rollouts per trained prompt (GRPO group size)
    gen_batch_size: int = 0  # candidates per sampling round (DAPO, PC); paper: 3 x train batch
    max_rounds: int = 10  # sampling rounds per step before a clear error (max_num_gen_batches)
    # Pilot-Commit
    n_pilot: int = 0
    n_commit: int = 0
    lower: float = 0.125  # keep when lower <= p <= 1 - upper
    upper: float = 0.25
    staleness: int = 4  # buffer entries older than this many steps are dropped
    buffer_sampling: str = "max_variance"  # max_variance | random
    extra: dict = field(default_factory=dict)  # free-form knobs of user-registered allocators


@dataclass
class TrainConfig:
    batch_size: int = 8  # prompts per update (paper: 128)
    mini_batch_size: int = 2  # prompts per PPO mini-batch (paper: 32)
    steps: int = 60
    lr: float = 1e-6
    warmup_steps: int = 10
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.28
    clip_ratio_c: float = 10.0
    entropy_coeff: float = 0.0
    loss_agg_mode: str = "token-mean"
    temperature: float = 1.0
    top_p: float = 1.0
    eval_every: int = 5
    val_temperature: float = 1.0
    val_top_p: float = 0.7
    checkpoint_every: int = 10
    threads: int = 0  # torch threads per run (0 = leave torch's default)


@dataclass
class RolloutConfig:
    n: int = 16  # rollouts per trained prompt (the GRPO group size the methods share)


@dataclass
class LoggingConfig:
    progress: bool = True
    wandb: bool = False
    wandb_project: str = "pcbench"
    wandb_mode: str = "offline"


@dataclass
class PathsConfig:
    results: str = "results"
    cache: str = "results/.cache"


@dataclass
class RootConfig:
    experiment: str = "embedded"
    seed: int = 0
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    model: Any = MISSING
    data: Any = MISSING
    backend: Any = MISSING
    verl: Any = None  # backend=verl only: verl's own config tree (conf/verl/ppo_trainer.yaml)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    resume: str = "auto"  # auto: resume an unfinished run folder; never: refuse if it exists
    dry_run: bool = False


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="pcbench_schema", node=RootConfig)


def _resolvers() -> None:
    for name, fn in {"pcb_mul": lambda a, b: int(a) * int(b), "pcb_div": lambda a, b: int(a) // int(b),
                     "pcb_sub": lambda a, b: int(a) - int(b)}.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


_resolvers()


def check_config(cfg: DictConfig) -> None:
    """Cross-field invariants; raise ConfigError with one actionable line."""
    from pcbench.allocators import get_allocator_cls

    t = cfg.train
    if t.batch_size < 1 or t.mini_batch_size < 1:
        raise ConfigError(f"train.batch_size={t.batch_size} and train.mini_batch_size={t.mini_batch_size} must be >= 1")
    if t.batch_size % t.mini_batch_size:
        raise ConfigError(f"train.batch_size={t.batch_size} is not divisible by train.mini_batch_size="
                          f"{t.mini_batch_size}; pick a mini-batch that divides the batch (paper: 128 / 32)")
    if t.steps < 1:
        raise ConfigError(f"train.steps={t.steps} must be >= 1")
    if t.eval_every < 1:
        raise ConfigError(f"train.eval_every={t.eval_every} must be >= 1")
    if not 0 < t.top_p <= 1 or not 0 < t.val_top_p <= 1:
        raise ConfigError(f"train.top_p={t.top_p} / train.val_top_p={t.val_top_p} must be in (0, 1]")
    if t.temperature <= 0 or t.val_temperature <= 0:
        raise ConfigError("train.temperature and train.val_temperature must be > 0")
    if cfg.resume not in ("auto", "never"):
        raise ConfigError(f"resume={cfg.resume!r}: use resume=auto (continue an unfinished run) or resume=never")
    if cfg.backend.name != "verl" and cfg.get("verl") is not None:
        raise ConfigError(f"verl.* settings only apply to backend=verl (this run uses backend={cfg.backend.name}); "
                          f"drop the verl.* overrides or add backend=verl")
    for group in ("model", "data"):
        want = cfg[group].get("backend")
        if want is not None and want != cfg.backend.name:
            raise ConfigError(f"{group}={cfg[group].name} runs on backend={want}, not backend={cfg.backend.name}; "
                              f"add backend={want} (or pick a {cfg.backend.name} {group})")
    if cfg.backend.name == "embedded":
        check_embedded_data(cfg.data)
    try:
        cls = get_allocator_cls(cfg.method.name)
        cls.validate(cfg.method, t.batch_size)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def check_embedded_data(d) -> None:
    """The synthetic task's evaluation and digit-order keys (conf/data/synthetic.yaml)."""
    for key in ("val_size", "val_samples"):
        if int(d.get(key, 1)) < 1:
            raise ConfigError(f"data.{key}={d.get(key)} must be >= 1 (validation problems / samples per problem; "
                              f"the default is 512 x 8)")
    if int(d.get("ood_size", 0)) < 0 or int(d.get("ood_samples", 1)) < 1:
        raise ConfigError(f"data.ood_size={d.get('ood_size')} must be >= 0 and data.ood_samples="
                          f"{d.get('ood_samples')} >= 1")
    if d.get("reverse", False) not in (False, True, "both"):
        raise ConfigError(f"data.reverse={d.get('reverse')!r}: use false (most significant digit first), true "
                          f"(answer least significant digit first) or both (operands too)")
