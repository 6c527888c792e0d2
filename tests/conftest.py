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


# Under `-n 2 --dist loadgroup` (the README's test command) each test file is one xdist work unit (a
# module fixture is built once), except two units that each run on one worker, one test after
# another: `ray`, every test that starts Ray / vLLM (they load both cores and bound themselves with
# timeouts; the 2-node tests also share their cluster), and `slurm`, the single-node cluster's
# tests. By node id, because xdist's scheduler sees node ids only; a marked test outside them stops
# the session at collection, so the lists cannot go stale.
HEAVY_UNITS = {  # the first match wins
    "ray": ("tests/verl/", "tests/slurm/test_multinode_", "tests/analysis/test_predict_cli.py::test_verl_probe"),
    "slurm": ("tests/slurm/",),
}
MARKS_UNITS = {"verl_cpu": ("ray",), "slurm": ("ray", "slurm")}


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: `ray`, `slurm`, or its file."""
    for unit, prefixes in HEAVY_UNITS.items():
        if nodeid.startswith(prefixes):
            return unit
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)  # pytest without xdist: no such hook, and no error
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
    _check_heavy_units(items)
    # the `ray` unit's users of the shared default warm start last: by then the other worker has
    # trained it (tests/embedded/test_reference.py), instead of this one spending ~4 min on it
    items.sort(key=lambda it: work_unit(it.nodeid) == "ray" and "default_warmstart_cache" in getattr(it, "fixturenames", ()))
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


def _check_heavy_units(items):
    stray = [(item.nodeid, mark) for item in items for mark, units in MARKS_UNITS.items()
             if item.get_closest_marker(mark) and work_unit(item.nodeid) not in units]
    if stray:
        nodeid, mark = stray[0]
        raise pytest.UsageError(f"{nodeid} is marked {mark} but not in tests/conftest.py's HEAVY_UNITS "
                                f"{'/'.join(MARKS_UNITS[mark])}: add it there (xdist would run it beside another such test)")


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
