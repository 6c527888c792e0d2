"""Fixtures of the verl backend tests (their test doubles live in tests/verl/doubles.py)."""

import pytest

from tests.verl.doubles import compose_pcbench


@pytest.fixture
def paper_cfg():
    """Qwen2.5-Math-1.5B x DeepMath at the paper's settings, for the method given."""
    return lambda method, *more: compose_pcbench("backend=verl", "model=qwen2.5-math-1.5b", "data=deepmath",
                                                 f"method={method}", *more)
