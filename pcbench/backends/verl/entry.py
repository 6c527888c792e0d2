"""`backend.entry` of backend=verl: check, build verl's config, then run verl (or describe it).

    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit
    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit dry_run=true

The run's life is pcbench/runs.py's; this backend adds its steps. `check`: verl's config and, on
CPU, the verl/vLLM versions. `setup`: build the local assets a config can make (the tiny model,
generated data), check the data files, join a multi-node Slurm job's Ray cluster. `train` (into
the prepared run folder): write the resolved verl config (verl_config.yaml) and run verl's own
`run_ppo` with V1's TaskRunner in a child process (launch.py) under a watchdog (watchdog.py):
Ray starts, verl builds FSDP workers and vLLM replicas, and the `pcbench` trainer mode
(trainer.py) drives the allocator. The same run can be started with the verl command the dry run
prints (`describe`).
"""

from __future__ import annotations

import importlib
import sys

from omegaconf import DictConfig, OmegaConf

from pcbench.backends.verl.config import build_verl_config, run_details, verl_command
from pcbench.backends.verl.watchdog import HEARTBEAT, supervise
from pcbench.config import ConfigError
from pcbench.data import MissingDataError, check_data_files
from pcbench.rundir import RunDir
from pcbench.runs import Backend

CONFIG_NAME = "verl_config.yaml"


def data_files(cfg: DictConfig) -> list[str]:
    files = cfg.data.train_files, cfg.data.val_files
    return [str(f) for part in files for f in ([part] if isinstance(part, str) else part)]


class VerlBackend(Backend):
    """`backend.entry` of backend=verl (conf/backend/verl.yaml): verl in a supervised child process."""

    def describe(self, cfg: DictConfig, path) -> list[str]:
        """Resolved verl config, the equivalent verl command, missing data (a NOTE, not an error)."""
        verl = build_verl_config(cfg, run_dir=str(path), run_name=path.name)
        lines = ["# resolved verl config:", OmegaConf.to_yaml(verl).rstrip(),
                 f"# platform: {verl.pcbench.platform} (backend.platform={cfg.backend.get('platform', 'auto')})",
                 "# command (pcbench runs the same in a supervised child process; it first writes the config file):",
                 verl_command(path / CONFIG_NAME, verl)]
        try:
            check_data_files(data_files(cfg))
        except MissingDataError as e:
            made = f" (made on first use by data.make={cfg.data.make})" if cfg.data.get("make") else ""
            lines.append(f"# NOTE: {e}{made}")
        return lines

    def check(self, cfg: DictConfig) -> None:
        verl = build_verl_config(cfg, run_dir=None)  # every config error before any file or process
        if verl.pcbench.platform == "cpu":
            from pcbench.backends.verl.cpu_vllm import VersionMismatch, check_versions

            try:
                check_versions()
            except VersionMismatch as e:
                raise ConfigError(str(e)) from None

    def setup(self, cfg: DictConfig) -> bool:
        from pcbench.backends.verl.slurm_ray import bootstrap

        if not bootstrap(cfg):  # a worker node of a multi-node Slurm job: it served Ray until the head left
            return False
        make_local_assets(cfg)  # on the head only: the nodes share the run's filesystem
        check_data_files(data_files(cfg))
        return True

    def train(self, cfg: DictConfig, run: RunDir) -> dict:
        verl = build_verl_config(cfg, run_dir=str(run.path), resumed=run.resumed, run_name=run.path.name)
        (run.path / CONFIG_NAME).write_text(OmegaConf.to_yaml(verl))
        print(f"pcbench: run folder {run.path}; verl config {run.path / CONFIG_NAME} "
              f"(platform {verl.pcbench.platform})", flush=True)
        monitor = cluster_monitor(run)
        rc = supervise([sys.executable, "-m", "pcbench.backends.verl.launch", str(run.path / CONFIG_NAME)],
                       run.path / HEARTBEAT, float(cfg.backend.watchdog_s), check=monitor and monitor.poll)
        if rc not in (0, 4) and monitor is not None and (lost := monitor.wait_for_loss(60.0)):
            print(f"pcbench: {lost} (verl exited with {rc}); rerun the same command to resume", file=sys.stderr,
                  flush=True)
        if rc != 0:  # the child's exit code (3: the watchdog killed it; 4: a node was lost, both said why)
            sys.exit(rc)
        return run_details(verl)


def cluster_monitor(run: RunDir):
    """A ClusterMonitor on the head of a multi-node Slurm job (slurm_ray.bootstrap ran), else None."""
    from pcbench.backends.verl.slurm_ray import CLUSTER

    if not CLUSTER:
        return None
    from pcbench.backends.verl.cluster import ClusterMonitor

    monitor = ClusterMonitor(CLUSTER, run.path)
    monitor.poll()  # cluster.json at once: the nodes and IPs, before verl places anything
    monitor.write()
    return monitor


def make_local_assets(cfg: DictConfig) -> None:
    """Build what a model/data config says it can build offline (`make:`), once: the tiny verl model
    (conf/model/tiny-verl.yaml), the exported embedded warm start and task (conf/*/embedded-verl.yaml)
    and generated parquet sets (pcbench.data.prepare's `arith`)."""
    from pathlib import Path

    from pcbench.data.specs import SPECS

    for spec, where in ((cfg.model.get("make"), cfg.model.get("path")), (cfg.data.get("make"), cfg.data.get("root"))):
        if spec:
            call_make(str(spec), where, cfg)
    for f in map(Path, data_files(cfg)):
        spec = SPECS.get(f.stem)
        if not f.exists() and spec is not None and spec.generate is not None:
            from pcbench.data.prepare import prepare

            print(f"pcbench: generating {f} (python -m pcbench.data.prepare {f.stem} --out {f.parent})", flush=True)
            prepare(f.stem, f.parent)


def call_make(spec: str, where, cfg: DictConfig):
    """`make: module:function` -> function(where), or function(where, cfg=cfg) when it takes `cfg`
    (a builder that derives what it makes from other settings, e.g. model.embedded)."""
    import inspect

    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name)
    return fn(where, cfg=cfg) if "cfg" in inspect.signature(fn).parameters else fn(where)


# `backend.entry` (conf/backend/verl.yaml) names this object; the entry string is part of every run
# id (rundir.identity), so it keeps the name it had when it was a function.
run = VerlBackend()
