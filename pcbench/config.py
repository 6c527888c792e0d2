"""Typed config schemas, registered in Hydra's ConfigStore and checked once at composition.

Every impossible setting fails in `check_config` with one line naming the key and the fix,
before any model is built: types here, ranges and shapes in the rule tables of
pcbench/rules.py, method cross-checks in each allocator's `validate`, and what only a
backend knows in BACKEND_CHECKS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from pcbench.errors import ConfigError  # re-exported: callers import it from pcbench.config
from pcbench.rules import check_rules


@dataclass
class MethodConfig:
    name: str = MISSING  # the allocator: grpo | dapo | pilot_commit | a registered name (conf/method/)
    module: str = ""  # a module outside pcbench/allocators that registers `name` (imported first)
    n: int = 16  # rollouts per trained prompt (GRPO group size)
    gen_batch_size: int = 0  # candidates per sampling round (DAPO, PC); paper: 3 x train batch
    max_rounds: int = 10  # sampling rounds per step before a clear error (max_num_gen_batches)
    # Pilot-Commit
    n_pilot: int = 0  # rollouts per candidate in the pilot
    n_commit: int = 0  # rollouts added to each kept candidate (pilot + commit = the group)
    lower: float = 0.125  # keep when lower <= p <= 1 - upper
    upper: float = 0.25  # see lower: a prompt above 1 - upper is dropped as near-solved
    staleness: int = 4  # buffer entries older than this many steps are dropped
    buffer_sampling: str = "max_variance"  # max_variance | random
    extra: dict = field(default_factory=dict)  # free-form knobs of user-registered allocators


@dataclass
class TrainConfig:
    batch_size: int = 8  # prompts per update (paper: 128)
    mini_batch_size: int = 2  # prompts per PPO mini-batch (paper: 32)
    steps: int = 60  # optimizer steps of the run
    lr: float = 1e-6  # AdamW learning rate after warm-up
    warmup_steps: int = 10  # linear learning-rate warm-up, in steps
    weight_decay: float = 0.1  # AdamW weight decay
    grad_clip: float = 1.0  # gradient-norm clip
    clip_ratio_low: float = 0.2  # PPO ratio clip below 1 (verl clip_ratio_low)
    clip_ratio_high: float = 0.28  # PPO ratio clip above 1, DAPO clip-higher (verl clip_ratio_high)
    clip_ratio_c: float = 10.0  # dual-clip bound for negative advantages (verl clip_ratio_c)
    entropy_coeff: float = 0.0  # entropy bonus weight
    loss_agg_mode: str = "token-mean"  # how the loss averages over tokens (verl loss_agg_mode)
    temperature: float = 1.0  # sampling temperature of training rollouts
    top_p: float = 1.0  # nucleus sampling of training rollouts
    eval_every: int = 5  # steps between evaluations on the validation set
    val_temperature: float = 1.0  # sampling temperature of evaluation
    val_top_p: float = 0.7  # nucleus sampling of evaluation
    checkpoint_every: int = 10  # steps between checkpoints (a resumed run restarts from the last)
    threads: int = 0  # torch threads per run (0 = leave torch's default)


@dataclass
class RolloutConfig:
    n: int = 16  # rollouts per trained prompt (the GRPO group size the methods share)


@dataclass
class LoggingConfig:
    progress: bool = True  # a progress bar on stderr
    wandb: bool = False  # also log to Weights & Biases
    wandb_project: str = "pcbench"  # the W&B project
    wandb_mode: str = "offline"  # W&B mode: offline | online


@dataclass
class PathsConfig:
    results: str = "results"  # where run folders go (<results>/<experiment>/<run>)
    cache: str = "results/.cache"  # warm starts and pass-rate reports, shared across runs


@dataclass
class RootConfig:
    experiment: str = "embedded"  # the run folder's parent name (set by conf/exp/*.yaml)
    seed: int = 0  # the run's seed (sampling, data order, model init)
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
    dry_run: bool = False  # print what would run and what the run folder would do, then exit writing nothing


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="pcbench_schema", node=RootConfig)


def compose_cfg(overrides) -> DictConfig:
    """The config `python -m pcbench.run OVERRIDES...` composes (conf/ + the schema), unchecked:
    for code that runs or inspects jobs without Hydra's command line (benchmarks, tests, predict)."""
    from hydra import compose, initialize_config_dir

    from pcbench.paths import CONF_DIR

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def _resolvers() -> None:
    for name, fn in {"pcb_mul": lambda a, b: int(a) * int(b), "pcb_div": lambda a, b: int(a) // int(b),
                     "pcb_sub": lambda a, b: int(a) - int(b)}.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


_resolvers()


# backend.name -> "module:function" that checks what only that backend knows (it may read
# files, never starts anything); called after the rule tables of pcbench/rules.py.
BACKEND_CHECKS = {"embedded": "pcbench.backends.embedded.checks:check_backend_config",
                  "verl": "pcbench.backends.verl.config:check_backend_config"}


# backend.name -> "module:Class" of what allocators get as ctx.backend; its `capabilities` class
# attribute (pcbench/allocators/base.py) is checked against the method's `requires` here, so a
# method a backend cannot run fails at composition. Imported only when a method requires any.
ROLLOUT_BACKENDS = {"embedded": "pcbench.backends.embedded.generation:EmbeddedRollouts",
                    "verl": "pcbench.backends.verl.allocation:_Recorder"}


def backend_capabilities(name: str) -> frozenset[str]:
    import importlib

    from pcbench.allocators.base import capabilities_of

    spec = ROLLOUT_BACKENDS.get(name)
    if spec is None:
        return frozenset()
    module, _, cls = spec.partition(":")
    return capabilities_of(getattr(importlib.import_module(module), cls))


def check_capabilities(cls, backend: str) -> None:
    """ConfigError when the allocator class needs a capability backend `backend` does not declare."""
    missing = cls.requires - backend_capabilities(backend) if cls.requires else frozenset()
    if missing:
        able = [b for b in ROLLOUT_BACKENDS if cls.requires <= backend_capabilities(b)]
        raise ConfigError(f"method={cls.name} needs a backend with {', '.join(sorted(missing))}, which backend="
                          f"{backend} does not declare; use " + (" or ".join(f"backend={b}" for b in able) or
                                                                 "a backend that declares it"))


def check_config(cfg: DictConfig) -> None:
    """Every setting, before any run folder, warm start or Ray cluster: ConfigError with one line."""
    import importlib

    from pcbench.allocators import get_allocator_cls

    if cfg.backend.name != "verl" and cfg.get("verl") is not None:
        raise ConfigError(f"verl.* settings only apply to backend=verl (this run uses backend={cfg.backend.name}); "
                          f"drop the verl.* overrides or add backend=verl")
    for group in ("model", "data"):
        want = cfg[group].get("backend")
        if want is not None and want != cfg.backend.name:
            raise ConfigError(f"{group}={cfg[group].name} runs on backend={want}, not backend={cfg.backend.name}; "
                              f"add backend={want} (or pick a {cfg.backend.name} {group})")
    check_rules(cfg)  # every key's range and shape (pcbench/rules.py)
    try:
        allocator = get_allocator_cls(cfg.method.name, cfg.method.get("module") or "")
        allocator.validate(cfg.method, cfg.train.batch_size)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    check_capabilities(allocator, str(cfg.backend.name))
    spec = BACKEND_CHECKS.get(str(cfg.backend.name))
    if spec is not None:
        module, _, fn = spec.partition(":")
        getattr(importlib.import_module(module), fn)(cfg)
