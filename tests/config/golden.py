"""Resolved configs of the paper setups, kept in tests/config/golden/ so a config refactor can
prove it changed nothing (tests/config/test_experiments.py compares against them).

    python tests/config/golden.py          # compare: exit 1 and name every differing key
    python tests/config/golden.py --write  # regenerate after a deliberate change (review the diff)

One file per paper sweep (`sweeps/<name>.yaml`, composed as `--config-dir sweeps --config-name
<name>` composes it): the Pilot-Commit job's whole resolved config, the other methods' `method:`
blocks (the only part a method choice may change: the test checks it), the Slurm launcher (less
the two keys that hold Hydra's per-launch sweep folder) and the sweeper's params. The embedded
sweep is not stored: its defaults change with conf/data/synthetic.yaml and conf/model/tiny.yaml,
so the test compares it with the root config instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
PAPER_SWEEPS = ("qwen25_math_1p5b_deepmath", "qwen3_4b_polaris", "qwen3_8b_polaris", "qwen3_14b_polaris")
METHODS = ("grpo", "dapo", "pilot_commit")
PER_LAUNCH = ("submitit_folder", "name")  # ${hydra.sweep.dir} (a timestamp), ${hydra.job.name}
SITE_ENV = ("PCBENCH_SLURM_PARTITION", "PCBENCH_SLURM_ACCOUNT", "PCBENCH_SLURM_QOS")

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def compose_sweep(name: str, *overrides: str):
    """The config of one job of sweeps/<name>.yaml, hydra node included."""
    from hydra import compose, initialize_config_dir

    from pcbench.config import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "sweeps"), version_base="1.3"):
        return compose(config_name=name, return_hydra_config=True,
                       overrides=[f"hydra.searchpath=[file://{REPO / 'conf'}]", *overrides])


def job_config(cfg) -> dict:
    """The resolved config the job runs with (what config.yaml of its run folder holds)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]), resolve=True)


def compose_jobs(name: str) -> dict:
    """{method: composed config} of the sweep's jobs, without the site's Slurm environment."""
    saved = {k: os.environ.pop(k) for k in SITE_ENV if k in os.environ}  # the site's values are not the setup's
    try:
        jobs = {m: compose_sweep(name, f"method={m}") for m in METHODS}
        for cfg in jobs.values():  # resolve the launcher's ${oc.env:...} while the variables are unset
            cfg.hydra.launcher = launcher_settings(cfg.hydra.launcher)
        return jobs
    finally:
        os.environ.update(saved)


def launcher_settings(node):
    """The resolved launcher, less the keys Hydra fills per launch."""
    from omegaconf import OmegaConf

    return OmegaConf.create({k: v for k, v in OmegaConf.to_container(node, resolve=True).items()
                             if k not in PER_LAUNCH})


def snapshot(name: str, jobs: dict | None = None) -> dict:
    """What golden/<name>.yaml holds, composed from the current conf/ and sweeps/."""
    from omegaconf import OmegaConf

    jobs = jobs or compose_jobs(name)
    hydra = jobs["pilot_commit"].hydra
    return {"config": job_config(jobs["pilot_commit"]),
            "methods": {m: job_config(jobs[m])["method"] for m in METHODS if m != "pilot_commit"},
            "launcher": OmegaConf.to_container(hydra.launcher),
            "sweeper": OmegaConf.to_container(hydra.sweeper.params, resolve=True)}


def differences(a, b, prefix: str = "") -> list[str]:
    """Dotted keys where two nested containers differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{prefix}{k}.")]
    return [] if a == b else [f"{prefix[:-1]}: golden {a!r}, now {b!r}"]


def main(argv: list[str]) -> int:
    GOLDEN.mkdir(exist_ok=True)
    bad = 0
    for name in PAPER_SWEEPS:
        path, now = GOLDEN / f"{name}.yaml", snapshot(name)
        if "--write" in argv:
            path.write_text(f"# {name}: written by python tests/config/golden.py --write\n"
                            + yaml.safe_dump(now, sort_keys=True))
            print(f"wrote {path.relative_to(REPO)}")
            continue
        diff = differences(yaml.safe_load(path.read_text()), now)
        bad += bool(diff)
        print(f"{name}: " + ("identical" if not diff else f"{len(diff)} differences:\n  " + "\n  ".join(diff)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
