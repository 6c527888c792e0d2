"""The checks of `python -m pcbench.preflight` (pcbench/preflight.py), one function each: the
machine's GPUs, versions, NCCL and Slurm here; what the run reads and writes in preflight_files.py.

Each takes the composed config and returns Check lines: ok, FAIL with the fix, GPU (needs a GPU
node; said plainly on a CPU machine instead of guessing) or skip (does not apply to this run).
Nothing here starts Ray, vLLM or a job; Slurm is asked through sinfo / sacctmgr only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from omegaconf import DictConfig

# The versions the verl path targets on a GPU node: verl 0.9.1's own `vllm` / `fsdp` extras
# (its package metadata: vllm==0.24.0, torch==2.11.0, flash-attn==2.8.3); pyproject's [gpu] extra.
TARGETS = {"verl": "0.9.1", "vllm": "0.24.0", "torch": "2.11.0", "flash-attn": "2.8.3"}
MARK = {"ok": "ok  ", "FAIL": "FAIL", "GPU": "GPU ", "skip": "skip"}


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # ok | FAIL | GPU (needs a GPU node) | skip
    text: str

    def line(self) -> str:
        return f"{MARK[self.state]}  {self.name}: {self.text}"


VERL_COLUMNS = ("data_source", "prompt", "ability", "reward_model", "extra_info")  # pcbench.data.prepare writes these
CKPT_BYTES_PER_PARAM = 16  # an estimate: verl's FSDP checkpoint holds weights + fp32 Adam moments + master copy


def is_verl(cfg: DictConfig) -> bool:
    return str(cfg.backend.name) == "verl"


def platform(cfg: DictConfig) -> str:
    """cpu | gpu for a verl run (backend.platform, auto: gpu unless 1 x 1 on a machine without CUDA)."""
    from pcbench.backends.verl.platform import resolve

    return resolve(cfg)


def needs_gpu(cfg: DictConfig) -> bool:
    return is_verl(cfg) and platform(cfg) == "gpu"


def no_gpu_why(cfg: DictConfig) -> str:
    return "the embedded backend runs on CPU" if not is_verl(cfg) else "backend.platform resolves to cpu here"


def cuda():
    """torch.cuda when torch sees a CUDA device, else None."""
    import torch

    return torch.cuda if torch.cuda.is_available() else None


def no_cuda_text() -> str:
    import torch

    return f"torch {torch.__version__} sees no CUDA device here (CUDA build: {torch.version.cuda or 'none, a CPU build'})"


def gpus(cfg: DictConfig) -> list[Check]:
    if not needs_gpu(cfg):
        return [Check("gpus", "skip", no_gpu_why(cfg))]
    want, nodes = int(cfg.model.n_gpus_per_node), int(cfg.model.nnodes)
    c = cuda()
    if c is None:
        return [Check("gpus", "GPU", f"needs a GPU node: {no_cuda_text()}; the run wants {nodes} node(s) x {want} GPUs")]
    import torch

    n, name = c.device_count(), c.get_device_name(0)
    if n < want:
        return [Check("gpus", "FAIL", f"torch sees {n} x {name}, the run wants {want} per node; run on a node with "
                                      f"{want} GPUs (Slurm: gpus_per_node) or set model.n_gpus_per_node={n}")]
    return [Check("gpus", "ok", f"{n} x {name}, CUDA {torch.version.cuda} (torch {torch.__version__}); the run "
                                f"uses {want} per node on {nodes} node(s)")]


def installed(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions(cfg: DictConfig) -> list[Check]:
    if not is_verl(cfg):
        return [Check("versions", "skip", "the embedded backend needs neither verl nor vLLM")]
    if platform(cfg) == "cpu":
        from pcbench.backends.verl.cpu_vllm import WRITTEN_FOR, VersionMismatch, check_versions

        try:
            check_versions({d: installed(d) for d in WRITTEN_FOR})
        except VersionMismatch as e:
            return [Check("versions", "FAIL", str(e))]
        return [Check("versions", "ok", " + ".join(f"{d} {v}" for d, v in WRITTEN_FOR.items())
                      + " (the CPU platform's versions)")]
    found = {d: installed(d) for d in TARGETS}
    bad = [d for d, v in found.items() if v is None or v.split("+")[0] != TARGETS[d]]
    have = ", ".join(f"{d} {found[d] or 'not installed'}" for d in TARGETS)
    if bad:
        return [Check("versions", "FAIL", f"the verl path targets {' + '.join(f'{d}=={v}' for d, v in TARGETS.items())}, "
                                          f"found {have}; pip install -e '.[gpu]' then pip install flash-attn==2.8.3 "
                                          f"--no-build-isolation (docs/gpu.md)")]
    return [Check("versions", "ok", have)]


def nccl(cfg: DictConfig) -> list[Check]:
    if not needs_gpu(cfg):
        return [Check("nccl", "skip", no_gpu_why(cfg) + " (gloo)")]
    import torch

    c = cuda()
    if c is None:
        return [Check("nccl", "GPU", f"needs a GPU node: NCCL talks to CUDA devices; {no_cuda_text()}")]
    if not torch.distributed.is_nccl_available():
        return [Check("nccl", "FAIL", f"torch {torch.__version__} was built without NCCL; install torch=="
                                      f"{TARGETS['torch']} (a CUDA build) with pip install -e '.[gpu]'")]
    version = ".".join(map(str, torch.cuda.nccl.version()))
    return [Check("nccl", "ok", f"NCCL {version} with {c.device_count()} visible GPU(s)")]


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, f"{type(e).__name__}: {e}"
    return done.returncode, (done.stdout or done.stderr).strip()


def _gres_gpus(gres: str) -> int:
    """GPUs per node in sinfo's %G ("gpu:8", "gpu:h100:8(S:0-1)", "(null)")."""
    found = re.findall(r"gpu(?::[\w.-]+)?:(\d+)", gres)
    return max(map(int, found)) if found else 0


def slurm(cfg: DictConfig) -> list[Check]:
    launcher = cfg.get("hydra", {}).get("launcher") if "hydra" in cfg else None
    target = str(launcher.get("_target_", "")) if launcher is not None else ""
    if "Slurm" not in target:
        return [Check("slurm", "skip", f"launched on this machine ({target.rsplit('.', 1)[-1] or 'no launcher'}); "
                                       f"-m with hydra/launcher=slurm_verl submits to Slurm")]
    if shutil.which("sinfo") is None:
        return [Check("slurm", "FAIL", "sinfo is not on PATH: this is not a Slurm login node; run the preflight there")]
    part = launcher.get("partition")
    if not part:
        return [Check("slurm", "FAIL", "no partition set; export PCBENCH_SLURM_PARTITION=<partition> (sinfo -s lists "
                                       "them) or hydra.launcher.partition=<partition>")]
    rc, out = _run(["sinfo", "-h", "-p", str(part), "-o", "%P %D %G"])
    if rc != 0 or not out:
        return [Check("slurm", "FAIL", f"partition {part!r} not found by sinfo ({out or 'no output'}); sinfo -s lists "
                                       f"them: set PCBENCH_SLURM_PARTITION")]
    want = int(launcher.get("gpus_per_node") or 0)
    have = max(_gres_gpus(line) for line in out.splitlines())
    nodes = sum(int(line.split()[1]) for line in out.splitlines() if len(line.split()) > 1 and line.split()[1].isdigit())
    if want > have:
        return [Check("slurm", "FAIL", f"partition {part!r} nodes have {have} GPUs (gres), the job asks {want} per "
                                       f"node; pick a GPU partition (PCBENCH_SLURM_PARTITION) or set "
                                       f"model.n_gpus_per_node={have}")]
    if int(launcher.get("nodes") or 1) > nodes > 0:
        return [Check("slurm", "FAIL", f"partition {part!r} has {nodes} nodes, the job asks {launcher.nodes}; "
                                       f"lower model.nnodes or pick another partition")]
    return [Check("slurm", "ok", f"partition {part!r}: {nodes} node(s) with {have} GPUs each")] + _association(launcher)


def _association(launcher) -> list[Check]:
    """account and QOS against the user's Slurm associations (sacctmgr), when set."""
    account, qos = launcher.get("account"), launcher.get("qos")
    if not account and not qos:
        return [Check("slurm account", "ok", "none set (the site default); PCBENCH_SLURM_ACCOUNT / _QOS set them")]
    if shutil.which("sacctmgr") is None:
        return [Check("slurm account", "ok", f"account={account} qos={qos} not verified (no sacctmgr here)")]
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or ""
    rc, out = _run(["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", "format=account,qos"])
    if rc != 0:
        return [Check("slurm account", "FAIL", f"sacctmgr failed ({out}); is slurmdbd reachable?")]
    rows = [line.split("|") for line in out.splitlines() if "|" in line]
    accounts = {r[0] for r in rows}
    if account and account not in accounts:
        return [Check("slurm account", "FAIL", f"user {user} has no association with account {account!r} (has: "
                                               f"{', '.join(sorted(accounts)) or 'none'}); set PCBENCH_SLURM_ACCOUNT")]
    allowed = {q for r in rows if not account or r[0] == account for q in r[1].split(",") if q}
    if qos and qos not in allowed:
        return [Check("slurm account", "FAIL", f"QOS {qos!r} is not allowed for account {account} (allowed: "
                                               f"{', '.join(sorted(allowed)) or 'none'}); set PCBENCH_SLURM_QOS")]
    return [Check("slurm account", "ok", f"account={account} qos={qos} associated with user {user}")]
