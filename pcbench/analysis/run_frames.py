"""Load pcbench run folders into two tidy DataFrames.

A run is a folder holding `config.yaml` and `metrics.jsonl` (contract: docs/run_folder.md).
`load_runs(dirs)` walks every folder below `dirs` (skipping names that start with "."),
and returns

- runs: one row per run (identity from config.yaml, status from summary.json, or "starved" from
  stopped.json (`read_stop`), final numbers);
- metrics: one row per (run, step) with columns ID_COLUMNS followed by every metric key
  logged in any line (NaN where a line does not carry the key; eval lines carry `val/acc`);
- warnings: one string per problem, each starting with the file it is about.

Runs are compared within a setup: everything in config.yaml except NOT_SETUP (the method and
its knobs, the seed, bookkeeping that does not change results). `setup` is a hash of it. When
the folders hold several setups of one (model, data), the `data` column of those runs names
their setup, "synthetic-arith [data.train_size=1000]" (the keys whose values differ), so every
grouping by (model, data) downstream (scoring, curves, figures, bench) keeps them apart, each
with its own target; a warning lists the setups and how to keep one (`where`).

Nothing here raises on bad input: a garbled line, a config that does not parse, a run with
no evaluations or steps that go backwards become warnings, and the rest is still loaded.

    from pcbench.analysis.run_frames import load_runs
    runs, metrics, warnings = load_runs(["results/"])
    runs, metrics, warnings = load_runs(["results/"], where=["data.train_size=1000"])
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Iterable

import pandas as pd
import yaml

from pcbench.analysis.setups import label_setups, matches, setup_hash, setup_of

ID_COLUMNS = ("run_id", "path", "method", "model", "data", "seed", "step", "cumulative_rollouts")
RUN_COLUMNS = ("run_id", "path", "experiment", "method", "model", "data", "seed", "backend", "setup", "status",
               "n_lines", "n_evals", "last_step", "final_cumulative_rollouts", "final_val_acc", "stop_reason")
ACC = "val/acc"
MAX_LINE_WARNINGS = 5
UNFINISHED = "unfinished"
# Stopped because its allocator starved (pcbench.rundir.STOPPED): scored with its evaluations up to the
# stop, censored from the last one when it had not reached the target (docs/method.md#rollouts-to-target).
STARVED = "starved"
SCORED = ("finished", STARVED)  # the statuses whose curves are results, not truncations


def failed_runs(results: list[dict]) -> list[dict]:
    """The benchmark's run results (pcbench.bench.launch: status finished / starved / failed) that the
    reports list as failures: crashes, never a run whose allocator starved (that one is scored)."""
    return [r for r in results if r["status"] not in SCORED]

# config.yaml key path -> runs column
# config.yaml keys (and everything below them) that do not define the setup runs are compared in:
# the method and its knobs, the seed, and bookkeeping that does not change results. For verl
# runs, verl.* copies of those (its rollout.n is method.n, its data.seed is seed, ...).
NOT_SETUP = ("method", "seed", "experiment", "logging", "paths", "resume", "dry_run", "hydra",
             "train.threads", "train.checkpoint_every",
             "backend.poll_interval_s", "backend.watchdog_s", "backend.max_retries", "backend.ray_num_cpus", "backend.reward_path",
             "verl.actor_rollout_ref.rollout.n", "verl.data.seed", "verl.data.dataloader_num_workers",
             "verl.trainer.project_name", "verl.trainer.experiment_name", "verl.trainer.logger",
             "verl.trainer.default_local_dir", "verl.trainer.resume_mode", "verl.trainer.save_freq",
             "verl.reward.custom_reward_function.path", "verl.ray_kwargs")
MAX_LABEL_KEYS = 3

_CONFIG_FIELDS = {"method": ("method", "name"), "model": ("model", "name"), "data": ("data", "name"),
                  "backend": ("backend", "name"), "seed": ("seed",), "experiment": ("experiment",)}


def is_run_dir(path: Path) -> bool:
    return (path / "config.yaml").is_file() and (path / "metrics.jsonl").is_file()


def find_run_dirs(roots: Iterable[str | os.PathLike]) -> tuple[list[Path], list[str]]:
    """Every run folder at or below `roots`, sorted; folders named ".*" are not entered.

    A run's own subfolders (e.g. checkpoint/) are not searched. A folder with only one of
    config.yaml / metrics.jsonl is reported and skipped; any other non-run folder is skipped.
    """
    found: set[Path] = set()
    warnings: list[str] = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            warnings.append(f"{root}: not a directory, skipped")
            continue
        for dirpath, dirnames, _ in os.walk(root):
            here = Path(dirpath)
            if is_run_dir(here):
                found.add(here)
                dirnames[:] = []
                continue
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            has_cfg, has_metrics = (here / "config.yaml").is_file(), (here / "metrics.jsonl").is_file()
            if has_cfg != has_metrics:
                missing = "metrics.jsonl" if has_cfg else "config.yaml"
                warnings.append(f"{here}: has no {missing}, not read as a run")
    return sorted(found), warnings


def _dig(cfg: dict, keys: tuple[str, ...]):
    node = cfg
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def read_config(run_dir: Path) -> tuple[dict | None, list[str]]:
    """Identity fields of a run (method, model, data, backend, seed, experiment), or None."""
    path = run_dir / "config.yaml"
    try:
        cfg = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        return None, [f"{path}: cannot parse config ({type(err).__name__}), run skipped"]
    if not isinstance(cfg, dict):
        return None, [f"{path}: config is not a mapping, run skipped"]
    ident, warnings = {}, []
    for column, keys in _CONFIG_FIELDS.items():
        value = _dig(cfg, keys)
        if value is None:
            warnings.append(f"{path}: no {'.'.join(keys)}, using 'unknown'")
            value = "unknown" if column != "seed" else None
        ident[column] = value if column == "seed" else str(value)
    ident["_setup"] = setup_of(cfg, NOT_SETUP)  # kept on the record for labels, not a column
    ident["setup"], ident["_config"] = setup_hash(ident["_setup"]), cfg
    return ident, warnings


def _parse_line(text: str, where: str) -> tuple[dict | None, str | None]:
    """One metrics line as a dict of numbers, or (None, warning).

    Values that are not numbers (strings, lists, null) are dropped from the line, since every
    metric of the contract is a number; the warning names them and the line is kept. NaN (a
    diverged loss, say) is kept as a number.
    """
    try:
        row = json.loads(text)
    except json.JSONDecodeError:
        return None, f"{where}: unparseable line skipped (truncated or garbled): {text[:60]!r}"
    if not isinstance(row, dict):
        return None, f"{where}: line is not a JSON object, skipped"
    for key in ("step", "cumulative_rollouts"):
        if not _is_number(row.get(key)):
            return None, f"{where}: line without a numeric {key!r}, skipped"
    row["step"] = int(row["step"])
    bad = sorted(k for k, v in row.items() if not isinstance(v, (int, float)))  # bools and nan stay
    for key in bad:
        del row[key]
    return row, (f"{where}: non-numeric value(s) dropped for {', '.join(bad)}" if bad else None)


def read_metrics(run_dir: Path) -> tuple[list[dict], list[str]]:
    """The lines of metrics.jsonl, one per step sorted by step.

    If steps do not increase strictly (a resume that re-logged steps) the last line written
    for a step wins, with one warning for the run. At most MAX_LINE_WARNINGS per file.
    """
    path = run_dir / "metrics.jsonl"
    warnings: list[str] = []
    by_step: dict[int, dict] = {}
    last_step, backwards = None, None
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as err:
        return [], [f"{path}: cannot read ({err.strerror})"]
    for lineno, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        row, problem = _parse_line(text, f"{path}:{lineno}")
        if problem:
            warnings.append(problem)
        if row is None:
            continue
        if last_step is not None and row["step"] <= last_step and backwards is None:
            backwards = f"{path}:{lineno}: step {row['step']} after step {last_step} (steps must increase); " \
                        "keeping the last line written for each step"
        last_step = row["step"]
        by_step[row["step"]] = row
    if len(warnings) > MAX_LINE_WARNINGS:
        warnings = warnings[:MAX_LINE_WARNINGS] + [f"{path}: {len(warnings) - MAX_LINE_WARNINGS} more bad lines"]
    rows = [by_step[s] for s in sorted(by_step)]
    if backwards:
        warnings.append(backwards)
    cum = [r["cumulative_rollouts"] for r in rows]
    if any(b < a for a, b in zip(cum, cum[1:])):
        warnings.append(f"{path}: cumulative_rollouts decreases between steps")
    return rows, warnings


def read_status(run_dir: Path) -> tuple[str, list[str]]:
    """summary.json's status, or "unfinished" when there is none (running or crashed)."""
    path = run_dir / "summary.json"
    if not path.is_file():
        return UNFINISHED, []
    try:
        summary = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return UNFINISHED, [f"{path}: cannot parse summary, status taken as unfinished"]
    status = summary.get("status") if isinstance(summary, dict) else None
    if not isinstance(status, str) or not status:
        return UNFINISHED, [f"{path}: summary has no status, taken as unfinished"]
    return status, []


def read_stop(run_dir: Path, rows: list[dict] | None = None) -> tuple[str | None, list[str]]:
    """The reason in stopped.json (e.g. "round_bound") when it describes the folder as it stands, else None.

    The record applies only while the metrics still end at the step it names: a resume that logged
    another step, or rewound to its checkpoint, makes it stale (the run is then running or crashed).
    rows: the folder's metrics lines (read_metrics), read here when not given.
    """
    from pcbench.rundir import STOPPED

    path = run_dir / STOPPED
    if not path.is_file():
        return None, []
    try:
        stop = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None, [f"{path}: cannot parse, the run is not counted as starved"]
    if rows is None:
        rows = read_metrics(run_dir)[0]
    reason = stop.get("reason") if isinstance(stop, dict) else None
    if not isinstance(reason, str) or not reason or not rows or stop.get("step") != rows[-1]["step"]:
        return None, []
    return reason, []


def _run_record(run_dir: Path, ident: dict, status: str, rows: list[dict], reason: str | None = None) -> dict:
    evals = [r for r in rows if _is_number(r.get(ACC))]
    return {"run_id": run_dir.name, "path": str(run_dir), **ident, "status": status, "stop_reason": reason,
            "n_lines": len(rows), "n_evals": len(evals),
            "last_step": rows[-1]["step"] if rows else None,
            "final_cumulative_rollouts": rows[-1]["cumulative_rollouts"] if rows else None,
            "final_val_acc": evals[-1][ACC] if evals else None}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load_run(run_dir: Path, where: list | None = None) -> tuple[dict | None, list[dict], list[str]]:
    """(runs row, metrics rows, warnings) for one run folder; runs row None if unreadable or
    not selected by `where` ([(key, value)], pcbench.analysis.setups.parse_where)."""
    ident, warnings = read_config(run_dir)
    if ident is None:
        return None, [], warnings
    if where and not matches(ident["_config"], ident["setup"], where):
        return None, [], []
    rows, more = read_metrics(run_dir)
    warnings += more
    status, more = read_status(run_dir)
    warnings += more
    reason = None
    if status != "finished":  # a finished summary wins over a stop record a resume left behind
        reason, more = read_stop(run_dir, rows)
        warnings += more
        status = STARVED if reason else status
    record = _run_record(run_dir, ident, status, rows, reason)
    if not rows:
        warnings.append(f"{run_dir / 'metrics.jsonl'}: no metrics lines")
    elif record["n_evals"] == 0:
        warnings.append(f"{run_dir / 'metrics.jsonl'}: no evaluation lines ({ACC}); "
                        "run excluded from rollouts-to-target")
    head = {k: record[k] for k in ID_COLUMNS[:6]}
    return record, [{**head, **row} for row in rows], warnings


def load_runs(dirs: Iterable[str | os.PathLike], where: list[str] | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(runs, metrics, warnings) for every run folder below `dirs` whose config.yaml matches every
    `where` "key=value" (ValueError on a malformed one); see the module docstring."""
    from pcbench.analysis.setups import parse_where

    selection = parse_where(where)
    run_dirs, warnings = find_run_dirs(dirs)
    records, lines = [], []
    for run_dir in run_dirs:
        record, rows, more = load_run(run_dir, selection)
        warnings += more
        if record is not None:
            records.append(record)
            lines += rows
    labels, more = label_setups(records)
    warnings += more
    named = {}
    for record in records:  # runs of one (model, data) in several setups: the data column names the setup
        if record["setup"] in labels:
            record["data"] = named[record["path"]] = f"{record['data']} [{labels[record['setup']]}]"
    for row in lines:
        row["data"] = named.get(row["path"], row["data"])
    runs = pd.DataFrame(records, columns=list(RUN_COLUMNS))
    metric_keys = sorted({k for row in lines for k in row} - set(ID_COLUMNS))
    metrics = pd.DataFrame(lines, columns=list(ID_COLUMNS) + metric_keys)
    if len(metrics):
        metrics = metrics.sort_values(["path", "step"], kind="stable").reset_index(drop=True)
    return runs, metrics, warnings


def eval_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """The evaluation lines (those carrying val/acc) of a metrics frame."""
    if ACC not in metrics.columns:
        return metrics.iloc[0:0]
    return metrics[metrics[ACC].notna()]
