"""model=embedded-verl data=embedded-verl: the embedded warm start and task on the verl path.

    python -m pcbench.run backend=verl model=embedded-verl data=embedded-verl method=pilot_commit
    python -m pcbench.backends.verl.from_embedded       # both ahead of time, into results/.cache/embedded-verl/
    python -m pcbench.backends.verl.from_embedded --out DIR model.hidden_size=64 model.num_heads=2 ...
    python -m pcbench.backends.verl.from_embedded --run results/embedded/RUN --out DIR   # a trained run's weights

The model is the embedded backend's warm start (pcbench/backends/embedded/warmstart.py: the same
cached checkpoint an embedded run of the same settings trains from, trained there first if
missing) exported as a Hugging Face folder (pcbench/backends/embedded/export.py); the data is
that run's task as verl parquet (pcbench/data/synthetic.py). Both are made on first use by the
entry (`make:` in conf/model/embedded-verl.yaml and conf/data/embedded-verl.yaml) from the
embedded config composed with `model.embedded` / `data.embedded` (lists of overrides, default
none: the embedded defaults). A folder made from other settings is never reused or overwritten:
the run stops with one line saying so.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import sys
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from pcbench.config import ConfigError

TASK_INFO = "pcbench_task.json"  # in the data folder: the task's identity


@contextmanager
def _own_hydra():
    """Compose inside a running Hydra app (the entry runs in one): park its global state, restore it."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    backup = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        yield
    finally:
        restore_gh_from_backup(backup)


def compose_embedded(overrides: list[str], cache: str | Path | None = None) -> DictConfig:
    """The embedded run config of `overrides` (conf/config.yaml's defaults: backend=embedded,
    model=tiny, data=synthetic), checked; paths.cache set to `cache` so the warm start is shared
    with embedded runs that use the same cache."""
    from hydra import compose, initialize_config_dir

    from pcbench.config import check_config, register_configs
    from pcbench.run import CONF_DIR

    overrides = [str(o) for o in overrides]
    if any(o.lstrip("+~").startswith("backend") for o in overrides):
        raise ConfigError(f"model.embedded / data.embedded {overrides}: the exported run is an embedded one; "
                          f"drop the backend override")
    register_configs()
    try:
        with _own_hydra(), initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            cfg = compose(config_name="config",
                          overrides=([f"paths.cache={cache}"] if cache is not None else []) + overrides)
        check_config(cfg)
    except Exception as e:  # Hydra's composition errors span lines; the rules' are one already
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"the embedded config of model.embedded / data.embedded {overrides}: {first}") from None
    return cfg


def list_override(key: str, overrides: list[str]) -> str:
    """`key=['a=1','b=2']`: a list of overrides as one Hydra command-line override (each quoted)."""
    quoted = ",".join("'" + str(o).replace("\\", "\\\\").replace("'", "\\'") + "'" for o in overrides)
    return f"{key}=[{quoted}]"


def _digest(blob) -> str:
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:12]


@contextmanager
def _locked(path: Path):
    """One builder per folder (parallel sweep jobs wait for the first one's export)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _refuse_other(path: Path, have: dict | None, want: str, what: str, key_name: str) -> bool:
    """True when `path` already holds `want`; ConfigError when it holds something else."""
    if not path.exists():
        return False
    if have is not None and have.get(key_name) == want:
        return True
    made = f"{key_name} {have.get(key_name)} from overrides {have.get('overrides')}" if have else "something else"
    raise ConfigError(f"{path} holds {made}, not the {what} of this config ({key_name} {want}); "
                      f"delete it to rebuild, or point the config at another folder")


def export_warm_start(ecfg: DictConfig, path: str | Path, overrides: list[str] = (), log=print) -> Path:
    """Train (or load the cached) warm start of embedded config `ecfg` and write it to `path` as
    a HF folder, after checking the HF tokenizer against every prompt and answer of the task."""
    from pcbench.backends.embedded.export import export_checkpoint
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import cache_key, load_or_train

    tok, task = CharTokenizer(), SyntheticTask.for_run(ecfg)
    model, report = load_or_train(ecfg, task, tok, log=log)
    info = {"warmstart": cache_key(ecfg), "overrides": list(overrides), "sft_steps": report.get("sft_steps"),
            "per_tier": report.get("per_tier"), "model": OmegaConf.to_container(ecfg.model, resolve=True)}
    return export_checkpoint(model, tok, path, info, check_texts=task_texts(task))


def export_run(run_dir: str | Path, path: str | Path) -> Path:
    """The weights of an embedded run folder's checkpoint (checkpoint/state.pt: its last saved step)
    as a HF folder at `path`, checked against every prompt and answer of that run's task. For verl:
    `model=embedded-verl model.path=PATH model.make=null` (nothing to build: the folder is given)."""
    import torch

    from pcbench.backends.embedded.checkpoint import STATE
    from pcbench.backends.embedded.export import export_checkpoint
    from pcbench.backends.embedded.model import build_model
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer

    run_dir, path = Path(run_dir), Path(path)
    state_file, cfg_file = run_dir / "checkpoint" / STATE, run_dir / "config.yaml"
    if not (state_file.exists() and cfg_file.exists()):
        raise ConfigError(f"{run_dir} holds no embedded checkpoint ({cfg_file.name} and checkpoint/{STATE}); "
                          f"give a run folder of backend=embedded that saved one (train.checkpoint_every)")
    cfg = OmegaConf.load(cfg_file)
    if cfg.backend.name != "embedded":
        raise ConfigError(f"{run_dir} is a backend={cfg.backend.name} run; only embedded runs are exported")
    if path.exists():
        raise ConfigError(f"{path} exists; give another --out or delete it")
    tok = CharTokenizer()
    model = build_model(cfg.model, tok, seed=int(cfg.model.init_seed))
    state = torch.load(state_file, weights_only=False)  # our own file (numpy arrays, dataclasses)
    model.load_state_dict(state["model"])
    info = {"run": str(run_dir.resolve()), "step": int(state["step"]),
            "model": OmegaConf.to_container(cfg.model, resolve=True)}
    return export_checkpoint(model, tok, path, info, check_texts=task_texts(SyntheticTask.for_run(cfg)))


def task_texts(task) -> list[str]:
    """Every prompt and every answer (as the model writes it, `\\boxed{..}`) of the task."""
    probs = task.train + task.val + task.sft + task.probe + [p for ps in task.ood.values() for p in ps]
    return [t for p in probs for t in (p.prompt, p.solution)]


def make_model(path: str | Path, cfg: DictConfig) -> Path:
    """`model.make` of conf/model/embedded-verl.yaml: the warm start of `model.embedded` at `path`."""
    from pcbench.backends.embedded.export import read_export_info
    from pcbench.backends.embedded.warmstart import cache_key

    path, overrides = Path(path), list(cfg.model.get("embedded") or [])
    ecfg = compose_embedded(overrides, cfg.paths.cache)
    with _locked(path):
        if _refuse_other(path, read_export_info(path), cache_key(ecfg), "embedded warm start", "warmstart"):
            return path
        print(f"pcbench: exporting the embedded warm start (overrides {overrides}) to {path}", flush=True)
        return export_warm_start(ecfg, path, overrides)


def task_identity(ecfg: DictConfig) -> str:
    """What the parquet rows depend on: the data config and the probe tier (it draws from the task's stream)."""
    ws = ecfg.model.get("warmstart") or {}
    return _digest({"data": OmegaConf.to_container(ecfg.data, resolve=True), "probe": ws.get("stop_tier"), "v": 1})


def write_task(ecfg: DictConfig, root: str | Path, overrides: list[str] = ()) -> list[Path]:
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.data.synthetic import task_frames, write_frames

    task = SyntheticTask.for_run(ecfg)
    paths = write_frames(task_frames(task, int(ecfg.data.val_samples)), root)
    info = {"task": task_identity(ecfg), "overrides": list(overrides), "train": len(task.train),
            "val": len(task.val), "val_samples": int(ecfg.data.val_samples)}
    (Path(root) / TASK_INFO).write_text(json.dumps(info, indent=1))
    return paths


def make_data(root: str | Path, cfg: DictConfig) -> Path:
    """`data.make` of conf/data/embedded-verl.yaml: the task of `data.embedded` as parquet in `root`."""
    root, overrides = Path(root), list(cfg.data.get("embedded") or [])
    ecfg = compose_embedded(overrides, cfg.paths.cache)
    info_file = root / TASK_INFO
    with _locked(root):
        have = json.loads(info_file.read_text()) if info_file.exists() else None
        if root.exists() and not any(root.iterdir()):
            root.rmdir()  # an empty folder holds nothing to protect
        if _refuse_other(root, have, task_identity(ecfg), "embedded task", "task"):
            return root
        print(f"pcbench: writing the embedded task (overrides {overrides}) as verl parquet to {root}", flush=True)
        write_task(ecfg, root, overrides)
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pcbench.backends.verl.from_embedded",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/.cache/embedded-verl", help="folder for model/ and data/")
    ap.add_argument("--cache", default="results/.cache", help="paths.cache of the embedded warm start")
    ap.add_argument("--run", help="export this embedded run folder's checkpoint to OUT/model instead")
    ap.add_argument("overrides", nargs="*", help="embedded config overrides (model.* / data.*)")
    args = ap.parse_args(argv)
    if args.run:
        if args.overrides:
            ap.error("--run exports that run's own model; drop the overrides")
        try:
            print(f"model: {export_run(args.run, Path(args.out) / 'model')} (pass model.path=that model.make=null)")
        except ConfigError as e:
            print(f"pcbench: {e}", file=sys.stderr)
            return 2
        return 0
    cfg = OmegaConf.create({"paths": {"cache": args.cache}, "model": {"embedded": args.overrides},
                            "data": {"embedded": args.overrides}})
    try:
        print(f"model: {make_model(Path(args.out) / 'model', cfg)}")
        print(f"data: {make_data(Path(args.out) / 'data', cfg)}")
    except ConfigError as e:
        print(f"pcbench: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
