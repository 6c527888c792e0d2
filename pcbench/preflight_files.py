"""The preflight's checks of what a run reads and writes: data, model weights, reward, disk, memory.

Split from pcbench/preflight_checks.py (the machine's GPUs, versions and Slurm) to keep both short.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from pcbench.preflight_checks import CKPT_BYTES_PER_PARAM, Check, VERL_COLUMNS, cuda, is_verl, needs_gpu, no_cuda_text, \
    no_gpu_why

GB = 1e9


def data_files(cfg: DictConfig) -> list[str]:
    files = cfg.data.train_files, cfg.data.val_files
    return [str(f) for part in files for f in ([part] if isinstance(part, str) else part)]


def parquet_check(path: Path) -> Check:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path)
    except Exception as e:  # noqa: BLE001  (a truncated or foreign file)
        return Check(f"data {path.name}", "FAIL", f"{path}: not a readable parquet file ({type(e).__name__}); "
                                                  f"prepare it again (python -m pcbench.data.prepare)")
    missing = [c for c in VERL_COLUMNS if c not in meta.schema_arrow.names]
    rows = meta.metadata.num_rows
    if missing:
        return Check(f"data {path.name}", "FAIL", f"{path}: no column(s) {missing} of verl's schema; write it with "
                                                  f"python -m pcbench.data.prepare (docs/own-data.md)")
    if rows == 0:
        return Check(f"data {path.name}", "FAIL", f"{path}: no rows; prepare it again from a file with rows")
    return Check(f"data {path.name}", "ok", f"{path}: {rows} rows, verl's columns")


def own_source(cfg: DictConfig) -> list[Check]:
    """Your own data (conf/data/own.yaml): the source file as prepare will read it."""
    from pcbench.data.own import DataFileError, frames

    try:
        train, val, lines = frames(cfg.data)
    except DataFileError as e:
        return [Check("data source", "FAIL", str(e))]
    return [Check("data source", "ok", f"{lines[0]}; {len(train)} train / {len(val)} validation rows "
                                       f"(prepared into {cfg.data.root} on first use)")]


def data(cfg: DictConfig) -> list[Check]:
    if not is_verl(cfg):
        return [Check("data", "skip", "the embedded backend makes its task in memory")]
    from pcbench.data.files import MissingDataError, check_data_files
    from pcbench.data.specs import SPECS

    out = own_source(cfg) if cfg.data.get("source") else []
    for f in map(lambda p: Path(p).expanduser(), data_files(cfg)):
        if f.exists():
            out.append(parquet_check(f))
        elif cfg.data.get("make") or (f.stem in SPECS and SPECS[f.stem].generate is not None):
            out.append(Check(f"data {f.name}", "ok", f"{f}: made on first use ({cfg.data.get('make') or 'generated'})"))
        else:
            try:
                check_data_files([f])
            except MissingDataError as e:
                out.append(Check(f"data {f.name}", "FAIL", str(e)))
    return out


def weights_in(folder: Path) -> list[Path]:
    return [p for pat in ("*.safetensors", "*.bin", "*.pt", "*.gguf") for p in folder.glob(pat)]


def model(cfg: DictConfig) -> list[Check]:
    if not is_verl(cfg):
        return [Check("model", "skip", "the embedded backend builds its own model (model.warmstart)")]
    path = str(cfg.model.path)
    local = Path(path).expanduser()
    if local.is_dir():
        weights = weights_in(local)
        if not (local / "config.json").is_file() or not weights:
            return [Check("model", "FAIL", f"model.path={path}: no config.json and weight files there; download the "
                                           f"model into it (huggingface-cli download ID --local-dir {path})")]
        size = sum(p.stat().st_size for p in weights)
        return [Check("model", "ok", f"model.path={path}: config.json + {len(weights)} weight file(s), {size / GB:.2f} GB")]
    if cfg.model.get("make"):
        return [Check("model", "ok", f"model.path={path}: built on first use by model.make={cfg.model.make}")]
    if path.count("/") == 1 and not path.startswith(("/", ".", "~")):
        return [hub_model(path)]
    return [Check("model", "FAIL", f"model.path={path}: no such folder; set model.path=<a local model folder or a "
                                   f"Hugging Face id>")]


def hub_model(repo: str) -> Check:
    """A Hugging Face id: downloaded into this machine's cache? (compute nodes often have no internet)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return Check("model", "FAIL", f"model.path={repo}: huggingface_hub is not installed to fetch it")
    config = try_to_load_from_cache(repo, "config.json")
    if isinstance(config, str):
        weights = weights_in(Path(config).parent)
        if weights:
            return Check("model", "ok", f"model.path={repo}: in the Hugging Face cache ({Path(config).parent})")
    return Check("model", "FAIL", f"model.path={repo}: not in the Hugging Face cache here; download it first "
                                  f"(huggingface-cli download {repo} --local-dir DIR, then model.path=DIR): "
                                  f"compute nodes often have no internet")


def reward(cfg: DictConfig) -> list[Check]:
    if not is_verl(cfg):
        return [Check("reward", "skip", "the embedded backend scores with the built-in math reward")]
    from pcbench.reward import named, registry

    name = str(cfg.data.get("reward") or registry.BUILTIN)
    problem = registry.problem(name)
    if problem:
        return [Check("reward", "FAIL", f"data.reward={name}: {problem}")]
    error = named.try_once(name)
    if error:
        return [Check("reward", "FAIL", f"data.reward={name} ({registry.target(name)}) fails on a sample: {error}; "
                                        f"fix the function (docs/own-data.md)")]
    return [Check("reward", "ok", f"data.reward={name} ({registry.target(name)}) loads and scores a sample in the "
                                  f"process guard")]


def checkpoint_bytes(cfg: DictConfig) -> tuple[float, str] | None:
    """(bytes per checkpoint, how it was estimated), None when the model size is unknown."""
    if cfg.model.get("params_b") is not None:
        params = float(cfg.model.params_b) * 1e9
        return params * CKPT_BYTES_PER_PARAM, f"{cfg.model.params_b}B params x {CKPT_BYTES_PER_PARAM} B"
    local = Path(str(cfg.model.path)).expanduser()
    if local.is_dir() and weights_in(local):
        size = sum(p.stat().st_size for p in weights_in(local))
        return size / 2 * CKPT_BYTES_PER_PARAM, "weight files as bf16 params x 16 B"
    return None


def disk(cfg: DictConfig) -> list[Check]:
    where = Path(str(cfg.paths.results)).expanduser().resolve()
    while not where.exists():
        where = where.parent
    free = shutil.disk_usage(where).free
    if not is_verl(cfg):  # an embedded run folder: a few MB of checkpoints and metrics
        state = "ok" if free > 1 * GB else "FAIL"
        return [Check("disk", state, f"{free / GB:.1f} GB free under {where} (an embedded run writes a few MB)"
                                     + ("" if state == "ok" else "; free space or set paths.results=<another disk>"))]
    trainer = cfg.verl.trainer
    every, steps, keep = int(trainer.save_freq), int(cfg.train.steps), trainer.get("max_actor_ckpt_to_keep")
    count = steps // every if every > 0 else 0
    count = min(count, int(keep)) if keep else count
    size = checkpoint_bytes(cfg)
    if size is None or count == 0:
        return [Check("disk", "ok", f"{free / GB:.0f} GB free under {where}; "
                                    + ("no checkpoints (save_freq <= 0)" if count == 0 else "model size unknown"))]
    need = size[0] * count
    text = (f"{count} checkpoint(s) (train.steps={steps} / every {every}) of ~{size[0] / GB:.1f} GB "
            f"({size[1]}, an estimate) = ~{need / GB:.0f} GB; {free / GB:.0f} GB free under {where}")
    if need > free:
        return [Check("disk", "FAIL", f"{text}; keep fewer (verl.trainer.max_actor_ckpt_to_keep=2), save less often "
                                      f"(train.checkpoint_every) or set paths.results=<a bigger disk>")]
    return [Check("disk", "ok", text)]


def memory(cfg: DictConfig) -> list[Check]:
    if not needs_gpu(cfg):
        return [Check("rollout memory", "skip", no_gpu_why(cfg))]
    util = float(cfg.model.gpu_memory_utilization)
    c = cuda()
    if c is None:
        return [Check("rollout memory", "GPU", f"needs a GPU node: vLLM takes gpu_memory_utilization={util} of each "
                                               f"GPU; {no_cuda_text()}")]
    free, total = c.mem_get_info(0)
    declared = float(cfg.model.get("gpu_memory_gb", 80))
    if total / GB < 0.9 * declared:
        return [Check("rollout memory", "FAIL", f"the GPUs hold {total / GB:.0f} GB, model.gpu_memory_gb={declared:g} "
                                                f"assumes more; set model.gpu_memory_gb={total / GB:.0f}")]
    if util * total > free:
        return [Check("rollout memory", "FAIL", f"vLLM asks gpu_memory_utilization={util} x {total / GB:.0f} GB = "
                                                f"{util * total / GB:.0f} GB, only {free / GB:.0f} GB free on GPU 0 "
                                                f"(another process holds it); free the GPU or lower "
                                                f"model.gpu_memory_utilization")]
    from pcbench.backends.verl.config import check_gpu_capacity
    from pcbench.errors import ConfigError

    real = OmegaConf.merge(cfg.model, {"gpu_memory_gb": total / GB})
    try:
        check_gpu_capacity(real)
    except ConfigError as e:
        return [Check("rollout memory", "FAIL", str(e))]
    return [Check("rollout memory", "ok", f"gpu_memory_utilization={util} of {total / GB:.0f} GB per GPU "
                                          f"({free / GB:.0f} GB free) holds the model's weights")]
