"""Fixtures for the reward tests (no __init__.py: the suite runs in importlib mode)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pcbench.reward import RewardStats


@pytest.fixture
def stats() -> RewardStats:
    """A private counter set, so tests do not see each other's calls."""
    return RewardStats()


@pytest.fixture
def in_tmp_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test with an empty temporary directory as the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def child_pids():
    """A function returning the PIDs of this process's live children (None without psutil)."""
    try:
        import psutil
    except ImportError:
        return lambda: None
    me = psutil.Process(os.getpid())

    def _children() -> set[int] | None:
        alive = set()
        for child in me.children(recursive=True):
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    alive.add(child.pid)
            except psutil.NoSuchProcess:
                pass
        return alive

    return _children


@pytest.fixture
def reply_waits(monkeypatch) -> list[tuple[float, bool]]:
    """(bound, expired) of every wait for a worker's reply. The guard's no-hang promise is that
    bound (timeout_s + grace_s), then a kill; asserting it instead of the caller's wall time keeps
    these tests true on a loaded machine, where scheduling alone can add seconds."""
    from pcbench.reward import procguard

    waits: list[tuple[float, bool]] = []
    read_line = procguard._Worker.read_line

    def recording(self, timeout):
        line = read_line(self, timeout)
        if self.ready:  # wait_ready's wait for a fresh worker sets ready after it: not a reply wait
            waits.append((timeout, line is None))
        return line

    monkeypatch.setattr(procguard._Worker, "read_line", recording)
    return waits
