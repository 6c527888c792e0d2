"""One pcbench command line in its own session, bounded in time, with everything it started
killed afterwards (the vLLM / Ray end-to-end tests, one node or two)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Callable

import pytest

from pcbench.backends.verl.watchdog import kill_tree


def launch(cmd: list[str], log: Path, *, cwd: Path, timeout_s: float, env: dict | None = None,
           until: Callable[[], bool] | None = None, why: Callable[[], str] = lambda: "") -> str:
    """'exit <rc>', or 'stopped' once `until()` returned True (the process tree is then killed).
    After `timeout_s` the test fails with `why()` (e.g. the run's heartbeat stage) and the log's path."""
    env = {**(os.environ if env is None else env), "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    with open(log, "a") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    start = time.monotonic()
    try:
        while proc.poll() is None:
            time.sleep(1.0)
            if until is not None and until():
                return "stopped"
            if time.monotonic() - start > timeout_s:
                pytest.fail(f"run still going after {timeout_s} s{why()}; log {log}")
        return f"exit {proc.returncode}"
    finally:
        kill_tree(proc.pid, {proc.pid})
