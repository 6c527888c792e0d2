"""One run = one folder that describes itself (docs/run_folder.md).

The folder name is derived from the config that defines the experiment (dora-style
signature), so the same command maps to the same folder: an unfinished run resumes, a
finished one is refused, a different config never merges into it. Every file is written
so that a crash at any point leaves it readable: metrics are append-only and flushed per
line, everything else goes to a temp name and is renamed. A failure the run entry catches
appends its traceback to error.log (`record_failure`) and touches nothing else, except a run
whose allocator starved (`AllocationError.stop_reason`): that stop is also written to stopped.json
(`RunDir.record_stop`), so the analysis can score the run as censored instead of dropping it. The
life of a run around this folder (dry run, prepare, train, summary) is pcbench/runs.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

# Keys that change how a run executes, not what it computes; dotted paths into the config.
# train.threads: results are bit-identical only at a fixed thread count, but a user moving a run
# between machines keeps its folder. backend.watchdog_s: raising the hang bound must resume.
NON_IDENTITY_KEYS = ("logging", "paths", "resume", "dry_run", "hydra",
                     "train.threads", "train.checkpoint_every", "backend.watchdog_s",
                     "backend.ray_port", "backend.ray_join_timeout_s")


STOPPED = "stopped.json"  # written by RunDir.record_stop; read by pcbench.analysis.run_frames.read_stop


class RunFolderError(RuntimeError):
    """The run folder cannot be used as asked (finished already, or holds another config)."""


def identity(cfg: DictConfig) -> dict:
    data = OmegaConf.to_container(cfg, resolve=True)
    for key in NON_IDENTITY_KEYS:
        *parents, leaf = key.split(".")
        node = data
        for part in parents:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(leaf, None)
    return data


def run_id(cfg: DictConfig) -> str:
    blob = _canonical(identity(cfg))
    digest = hashlib.sha256(blob.encode()).hexdigest()[:8]
    safe = lambda s: str(s).replace("/", "_").replace(" ", "_")
    return f"{safe(cfg.method.name)}-{safe(cfg.model.name)}-{safe(cfg.data.name)}-s{cfg.seed}-{digest}"


def run_path(cfg: DictConfig) -> Path:
    """`<paths.results>/<experiment>/<run_id>`: the one place a run's folder is named."""
    return Path(cfg.paths.results) / str(cfg.experiment) / run_id(cfg)


@dataclass(frozen=True)
class Plan:
    """What preparing cfg's folder does: `new` (create it), `resume` (reopen it), `done` (a Slurm
    requeue of a finished run: nothing to do) or `refuse` (`reason` says why and what to do)."""
    path: Path
    action: str
    reason: str = ""


@dataclass(frozen=True)
class Summary:
    """summary.json: the same keys from every backend (docs/run_folder.md). Written once the
    metrics reach train.steps (pcbench.runs.finish), from the folder's own files; analysis reads
    `status` (a folder without a "finished" one is unfinished)."""
    status: str                       # "finished"
    run_id: str                       # the folder's name
    backend: str                      # backend.name
    method: str                       # method.name
    seed: int
    steps: int                        # the last metrics line's step (= train.steps)
    cumulative_rollouts: int          # the last metrics line's
    final_val_acc: float | None       # the last evaluation line's val/acc (None: no evaluation)
    wall_s: float                     # the last line's time/elapsed_s (training time, across resumes)
    details: dict = field(default_factory=dict)  # the backend's own: embedded warm start, verl platform


def plan(cfg: DictConfig) -> Plan:
    """Read the folder cfg maps to and decide; writes nothing (the dry run prints this)."""
    path = run_path(cfg)
    if not (path / "config.yaml").exists():
        return Plan(path, "new")
    folder = RunDir(path, resumed=True)
    if folder.finished():
        if int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0) > 0:
            return Plan(path, "done", "a Slurm requeue that raced the run's end")
        return Plan(path, "refuse", f"{path} is a finished run of this exact config; delete the folder to "
                                    f"rerun it, or change seed=/experiment= for a new run")
    stored = OmegaConf.load(path / "config.yaml")
    if _canonical(identity(stored)) != _canonical(identity(cfg)):
        return Plan(path, "refuse", f"{path}/config.yaml holds a different config than this command; refusing "
                                    f"to merge: delete the folder or change experiment=")
    if cfg.resume == "never":
        return Plan(path, "refuse", f"{path} exists (unfinished) and resume=never; use resume=auto to continue "
                                    f"it or delete the folder")
    rows = folder.read_metrics()
    return Plan(path, "resume", f"metrics up to step {rows[-1]['step']}" if rows else "no metrics yet")


def _canonical(data: dict) -> str:
    return json.dumps(data, sort_keys=True, default=str)


def record_failure(cfg: DictConfig, what: str) -> str:
    """Append the traceback being handled to the run folder's error.log; -> the one-line report.

    Nothing else in the folder is touched, so the same command resumes it from its last
    checkpoint. If the log cannot be written there (no folder yet, disk full) it goes to the
    system temp folder; if that fails too, the traceback is printed to stderr.
    """
    import datetime
    import sys
    import traceback

    what = (what.strip().splitlines() or ["unknown error"])[0]
    folder = run_path(cfg)
    entry = f"--- {datetime.datetime.now().isoformat(timespec='seconds')} {what}\n{traceback.format_exc()}\n"
    log = None
    for candidate in ([folder / "error.log"] if folder.is_dir() else []) + \
            [Path(tempfile.gettempdir()) / f"pcbench-error-{folder.name}.log"]:
        try:
            with open(candidate, "a") as f:
                f.write(entry)
            log = candidate
            break
        except OSError:
            continue
    if log is None:
        sys.stderr.write(entry)
    rows = RunDir(folder, resumed=True).read_metrics() if folder.is_dir() else []
    where = f"after step {rows[-1]['step']} of {cfg.train.steps}" if rows else "before the first step"
    tail = "rerun the same command to resume from the last checkpoint" if (folder / "config.yaml").exists() \
        else "no run folder was written"
    if _stopped_at(folder) == (rows[-1]["step"] if rows else None) and (folder / STOPPED).exists():
        # a resume would replay the same steps into the same stop (the run is deterministic)
        tail = (f"the allocator starved ({STOPPED}): the analysis scores this run as censored from its last "
                "evaluation; widen the band or raise method.max_rounds to train further")
    return f"{what} ({where}); {'traceback in ' + str(log) if log else 'traceback above'}; {tail}"


def _stopped_at(folder: Path):
    """The step stopped.json names (None when absent or unreadable)."""
    try:
        return json.loads((folder / STOPPED).read_text()).get("step")
    except (OSError, ValueError, AttributeError):
        return None


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600: give it what open() would
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=float) + "\n")


class RunDir:
    def __init__(self, path: Path, resumed: bool):
        self.path = Path(path)
        self.resumed = resumed

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / "checkpoint"

    @classmethod
    def prepare(cls, cfg: DictConfig) -> "RunDir":
        """Create the folder for cfg, or reopen an unfinished one with the same config (`plan`)."""
        p = plan(cfg)
        if p.action == "refuse":
            raise RunFolderError(p.reason)
        if p.action == "new":
            p.path.mkdir(parents=True, exist_ok=True)
            atomic_write_text(p.path / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
        return cls(p.path, resumed=p.action != "new")

    def config(self) -> DictConfig:
        return OmegaConf.load(self.path / "config.yaml")

    def summary(self) -> dict | None:
        """summary.json as written (folders from before the Summary schema have other keys), or None."""
        path = self.path / "summary.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def finished(self) -> bool:
        return (self.summary() or {}).get("status") == "finished"

    # -- metrics ----------------------------------------------------------------------------
    def append_metrics(self, row: dict) -> None:
        line = json.dumps(row, sort_keys=True, default=float)
        with open(self.metrics_path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict]:
        """Complete lines only: a torn last line from a crash is ignored."""
        if not self.metrics_path.exists():
            return []
        rows = []
        for line in self.metrics_path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break
        return rows

    def truncate_metrics(self, last_step: int) -> list[dict]:
        """Keep lines with step <= last_step (the checkpoint) so a resume never duplicates steps."""
        rows = [r for r in self.read_metrics() if int(r["step"]) <= last_step]
        atomic_write_text(self.metrics_path, "".join(json.dumps(r, sort_keys=True, default=float) + "\n" for r in rows))
        return rows

    # -- a starved run ------------------------------------------------------------------------
    def record_stop(self, reason: str, what: str) -> None:
        """stopped.json: the run ended because its allocator starved (`reason`, e.g. "round_bound";
        `what`: the error's one line). `step` is the last metrics line's, so a reader can tell the
        record from a stale one: once a resume logs another step (or rewinds), it no longer applies."""
        rows = self.read_metrics()
        atomic_write_json(self.path / STOPPED, {"status": "stopped", "reason": str(reason),
                                                "error": (what.strip().splitlines() or [""])[0],
                                                "step": int(rows[-1]["step"]) if rows else None})

    def write_summary(self, summary: Summary) -> None:
        atomic_write_json(self.path / "summary.json", asdict(summary))
