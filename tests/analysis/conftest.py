"""Fixtures for analysis tests: the committed run folders and a writer for new ones.

Works under `--import-mode=importlib` with or without `pythonpath = ["."]`: the repo root
(for `import pcbench.*` from a checkout) and this folder (for `import runfolder_writer`) go on sys.path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for path in (str(REPO), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

from runfolder_writer import ledger, make_lines, write_run  # noqa: E402

FIXTURE_RUNS = REPO / "tests" / "fixtures" / "runs"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def fixture_runs() -> Path:
    return FIXTURE_RUNS


@pytest.fixture(scope="session")
def loaded():
    """(runs, metrics, warnings) of the committed fixture folders."""
    from pcbench.analysis.run_frames import load_runs
    return load_runs([FIXTURE_RUNS])


@pytest.fixture
def make_run(tmp_path):
    """make_run(method, seed, evals, rollouts_per_step=1000, n_steps=4, model=, data=, **write_run
    kwargs) writes a GRPO-like run (plain rollouts) below tmp_path/"runs" and returns its folder."""
    def _make(method: str, seed: int, evals: dict[int, float], rollouts_per_step: int = 1000,
              n_steps: int = 4, model: str = "m", data: str = "d", step_s: float = 1.0, **kwargs) -> Path:
        steps = [ledger(plain=rollouts_per_step, rounds=1)] * n_steps
        return write_run(tmp_path / "runs", method, model, data, seed, make_lines(steps, evals, step_s), **kwargs)
    return _make
