"""`backend.entry` of backend=verl: check, build verl's config, then run verl (or print it).

    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit
    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit dry_run=true

A real run prepares the pcbench run folder (results/<experiment>/<run_id>/), writes the
resolved verl config into it (verl_config.yaml), and hands it to verl's own `run_ppo` with
V1's TaskRunner: Ray starts, verl builds FSDP workers and vLLM replicas, and the `pcbench`
trainer mode (trainer.py) drives the allocator. The same run can be started with the
printed verl command. A dry run prints the config and the command and touches nothing.
"""

from __future__ import annotations

import sys

from omegaconf import DictConfig, OmegaConf

from pcbench.backends.verl.config import build_verl_config, verl_command
from pcbench.config import ConfigError
from pcbench.data import MissingDataError, check_data_files
from pcbench.rundir import RunDir, run_id

CONFIG_NAME = "verl_config.yaml"


def data_files(cfg: DictConfig) -> list[str]:
    files = cfg.data.train_files, cfg.data.val_files
    return [str(f) for part in files for f in ([part] if isinstance(part, str) else part)]


def dry_run(cfg: DictConfig) -> str:
    """The text a dry run prints: resolved verl config, where it would go, the command, missing data."""
    from pathlib import Path

    folder = Path(cfg.paths.results) / str(cfg.experiment) / run_id(cfg)
    verl = build_verl_config(cfg, run_dir=str(folder), run_name=run_id(cfg))
    lines = [f"# pcbench dry run (nothing written): backend=verl method={cfg.method.name} model={cfg.model.name} "
             f"data={cfg.data.name}",
             f"# run folder: {folder}", "# resolved verl config:", OmegaConf.to_yaml(verl).rstrip(),
             "# command (pcbench runs the same in-process; it first writes the config file):",
             verl_command(folder / CONFIG_NAME)]
    try:
        check_data_files(data_files(cfg))
    except MissingDataError as e:
        lines.append(f"# NOTE: {e}")
    return "\n".join(lines)


def run(cfg: DictConfig):
    try:
        if cfg.dry_run:
            print(dry_run(cfg))
            return None
        build_verl_config(cfg, run_dir=None)  # every config error before any file or process
        check_data_files(data_files(cfg))
    except (ConfigError, MissingDataError) as e:
        print(f"pcbench: {'config' if isinstance(e, ConfigError) else 'data'} error: {e}", file=sys.stderr)
        sys.exit(2)
    from pcbench.backends.verl.slurm_ray import bootstrap

    if not bootstrap():  # a worker node of a multi-node Slurm job: it served Ray until the head left
        return None
    rundir = RunDir.prepare(cfg)
    verl = build_verl_config(cfg, run_dir=str(rundir.path), resumed=rundir.resumed, run_name=rundir.path.name)
    (rundir.path / CONFIG_NAME).write_text(OmegaConf.to_yaml(verl))
    print(f"pcbench: run folder {rundir.path}; verl config {rundir.path / CONFIG_NAME}", flush=True)
    return launch(verl)


def launch(verl: DictConfig):
    """What `python -m verl.trainer.main_ppo` does with a composed config (needs GPUs and vLLM)."""
    import os

    from pcbench.backends.verl.config import runtime_env_vars

    os.environ.update(runtime_env_vars())  # the driver's own `import verl` registers the trainer too
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    auto_set_device(verl)
    validate_config(config=verl, use_reference_policy=need_reference_policy(verl), use_critic=need_critic(verl))
    run_ppo(verl, task_runner_class=TaskRunnerV1)
