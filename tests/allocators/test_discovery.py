"""A new allocator needs its file and its yaml, nothing else (README, "Writing your own allocator"):
- in the package: a file in pcbench/allocators/ is imported by the package (pkgutil), registered,
  listed by the benchmark and trained, tested on a copy of the source tree with the two files added;
- outside it: `method.module=` (here set in the user's own method yaml, found through
  hydra.searchpath) imports the module, with a one-line error when it cannot.
The two runs train 2 embedded steps of a tiny model (a 250-step warm start, shared)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null", "model.warmstart.steps=250", "model/warmstart=stop_only", "data.train_size=240",
        "data.val_size=16", "data.sft_size=1000", "train.batch_size=4", "train.mini_batch_size=2", "rollout.n=8",
        "train.eval_every=2", "train.threads=1", "logging.progress=false", "experiment=discovery",
        "data.tiers.add33=0.0", "data.tiers.add44=0.0", "train.steps=2"]

# A user's allocator: GRPO on the first half of the candidates it draws (a toy rule; what matters
# is that it is found, checked, trained and logged like a built-in one).
SOURCE = '''
from pcbench.allocators import Allocator, Group, Request, StepBatch, register_allocator
from pcbench.allocators.base import take_or_roll


@register_allocator("{name}")
class Mine(Allocator):
    @classmethod
    def validate(cls, cfg, train_batch):
        if cfg.n < 2:
            raise ValueError(f"method.n={{cfg.n}}: {name} needs groups of >= 2")

    def allocate(self, ctx):
        ids = take_or_roll(ctx, 2 * self.train_batch)[:self.train_batch]
        outs = ctx.generate([Request(pid, int(self.cfg.n), "plain") for pid in ids])
        return StepBatch([Group(o.prompt_id, [o]) for o in outs], {{"alloc/mine": 1}})
'''


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("warmstart-cache")


def python(args, cwd, env=None, timeout=600):
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def source_copy(tmp_path: Path) -> Path:
    """The project's source tree (pcbench, analysis, conf) as a user's checkout would hold it."""
    root = tmp_path / "checkout"
    for part in ("pcbench", "analysis", "conf"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def trained_rows(results: Path) -> list[dict]:
    (folder,) = [p for p in (results / "discovery").iterdir() if p.is_dir()]
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_new_file_in_the_package_is_registered_listed_and_trained(tmp_path, cache):
    root = source_copy(tmp_path)
    (root / "pcbench" / "allocators" / "my_alloc.py").write_text(SOURCE.format(name="my_alloc"))
    (root / "conf" / "method" / "my_alloc.yaml").write_text("name: my_alloc\nn: ${rollout.n}\n")
    listed = python(["-c", "from pcbench.bench.sample_efficiency import all_methods; print(all_methods())"], root)
    assert listed.returncode == 0, listed.stderr
    assert "'my_alloc'" in listed.stdout and "'grpo'" in listed.stdout  # the benchmark's default methods
    proc = python(["-m", "pcbench.run", "method=my_alloc", *TINY, f"paths.results={tmp_path / 'results'}",
                   f"paths.cache={cache}"], root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = trained_rows(tmp_path / "results")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for r in rows[1:]:  # the base class counted the trained rollouts; StepBatch the regime counters
        assert r["alloc/mine"] == 1 and r["rollouts/trained"] == r["rollouts/step"] == 4 * 8
        assert r["alloc/groups"] == 4 and "alloc/zero_variance_groups" in r


@pytest.mark.slow
def test_a_module_outside_the_package_via_method_module(tmp_path, cache):
    ext = tmp_path / "ext"
    (ext / "my_allocs").mkdir(parents=True)
    (ext / "my_allocs" / "__init__.py").write_text("")
    (ext / "my_allocs" / "mine.py").write_text(SOURCE.format(name="my_ext"))
    (ext / "conf" / "method").mkdir(parents=True)
    (ext / "conf" / "method" / "my_ext.yaml").write_text("name: my_ext\nmodule: my_allocs.mine\nn: ${rollout.n}\n")
    args = ["-m", "pcbench.run", "method=my_ext", f"hydra.searchpath=[file://{ext / 'conf'}]", *TINY,
            f"paths.results={tmp_path / 'results'}", f"paths.cache={cache}"]
    missing = python(args, REPO)  # the module's folder is not on the path: one line, nothing written
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "pcbench: config error: method.module='my_allocs.mine': cannot import it (ModuleNotFoundError: No module "
        f"named 'my_allocs'); put its folder on PYTHONPATH or pip install it (in {ext / 'conf' / 'method' / 'my_ext.yaml'})"]
    assert not (tmp_path / "results").exists()
    proc = python(args, REPO, env={"PYTHONPATH": os.pathsep.join([str(ext), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = trained_rows(tmp_path / "results")
    assert [r["step"] for r in rows] == [0, 1, 2] and all(r["alloc/mine"] == 1 for r in rows[1:])
