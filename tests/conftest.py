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


# Tests that start Ray / vLLM or use the test Slurm clusters: under `-n 2 --dist loadgroup` one xdist
# worker runs them all, one after another (they load both cores, share the clusters and bound
# themselves with timeouts). By path, because xdist's scheduler sees node ids only; a marked test
# elsewhere stops the session at collection (so the list cannot go stale).
SERIAL_PATHS = ("tests/verl/", "tests/slurm/", "tests/analysis/test_predict_cli.py")
SERIAL_MARKS = ("verl_cpu", "slurm")


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: `serial`, or its file (a module fixture is built once)."""
    path = nodeid.split("::", 1)[0]
    return "serial" if path.startswith(SERIAL_PATHS) else path


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with pcbench's units (work_unit) instead of xdist_group marks: xdist 3.8
    renames node ids to group them, which pytest 9 no longer reads (every test became its own unit)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return Units(config, log)


def pytest_collection_modifyitems(config, items):
    _check_serial_paths(items)
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


def _check_serial_paths(items):
    stray = [item.nodeid for item in items if work_unit(item.nodeid) != "serial"
             and any(item.get_closest_marker(m) for m in SERIAL_MARKS)]
    if stray:
        raise pytest.UsageError(f"{stray[0]} is marked {'/'.join(SERIAL_MARKS)} but not under tests/conftest.py's "
                                f"SERIAL_PATHS: add its file there (xdist would run it beside another Ray/Slurm test)")


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
