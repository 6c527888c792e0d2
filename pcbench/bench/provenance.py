"""What a committed benchmark file records about where it came from."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str:
    if not (REPO / ".git").exists():  # an installed wheel: site-packages is no checkout of pcbench
        return ""
    try:
        # not .strip(): porcelain lines start with a status column that may be a space
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30).stdout.rstrip("\n")
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance(argv: list[str] | None = None) -> dict:
    """Commit, dirty files (this checkout is shared, so name them), versions, machine and its numerics, load."""
    import torch
    import transformers

    import pcbench
    from pcbench import numerics

    dirty = [line[3:] for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": _git("rev-parse", "HEAD").strip() or "unknown", "dirty_files": dirty, "pcbench": pcbench.__version__,
            "command": "python -m pcbench.bench " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__, "cpus": os.cpu_count(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()],
            # CPU, ATen capability, BLAS, the numerics fingerprint: whose floats these are (pcbench/numerics.py)
            "machine": numerics.describe()}


def rescored(meta: dict, previous: dict) -> dict:
    """The provenance of a rescore that trained nothing: the previous report's record stays the source (its
    machine and warm-start digests describe the runs), this command's goes under `rescored`."""
    return {**previous["provenance"], "rescored": meta}

