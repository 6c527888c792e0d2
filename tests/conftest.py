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


def pytest_collection_modifyitems(config, items):
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


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def default_warmstart_cache(tmp_path_factory) -> Path:
    """One cache folder for the whole session holding the default embedded warm start (trained by the
    first test that asks for it, ~1 min): the tests of the default numbers and the default probes
    share it instead of each training it again (issue 29's CI budget)."""
    return tmp_path_factory.mktemp("default-warmstart")
