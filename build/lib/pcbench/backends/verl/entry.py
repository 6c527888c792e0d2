"""`backend.entry` of backend=verl: check, build verl's config, then run verl (or print it).

    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit
    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit dry_run=true

A real run builds the local assets a config can make (the tiny model, generated data), prepares
the pcbench run folder (results/<experiment>/<run_id>/), writes the resolved verl config into it
(verl_config.yaml), and runs verl's own `run_ppo` with V1's TaskRunner in a child process
(launch.py) under a watchdog (watchdog.py): Ray starts, verl builds FSDP workers and vLLM
replicas, and the `pcbench` trainer mode (trainer.py) drives the allocator. The same run can be
started with the printed verl command. A dry run prints the config and the command and touches
nothing.
"""

from __future__ import annotations

import importlib
import sys

from omegaconf import DictConfig, OmegaConf

from pcbench.backends.verl.config import build_verl_config, verl_command
from pcbench.backends.verl.watchdog import HEARTBEAT, supervise
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
             f"# platform: {verl.pcbench.platform} (backend.platform={cfg.backend.get('platform', 'auto')})",
             "# command (pcbench runs the same in a supervised child process; it first writes the config file):",
             verl_command(folder / CONFIG_NAME, verl)]
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
        verl = build_verl_config(cfg, run_dir=None)  # every config error before any file or process
        if verl.pcbench.platform == "cpu":
            from pcbench.backends.verl.cpu_vllm import VersionMismatch, check_versions

            try:
                check_versions()
            except VersionMismatch as e:
                raise ConfigError(str(e)) from None
        make_local_assets(cfg)
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
    print(f"pcbench: run folder {rundir.path}; verl config {rundir.path / CONFIG_NAME} "
          f"(platform {verl.pcbench.platform})", flush=True)
    rc = supervise([sys.executable, "-m", "pcbench.backends.verl.launch", str(rundir.path / CONFIG_NAME)],
                   rundir.path / HEARTBEAT, float(cfg.backend.watchdog_s))
    if rc != 0:
        sys.exit(rc)
    return None


def make_local_assets(cfg: DictConfig) -> None:
    """Build what a model/data config says it can build offline (`make:`), once: the tiny verl model
    (conf/model/tiny-verl.yaml) and generated parquet sets (pcbench.data.prepare's `arith`)."""
    from pathlib import Path

    from pcbench.data.specs import SPECS

    if cfg.model.get("make"):
        module, _, fn = str(cfg.model.make).partition(":")
        getattr(importlib.import_module(module), fn)(cfg.model.path)
    for f in map(Path, data_files(cfg)):
        spec = SPECS.get(f.stem)
        if not f.exists() and spec is not None and spec.generate is not None:
            from pcbench.data.prepare import prepare

            print(f"pcbench: generating {f} (python -m pcbench.data.prepare {f.stem} --out {f.parent})", flush=True)
            prepare(f.stem, f.parent)
