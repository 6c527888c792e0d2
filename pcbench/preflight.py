"""Will this run start here? Every check a cluster job would otherwise fail on hours later.

    python -m pcbench.preflight backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit
    python -m pcbench.preflight --config-dir sweeps --config-name qwen3_8b_polaris
    python -m pcbench.preflight --dry-run -m --config-dir sweeps --config-name qwen3_8b_polaris

Composes the config exactly as `python -m pcbench.run` would (same overrides, --config-dir,
--config-name) and prints one line per check: `ok`, `FAIL` with the fix, `GPU` (needs a GPU
node: this machine cannot tell) or `skip` (does not apply to this run). The checks
(pcbench/preflight_checks.py, pcbench/preflight_files.py): the config's own rules; the GPUs and CUDA build torch sees;
vLLM / flash-attention / verl / torch against the versions the verl path targets (TARGETS);
NCCL; Slurm (sinfo reachable, the partition, account and QOS the launcher sets); the data files
(present, verl's columns, rows) or, for your own data, the source file they are made from; the
model weights; the reward; free disk for the run's checkpoints; vLLM's memory share against the
GPUs. Exit code 0 only when nothing FAILed and nothing needs a GPU node this machine is not.

--dry-run prints the jobs the command would submit (nodes, GPUs, time, where, the command of
each: a -m sweep's every job) and submits nothing; then the checks of the first job.
"""

from __future__ import annotations

import shlex
import sys
from omegaconf import DictConfig

from pcbench import preflight_checks as host_checks
from pcbench import preflight_files as file_checks
from pcbench.config import ConfigError, check_config, register_configs
from pcbench.preflight_checks import TARGETS, Check  # noqa: F401  (TARGETS: re-exported for tests and docs)
from pcbench.precheck import composition, hydra_args, one_line, sweep_file_params, sweep_jobs, user_dirs

def compose_args(argv: list[str], overrides: list[str] = ()) -> DictConfig:
    """The config `python -m pcbench.run <argv>` composes (hydra node included); ConfigError, one line."""
    from hydra import compose, initialize_config_dir

    register_configs()
    args = hydra_args(argv)
    where = composition(user_dirs(args), args.config_name or "config")
    if where is None:
        raise ConfigError(f"--config-name {args.config_name}: no such config in pcbench's conf/ or --config-dir")
    primary, name, search = where
    given = [o for o in args.overrides if not o.startswith("hydra.searchpath=")]
    try:
        with initialize_config_dir(config_dir=primary, version_base="1.3"):
            return compose(config_name=name, overrides=[*search, *given, *overrides], return_hydra_config=True)
    except Exception as e:  # Hydra / OmegaConf refusing an override: one line, as pcbench.run says it
        raise ConfigError(one_line(e)) from None


def jobs_of(argv: list[str]) -> list[list[str]]:
    """Every job's overrides (a -m sweep and its sweep file's params expanded), as pcbench.run launches them."""
    from hydra import compose, initialize_config_dir

    register_configs()  # a sweep file composes on pcbench's schema
    args = hydra_args(argv)
    where = composition(user_dirs(args), args.config_name or "config")
    if where is None or not args.multirun:
        return [[o for o in args.overrides]]
    primary, name, search = where
    with initialize_config_dir(config_dir=primary, version_base="1.3"):
        params = sweep_file_params(compose, name, search)
    return sweep_jobs(argv, params)


def head_args(argv: list[str]) -> list[str]:
    """--config-dir / --config-name of a command line, without its overrides."""
    args = hydra_args(argv)
    return ([f"--config-dir={args.config_dir}"] if args.config_dir else []) + \
           ([f"--config-name={args.config_name}"] if args.config_name else [])


def launch_args(argv: list[str]) -> list[str]:
    """head_args plus the hydra.* / hydra/... overrides (the launcher): what every job shares but
    sweep_jobs leaves out of each job's own overrides."""
    launch = [o for o in hydra_args(argv).overrides if o.lstrip("~+").startswith(("hydra.", "hydra/"))]
    return head_args(argv) + launch


def job_line(cfg: DictConfig, argv: list[str], job: list[str]) -> str:
    """One job as the launcher would submit it: shape, time, where, command."""
    launcher = cfg.hydra.launcher
    command = "python -m pcbench.run " + " ".join(shlex.quote(a) for a in [*head_args(argv), *job])
    target = str(launcher.get("_target_", "basic"))
    if "Slurm" not in target:
        return f"local (hydra/launcher={target.rsplit('.', 1)[-1]}, nothing submitted): {command}"
    gpus = launcher.get("gpus_per_node")
    where = " ".join(f"{k}={launcher.get(k)}" for k in ("partition", "account", "qos"))
    return (f"slurm job: nodes={launcher.nodes} gpus_per_node={gpus if gpus is not None else 0} "
            f"timeout_min={launcher.timeout_min} requeues={launcher.get('max_num_timeout', 0)} {where}: {command}")


def dry_run(argv: list[str], out=print) -> list[list[str]]:
    """Print the jobs `python -m pcbench.run <argv>` would submit; submit nothing."""
    jobs = jobs_of(argv)
    out(f"# pcbench preflight --dry-run: {len(jobs)} job(s) this command would submit (nothing submitted)")
    for i, job in enumerate(jobs):
        cfg = compose_args(launch_args(argv), job)
        out(f"job {i}: {job_line(cfg, argv, job)}")
    return jobs


def run_checks(cfg: DictConfig) -> list[Check]:
    try:
        check_config(cfg)
    except ConfigError as e:
        return [Check("config", "FAIL", str(e))]
    checks = [Check("config", "ok", f"composes and passes every rule (backend={cfg.backend.name} "
                                    f"model={cfg.model.name} data={cfg.data.name} method={cfg.method.name})")]
    every = (host_checks.gpus, host_checks.versions, host_checks.nccl, host_checks.slurm,
             file_checks.data, file_checks.model, file_checks.reward, file_checks.disk, file_checks.memory)
    return checks + [c for check in every for c in check(cfg)]


def verdict(checks: list[Check]) -> tuple[int, str]:
    fails = [c.name for c in checks if c.state == "FAIL"]
    gpu = [c.name for c in checks if c.state == "GPU"]
    ok = sum(c.state == "ok" for c in checks)
    if not fails and not gpu:
        return 0, f"preflight: {ok} ok: the run can start here"
    parts = ([f"{len(fails)} FAIL ({', '.join(fails)})"] if fails else []) + \
            ([f"{len(gpu)} need a GPU node ({', '.join(gpu)})"] if gpu else [])
    return 1, f"preflight: {ok} ok, {'; '.join(parts)}: the run cannot start here"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    dry = "--dry-run" in argv
    argv = [a for a in argv if a != "--dry-run"]
    try:
        jobs = dry_run(argv) if dry else jobs_of(argv)
        cfg = compose_args(launch_args(argv), jobs[0] if jobs else [])
    except ConfigError as e:
        print(f"pcbench: config error: {e}", file=sys.stderr)
        return 2
    checks = run_checks(cfg)
    for check in checks:
        print(check.line(), flush=True)
    code, summary = verdict(checks)
    print(summary)
    return code


if __name__ == "__main__":
    sys.exit(main())
