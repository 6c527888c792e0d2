"""Shared fixtures. No __init__.py under tests/: the suite runs in importlib mode (verl ships a
top-level `tests` package that would otherwise shadow ours)."""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import pcbench  # noqa: E402,F401  before any torch operation: pins the embedded numerics (pcbench/numerics.py)

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# Tests that start Ray / vLLM or use the test Slurm clusters: one xdist worker runs them all, one
# after another (they load both cores, share the clusters and bound themselves with timeouts).
SERIAL_DIRS = ("verl", "slurm")
SERIAL_MARKS = ("verl_cpu", "slurm")


def pytest_collection_modifyitems(config, items):
    _xdist_groups(items)
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except Exception:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on a GPU machine with vLLM installed)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _xdist_groups(items):
    """Work units for the README's `pytest -n 2 --dist loadgroup`: every test file is one unit, so a
    module fixture (a trained run several tests read) is built once, on one worker; every test that
    starts Ray / vLLM or uses a Slurm cluster is in one unit `serial`. The other worker meanwhile runs
    the embedded and analysis files (issue 29: CI's wall time; docs/measurements.md#ci). Without
    `-n` the marks do nothing."""
    for item in items:
        rel = Path(str(item.path)).resolve().relative_to(REPO / "tests")
        serial = rel.parts[0] in SERIAL_DIRS or any(item.get_closest_marker(m) for m in SERIAL_MARKS)
        item.add_marker(pytest.mark.xdist_group("serial" if serial else rel.as_posix()))


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def default_warmstart_cache(tmp_path_factory) -> Path:
    """One cache folder for the whole session holding the default embedded warm start (trained by the
    first test that asks for it, ~4 min): the tests of the default numbers and the default probes
    share it instead of each training it again (issue 29's CI budget). Under xdist the workers share
    the folder (the session's base temp, fresh per run); the warm start's file lock lets one train
    it while the other waits."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "default-warmstart"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("default-warmstart")
