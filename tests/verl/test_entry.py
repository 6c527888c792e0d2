"""`python -m pcbench.run backend=verl ...`: the dry run, one-line errors before any work, and the
trainer's registration with verl in a fresh process (as in every Ray worker)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcbench import runs
from pcbench.backends.verl import entry
from pcbench.run import start

REPO = Path(__file__).resolve().parents[2]
CMD = ["backend=verl", "model=qwen2.5-math-1.5b", "data=deepmath", "method=pilot_commit"]


def test_dry_run_prints_verl_config_and_command_and_writes_nothing(paper_cfg, tmp_path):
    text = runs.dry_run(paper_cfg("pilot_commit", f"paths.results={tmp_path}", "data.root=/nowhere"), entry.run)
    assert "train_batch_size: 128" in text and "trainer_mode: pcbench" in text and "n_pilot: 32" in text
    assert "VERL_USE_EXTERNAL_MODULES=pcbench.backends.verl.trainer" in text
    assert "python -m verl.trainer.main_ppo --config-path" in text and "--config-name verl_config" in text
    assert "python -m pcbench.data.prepare deepmath aime24 aime25 amc23 math500 minerva olympiadbench " \
           "deepmath_test --out /nowhere" in text
    assert not any(tmp_path.iterdir())


def test_missing_data_fails_in_one_line_before_any_run_folder(paper_cfg, tmp_path, capsys):
    cfg = paper_cfg("grpo", f"paths.results={tmp_path}", f"data.root={tmp_path}/data")
    with pytest.raises(SystemExit) as e:
        start(cfg)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith("pcbench: data error: missing data file(s)") and "python -m pcbench.data.prepare deepmath" in err
    assert not any(tmp_path.iterdir())


def test_embedded_model_on_verl_is_a_config_error(tmp_path, capsys):
    from tests.verl.doubles import compose_pcbench

    with pytest.raises(SystemExit):
        start(compose_pcbench("backend=verl", "data=deepmath", f"paths.results={tmp_path}"))
    err = capsys.readouterr().err  # pcbench.run's checks (check_config) name it before the backend's own
    assert err.startswith("pcbench: config error: model=tiny-qwen2 runs on backend=embedded")


def test_cli_dry_run(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pcbench.run", *CMD, "dry_run=true", f"paths.results={tmp_path}",
                          f"hydra.run.dir={tmp_path}/.hydra"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("# pcbench dry run") and "trainer_mode: pcbench" in out.stdout


def test_trainer_registers_with_verl_through_verl_use_external_modules():
    env = {**os.environ, "VERL_USE_EXTERNAL_MODULES": "pcbench.backends.verl.trainer", "PYTHONPATH": str(REPO)}
    code = ("import verl\nfrom verl.trainer.ppo.v1 import get_trainer_cls\n"
            "cls = get_trainer_cls('pcbench')\nprint(cls.__module__, cls.__mro__[1].__name__)")
    out = subprocess.run([sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["pcbench.backends.verl.trainer", "PPOTrainerSync"]
