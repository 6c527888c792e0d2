"""Experiments (conf/exp/) are deltas and sweeps (sweeps/) are launch files on them; every config
file composes and passes pcbench's rules; the paper setups resolve exactly as before the
refactor (tests/config/golden/, written by tests/config/golden.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob
from omegaconf import OmegaConf

from pcbench.config import check_config, register_configs

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf"
register_configs()

_spec = importlib.util.spec_from_file_location("golden", Path(__file__).with_name("golden.py"))
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

EXPS = sorted(p.stem for p in (CONF / "exp").glob("*.yaml"))
SWEEPS = sorted(p.stem for p in (REPO / "sweeps").glob("*.yaml"))


def cfg_of(*overrides):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def resolved(cfg) -> dict:
    return OmegaConf.to_container(cfg, resolve=True)


def job_of(sweep_cfg):
    """A sweep job's config without the hydra node, as the run sees it."""
    return OmegaConf.masked_copy(sweep_cfg, [k for k in sweep_cfg if k != "hydra"])


@pytest.mark.parametrize("name", golden.PAPER_SWEEPS)
def test_paper_sweeps_resolve_as_before_the_refactor(name):
    """Same job config for every method, same Slurm launcher (nodes, GPUs, time, requeues), same
    methods x seeds: a changed paper setup must be a deliberate `golden.py --write`. Every job
    passes the rules."""
    jobs = golden.compose_jobs(name)
    diff = golden.differences(yaml.safe_load((golden.GOLDEN / f"{name}.yaml").read_text()), golden.snapshot(name, jobs))
    assert not diff, f"{name} differs from tests/config/golden/{name}.yaml:\n" + "\n".join(diff)
    for cfg in jobs.values():
        check_config(job_of(cfg))


@pytest.mark.parametrize("name", EXPS)
def test_every_experiment_composes_and_passes_the_rules(name):
    """`python -m pcbench.run exp=<name> ...`; for a paper artifact it trains exactly what the Slurm
    sweep of the same name trains."""
    cfg = cfg_of(f"exp={name}", "method=pilot_commit")
    check_config(cfg)
    if name in golden.PAPER_SWEEPS:
        assert resolved(cfg) == yaml.safe_load((golden.GOLDEN / f"{name}.yaml").read_text())["config"]


def test_embedded_sweep_is_the_defaults_in_its_own_folder():
    """embedded_cpu moves with conf/data/synthetic.yaml and conf/model/tiny.yaml: only its name differs."""
    for method in ("grpo", "pilot_commit"):
        job = job_of(golden.compose_sweep("embedded_cpu", f"method={method}"))
        assert resolved(job) == resolved(cfg_of(f"method={method}", "experiment=embedded_cpu"))


def test_sample_efficiency_exp_writes_where_the_benchmark_scores():
    from pcbench.bench import sample_efficiency
    from pcbench.bench.launch import Job, run_folder
    from pcbench.rundir import run_path as folder_of

    import argparse

    parser = argparse.ArgumentParser()
    sample_efficiency.add_arguments(parser)
    job = Job("pilot_commit", 3, ("method=pilot_commit", "seed=3",
                                  *sample_efficiency.common_overrides(parser.parse_args([]))))
    assert folder_of(cfg_of("exp=sample_efficiency", "method=pilot_commit", "seed=3")) == run_folder(job)


@pytest.mark.parametrize("name", EXPS)
def test_experiment_key_keeps_naming_the_run_folder(name):
    """exp= picks the experiment file, experiment= still names results/<experiment>/ (no clash)."""
    assert cfg_of(f"exp={name}").experiment == name
    assert cfg_of(f"exp={name}", "experiment=mine").experiment == "mine"
    assert cfg_of("experiment=mine").experiment == "mine"


def _top_keys(path: Path) -> set[str]:
    return set(yaml.safe_load(path.read_text()) or {})


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep_files_are_launch_files_on_an_experiment(name):
    """Settings live in conf/ once; a sweep only picks an experiment, a launcher and its grid."""
    data = yaml.safe_load((REPO / "sweeps" / f"{name}.yaml").read_text())
    assert set(data) <= {"defaults", "hydra"}, f"sweeps/{name}.yaml sets {set(data) - {'defaults', 'hydra'}}"
    assert {"override exp": name} in data["defaults"]
    assert set(data["hydra"]) <= {"sweeper", "launcher"}


@pytest.mark.parametrize("name", EXPS)
def test_experiments_restate_nothing(name):
    """Every value an experiment sets differs from what composition gives without it: a delta."""
    data = yaml.safe_load((CONF / "exp" / f"{name}.yaml").read_text())
    groups = {e.split("/")[-1].split(":")[0].removeprefix("override ").strip(): v
              for d in data.pop("defaults", []) for e, v in d.items()}
    base = resolved(cfg_of(*(f"{g}={v}" for g, v in groups.items())))
    for key, value in _leaves(data):
        assert OmegaConf.select(OmegaConf.create(base), key) != value, f"conf/exp/{name}.yaml restates {key}={value}"


def _leaves(node, prefix=""):
    for k, v in node.items():
        yield from (_leaves(v, f"{prefix}{k}.") if isinstance(v, dict) else [(f"{prefix}{k}", v)])


# ---------------------------------------------------------------------------- every file composes

def _partner(group: str, option: str) -> list[str]:
    """Overrides that make one option of a group a runnable config (its backend's model or data)."""
    backend = OmegaConf.select(cfg_of(f"{group}={option}") if group != "backend" else OmegaConf.create(
        {"backend": {"name": option}}), f"{group}.backend" if group != "backend" else "backend.name")
    if backend in (None, "embedded"):
        return [f"{group}={option}"]
    tiny = option == "tiny-verl"
    others = {"model": ["data=tiny-verl" if tiny else "data=deepmath"],
              "data": ["model=tiny-verl" if tiny else "model=qwen2.5-math-1.5b"],
              "backend": ["model=tiny-verl", "data=tiny-verl"]}[group]
    return ["backend=verl", f"{group}={option}", *others]


GROUP_FILES = [(g, p.stem) for g in ("model", "data", "method", "backend") for p in sorted((CONF / g).glob("*.yaml"))]


@pytest.mark.parametrize("group,option", GROUP_FILES, ids=[f"{g}={o}" for g, o in GROUP_FILES])
def test_every_group_file_composes_and_passes_the_rules(group, option):
    check_config(cfg_of(*_partner(group, option)))


def _swept_methods(value: str) -> list[str]:
    override = OverridesParser.create().parse_override(f"method={value}")
    if isinstance(override.value(), Glob):
        return override.value().filter(sorted(p.stem for p in (CONF / "method").glob("*.yaml")))
    return list(override.sweep_string_iterator()) if override.is_sweep_override() else [str(override.value())]


@pytest.mark.parametrize("name", [s for s in SWEEPS if s not in golden.PAPER_SWEEPS])
def test_every_other_sweep_job_passes_the_rules(name):
    methods = _swept_methods(str(golden.compose_sweep(name).hydra.sweeper.params.method))
    assert {"grpo", "dapo", "pilot_commit"} <= set(methods)
    for method in methods:
        check_config(job_of(golden.compose_sweep(name, f"method={method}")))


LAUNCH_FILES = [f"+cluster={p.stem}" for p in sorted((CONF / "cluster").glob("*.yaml"))] + \
               [f"hydra/launcher={p.stem}" for p in sorted((CONF / "hydra" / "launcher").glob("*.yaml"))]


@pytest.mark.parametrize("override", LAUNCH_FILES)
def test_every_cluster_and_launcher_file_composes(override):
    """Launch settings resolve (slurm_verl's nodes come from the model's layout) and change no job setting."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["exp=qwen3_4b_polaris", override], return_hydra_config=True)
    launcher = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    assert launcher["_target_"].startswith("hydra_plugins.hydra_submitit_launcher")
    if override == "hydra/launcher=slurm_verl":
        assert (cfg.hydra.launcher.nodes, cfg.hydra.launcher.gpus_per_node) == (4, 8)
    assert resolved(job_of(cfg)) == resolved(cfg_of("exp=qwen3_4b_polaris"))
