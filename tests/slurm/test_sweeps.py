"""sweeps/*.yaml: each composes on top of conf/ (as `--config-dir sweeps --config-name <file>`),
sweeps methods x seeds through hydra.sweeper.params, and every (method) point passes pcbench's
own config checks; the GPU sweeps go to Slurm on whole nodes sized by the model's layout. No
Slurm needed (tests/config/test_experiments.py checks that they resolve as before, key by key)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[2]
SWEEPS = sorted((REPO / "sweeps").glob("*.yaml"))
METHODS = {"grpo", "dapo", "pilot_commit"}
# n per prompt and the Pilot-Commit split of the paper (docs/method.md, "Results")
PAPER_N = {"embedded_cpu": None, "qwen25_math_1p5b_deepmath": (128, 32, 96), "qwen3_4b_polaris": (64, 16, 48),
           "qwen3_8b_polaris": (64, 16, 48), "qwen3_14b_polaris": (64, 16, 48)}


def _compose(name: str, *overrides: str):
    from pcbench.config import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "sweeps"), version_base="1.3"):
        return compose(config_name=name, return_hydra_config=True,
                       overrides=[f"hydra.searchpath=[file://{REPO / 'conf'}]", *overrides])


def _methods(value: str) -> set[str]:
    override = OverridesParser.create().parse_override(f"method={value}")
    if isinstance(override.value(), Glob):
        return set(override.value().filter(sorted(p.stem for p in (REPO / "conf" / "method").glob("*.yaml"))))
    return set(override.sweep_string_iterator())


def test_paper_sweeps_present():
    assert {p.stem for p in SWEEPS} >= set(PAPER_N)


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_sweep_composes_and_checks(path):
    from pcbench.config import check_config

    cfg = _compose(path.stem)
    params = cfg.hydra.sweeper.params
    assert _methods(str(params.method)) >= METHODS
    assert cfg.experiment == path.stem
    if PAPER_N.get(path.stem):
        launcher = cfg.hydra.launcher
        assert launcher._target_.endswith("SlurmLauncher") and launcher.tasks_per_node == 1
        assert launcher.gpus_per_node == cfg.model.n_gpus_per_node == 8 and launcher.nodes >= cfg.model.nnodes >= 2
        assert launcher.max_num_timeout > 0 and launcher.timeout_min >= 50
        assert launcher.additional_parameters == {"exclusive": True}
    for method in sorted(METHODS):
        point = _compose(path.stem, f"method={method}")
        check_config(OmegaConf.masked_copy(point, [k for k in point if k != "hydra"]))
        if PAPER_N.get(path.stem) and method == "pilot_commit":
            n, n_pilot, n_commit = PAPER_N[path.stem]
            assert (point.method.n, point.method.n_pilot, point.method.n_commit) == (n, n_pilot, n_commit)
            assert point.train.batch_size == 128 and point.train.mini_batch_size == 32 and point.train.lr == 1e-6


# nodes x GPUs per node of each paper sweep, from the paper (docs/method.md#paper-scale): 1.5B on
# 2 x 8, 4B on 4 x 8, 14B on its 64 GPUs; 8B's are not stated (the 4B ones)
PAPER_SHAPE = {"qwen25_math_1p5b_deepmath": (2, 8), "qwen3_4b_polaris": (4, 8), "qwen3_8b_polaris": (4, 8),
               "qwen3_14b_polaris": (8, 8)}


def _sbatch_lines(launcher, folder: Path) -> dict[str, str]:
    """The #SBATCH options submitit writes for this launcher config, built the way
    hydra-submitit-launcher builds its executor (plain keys of BaseQueueConf, the rest `slurm_`)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    params = OmegaConf.to_container(launcher, resolve=True)
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm", slurm_max_num_timeout=params["max_num_timeout"])
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    skip = {"_target_", "submitit_folder", "max_num_timeout"}
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items() if k not in skip})
    text = executor._executor._make_submission_file_text("python -m pcbench.run", "uid")  # noqa: SLF001
    lines = [line.split(None, 1)[1] for line in text.splitlines() if line.startswith("#SBATCH ")]
    return dict(opt.lstrip("-").partition("=")[::2] for opt in lines)


@pytest.mark.parametrize("name", sorted(PAPER_SHAPE))
def test_paper_sweep_asks_slurm_for_the_papers_nodes(name, tmp_path):
    cfg = _compose(name, "hydra.launcher.submitit_folder=" + str(tmp_path / "%j"))
    nodes, gpus = PAPER_SHAPE[name]
    assert (cfg.model.nnodes, cfg.model.n_gpus_per_node) == (nodes, gpus)  # the model file, the one place
    sbatch = _sbatch_lines(cfg.hydra.launcher, tmp_path)
    assert sbatch["nodes"] == str(nodes) and sbatch["gpus-per-node"] == str(gpus), sbatch
    assert sbatch["ntasks-per-node"] == "1" and "exclusive" in sbatch, sbatch  # one task per node: slurm_ray
    assert int(sbatch["time"]) == cfg.hydra.launcher.timeout_min and "signal" in sbatch
    point = _compose(name, "method=pilot_commit")
    assert (point.verl.trainer.nnodes, point.verl.trainer.n_gpus_per_node) == (nodes, gpus)  # what verl places on
