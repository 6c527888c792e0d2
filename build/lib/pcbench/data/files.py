"""The first thing a verl run checks: every parquet file exists, else one line saying how to make it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from pcbench.data.specs import SPECS


class MissingDataError(FileNotFoundError):
    """Raised before any expensive work; the message is the command that prepares the files."""


def prepare_command(paths: Iterable[str | Path]) -> str:
    """`python -m pcbench.data.prepare a b --out DIR`, one command per output folder."""
    by_dir: dict[str, list[str]] = {}
    for p in map(Path, paths):
        by_dir.setdefault(str(p.parent), []).append(p.stem)
    return "; ".join(f"python -m pcbench.data.prepare {' '.join(names)} --out {d}" for d, names in by_dir.items())


def check_data_files(paths: Iterable[str | Path]) -> None:
    paths = [Path(p).expanduser() for p in paths]
    missing = [p for p in paths if not p.exists()]
    if not missing:
        return
    unknown = [p.stem for p in missing if p.stem not in SPECS]
    how = prepare_command(p for p in missing if p.stem in SPECS)
    tail = f"; no recipe for {', '.join(unknown)} (point data.* at your own verl parquet)" if unknown else ""
    raise MissingDataError(f"missing data file(s) {', '.join(map(str, missing))}"
                           + (f"; prepare them with: {how}" if how else "") + tail)
