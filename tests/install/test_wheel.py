"""pcbench as an installed tool (README, "Install as a tool"): the built wheel, in a venv of its own,
run from a folder outside the repository, and a user's own allocator and yaml added without
editing pcbench.

The venv holds only the wheel (and, in the plugin test, the user's package); the dependencies
(torch, hydra, verl, ...) come from this test's environment through a .pth line, so the test needs
no download. Its site-packages does not hold this checkout: the editable install's finder lives
in a .pth file that a plain path line does not run, and the checks below assert where pcbench was
imported from. The full fresh-venv install (torch pinned first, then the wheel with its
dependencies) is the README's; it resolves the same pyproject.toml.
"""

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# a tiny embedded job (tests/embedded/test_end_to_end.py's): a 250-step warm start of a small model, 2 steps
TINY = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null",
        "model.warmstart.steps=250", "model/warmstart=stop_only", "data.train_size=480", "data.val_size=16", "data.sft_size=1000",
        "train.batch_size=4", "train.mini_batch_size=2", "rollout.n=16", "method.max_rounds=30", "train.eval_every=2",
        "train.threads=1", "logging.progress=false", "data.tiers.add33=0.0", "data.tiers.add44=0.0",
        "train.steps=2"]

PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "my-allocs"
version = "0.0.1"

[project.entry-points."pcbench.allocators"]
half_grpo = "my_allocs.half:HalfGRPO"
"""
# GRPO on the first half of twice the candidates (a toy rule: what matters is that pcbench finds it
# by name through the entry point, checks it, trains it and logs its metric). Not decorated: the
# entry point registers the class it names.
PLUGIN_SOURCE = """
from pcbench.allocators import Allocator, Group, Request, StepBatch
from pcbench.allocators.base import take_or_roll


class HalfGRPO(Allocator):
    def allocate(self, ctx):
        ids = take_or_roll(ctx, 2 * self.train_batch)[:self.train_batch]
        outs = ctx.generate([Request(pid, int(self.cfg.n), "plain") for pid in ids])
        return StepBatch([Group(o.prompt_id, [o]) for o in outs], {"alloc/half": 1})
"""


def sh(args, cwd, timeout=900):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}  # nothing of the checkout on the path
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy: an in-tree build would leave build/ and *.egg-info in the checkout
    for part in ("pcbench", "conf", "analysis"):
        shutil.copytree(REPO / part, src / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for part in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(REPO / part, src / part)
    sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp / "dist", src], tmp)
    (built,) = (tmp / "dist").glob("pcbench-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    sh([sys.executable, "-m", "venv", "--without-pip", root / "v"], root)
    python = root / "v" / "bin" / "python"
    purelib = sh([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    Path(purelib, "test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    sh([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel], root)
    return root / "v"


def test_the_wheel_ships_the_configs_and_no_generic_top_level_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"pcbench"}  # no `analysis`, no `tests` (verl ships one), no `conf` in site-packages
    shipped = {f"pcbench/conf/{p.relative_to(REPO / 'conf').as_posix()}" for p in (REPO / "conf").rglob("*.yaml")}
    assert shipped <= set(names), sorted(shipped - set(names))
    assert {"pcbench/analysis/speedup.py", "pcbench/analysis/regime.py", "pcbench/bench/regime_map.py"} <= set(names)


@pytest.mark.slow
def test_the_wheel_runs_the_main_job_and_the_analysis_from_any_folder(venv, tmp_path):
    python, away = venv / "bin" / "python", tmp_path / "away"
    away.mkdir()
    where = sh([python, "-c", "import pcbench.paths as p; print(p.__file__); print(p.CONF_DIR)"], away).stdout.split()
    assert all(w.startswith(str(venv)) for w in where), where  # the wheel's code and its conf copy
    sh([python, "-m", "pcbench.run", "-m", "method=grpo,dapo,pilot_commit", *TINY, "experiment=tool"], away)
    runs = sorted(p for p in (away / "results" / "tool").iterdir() if p.is_dir())
    assert [json.loads((r / "summary.json").read_text())["status"] for r in runs] == ["finished"] * 3
    table = sh([python, "-m", "pcbench.analysis.speedup", "results/tool"], away).stdout
    assert all(f"| {m} " in table for m in ("GRPO", "DAPO", "Pilot-Commit")), table
    assert sh([venv / "bin" / "pcbench-speedup", "results/tool"], away).stdout == table  # the console script
    card = sh([python, "-m", "pcbench.analysis.regime", "results/tool", "--out", "card"], away)  # README's command
    assert (away / "card" / "regime_card.md").exists(), card.stdout + card.stderr
    alias = sh([python, "-m", "pcbench.bench", "regime", "results/tool"], away)  # the old command, an alias
    assert alias.stdout.split("\n")[:3] == card.stdout.split("\n")[:3]
    assert not (REPO / "results" / "tool").exists()


@pytest.mark.slow
def test_your_own_allocator_and_yaml_without_editing_pcbench(venv, tmp_path):
    python, pkg, mine, away = venv / "bin" / "python", tmp_path / "my_allocs", tmp_path / "myconf", tmp_path / "away"
    (pkg / "my_allocs").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (pkg / "my_allocs" / "__init__.py").write_text("")
    (pkg / "my_allocs" / "half.py").write_text(PLUGIN_SOURCE)
    sh([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-build-isolation", pkg], tmp_path)
    (mine / "method").mkdir(parents=True)
    (mine / "method" / "half_grpo.yaml").write_text("name: half_grpo\nn: ${rollout.n}\n")
    away.mkdir()
    sh([python, "-m", "pcbench.run", "--config-dir", mine, "method=half_grpo", *TINY, "experiment=plugin"], away)
    (run,) = [p for p in (away / "results" / "plugin").iterdir() if p.is_dir()]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert all(r["alloc/half"] == 1 and r["rollouts/trained"] == 4 * 16 for r in rows[1:])
    # a mistake in the user's yaml: one line naming their file, before anything is written
    (mine / "method" / "half_grpo.yaml").write_text("name: half_grpo\nn: ${rollout.n}\nmax_round: 3\n")
    bad = subprocess.run([python, "-m", "pcbench.run", "--config-dir", mine, "method=half_grpo", "experiment=bad"],
                         cwd=away, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "max_round" in bad.stderr and str(mine / "method" / "half_grpo.yaml") in bad.stderr
    assert not (away / "results" / "bad").exists()
