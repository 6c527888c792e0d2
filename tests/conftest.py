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
# the session at collection, so the lists cannot go stale. The rest of tests/verl (configs, dry
# runs, CPU test doubles) are ordinary file units.
HEAVY_UNITS = {  # the first match wins
    "ray": ("tests/verl/test_cpu_end_to_end.py", "tests/verl/test_embedded_on_verl.py", "tests/verl/test_pretrained.py",
            "tests/verl/test_real_transferqueue.py", "tests/verl/test_own_data_reward.py", "tests/slurm/test_multinode_",
            "tests/analysis/test_predict_cli.py::test_verl_probe"),
    "slurm": ("tests/slurm/",),
}
MARKS_UNITS = {"verl_cpu": ("ray",), "slurm": ("ray", "slurm")}
# Session-shared assets (fixtures below) and the units that build them first, on the worker that does
# not hold the `ray` unit, while that one starts its Ray tests: the `ray` unit's users of an asset run
# last in it, by when it is built (else they wait on its lock, never build it twice).
SHARED_ASSETS = {"default_warmstart_cache": "tests/embedded/test_reference.py",
                 "agreement_checkpoint": "tests/embedded/test_agreement_checkpoint.py"}
ORDER_ENV = "PCBENCH_TEST_ORDER"  # `reverse`: the units and the tests in each in the opposite order (no hidden order)


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: `ray`, `slurm`, or its file."""
    for unit, prefixes in HEAVY_UNITS.items():
        if nodeid.startswith(prefixes):
            return unit
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)  # pytest without xdist: no such hook, and no error
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with pcbench's units (work_unit) instead of xdist_group marks: xdist 3.8
    renames node ids to group them, which pytest 9 no longer reads (every test became its own unit).
    Units are handed out in collection order (set by pytest_collection_modifyitems), not by size."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return Units(config, log)


def pytest_collection_modifyitems(config, items):
    _check_heavy_units(items)
    items.sort(key=_position)
    if os.environ.get(ORDER_ENV, "").lower() == "reverse":  # every unit and every test in it reversed; the
        items.reverse()                                    # `ray` unit still handed out first (the longest)
        items.sort(key=lambda item: work_unit(item.nodeid) != "ray")
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


def _position(item) -> tuple[int, int]:
    """Sort key (stable): the `ray` unit first, its users of shared assets last in it; then the units that
    build the shared assets; then `slurm`; then the rest in collection order. With two workers, one takes
    the `ray` unit from the start (the longest unit), the other builds the assets and runs the rest."""
    unit, fixtures = work_unit(item.nodeid), getattr(item, "fixturenames", ())
    if unit == "ray":
        return 0, sum(i + 1 for i, name in enumerate(SHARED_ASSETS) if name in fixtures)
    if unit in SHARED_ASSETS.values():
        return 1, list(SHARED_ASSETS.values()).index(unit)
    return (2, 0) if unit == "slurm" else (3, 0)


_UNIT_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Sum each unit's setup + call + teardown seconds (on the controller under xdist: every worker's reports)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        unit = work_unit(report.nodeid)
        _UNIT_SECONDS[unit] = _UNIT_SECONDS.get(unit, 0.0) + float(report.duration)


def pytest_terminal_summary(terminalreporter):
    """One line of the longest work units and their sum: with two workers, the wall time is at least half
    the sum and at least the `ray` unit (which one runs alone)."""
    if _UNIT_SECONDS:
        top = sorted(_UNIT_SECONDS.items(), key=lambda kv: -kv[1])[:8]
        terminalreporter.write_line("work units, seconds: " + ", ".join(f"{u} {s:,.0f}" for u, s in top)
                                    + f"; all {sum(_UNIT_SECONDS.values()):,.0f}")


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


def _shared_folder(tmp_path_factory, name: str) -> Path:
    """A folder of this test session that every xdist worker sees (the session's base temp, fresh per
    run): never one an earlier session left behind."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / name
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session")
def default_warmstart_cache(tmp_path_factory) -> Path:
    """A cache folder holding the default embedded warm start, trained once per session (~4 min on one
    thread) by the first test that asks (under xdist the workers share the folder; the warm start's file
    lock lets one train it while the other waits). The tests of the default numbers, the default probes
    and the Slurm sweeps of the default model all start from it."""
    from pcbench.backends.embedded import reference

    cache = _shared_folder(tmp_path_factory, "default-warmstart")
    reference.warmstart(cache)
    return cache


@pytest.fixture(scope="session")
def agreement_checkpoint(tmp_path_factory) -> dict:
    """tests/verl/agreement_checkpoint.py's checkpoint, task and tier files, built once per session
    (~5 min: its three-stage warm start and the export), under a lock the workers share."""
    import fcntl

    from tests.verl.agreement_checkpoint import build

    root = _shared_folder(tmp_path_factory, "agreement-checkpoint")
    with open(root / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return build(root)
