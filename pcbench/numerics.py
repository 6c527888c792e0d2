"""Pinned CPU arithmetic: the embedded path computes the same floats on any x86-64 CPU with AVX2 + FMA.

Why: torch picks its vectorised ATen kernels (softmax, RMSNorm, exp, the optimiser) by the CPU's
capability (DEFAULT, AVX2, AVX512) and MKL picks its SGEMM code path by CPU vendor and model; each
choice rounds differently. Measured on one machine (AMD EPYC with AVX-512, torch 2.13.0+cpu, MKL
2024.2, one thread): 40 SFT steps of the default model gave three different weight digests under
ATEN_CPU_CAPABILITY=avx512 / avx2 / default, and the default warm start (which stops at an abrupt
transition of the add33 tier) stopped 1,000 SFT steps apart between two CPUs. Pinning ATen to AVX2
costs nothing there. MKL's reproducibility branches (MKL_CBWR) align the CPUs of one vendor only:
an Intel Xeon and the AMD EPYCs differed under every branch, COMPATIBLE included (2026-12-06), so
the embedded model's matrix products no longer go to MKL at all but to pcbench/detmm.py, whose
fixed-order kernel any AVX2 + FMA CPU rounds alike, at about MKL's speed (docs/numerics.md).

`pin()` sets ATEN_CPU_CAPABILITY=avx2 (and MKL_CBWR=AVX2, for what else runs on MKL) before the
first torch operation (both are read lazily), unless the user set them or PCBENCH_NUMERICS=native,
which also keeps torch's own products. It runs when pcbench is imported. `describe()` says what
this process computes with; `fingerprint()` is a digest of one small
forward/backward/update/sampling pass through the embedded model, compared with the reference
machine's (`reference.json`) so that a machine whose arithmetic still differs says so in one line
instead of silently producing other numbers.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from functools import lru_cache
from pathlib import Path

PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
REFERENCE = Path(__file__).with_name("reference.json")


def pin(environ=os.environ) -> dict:
    """Set PINS in `environ` where not set already (PCBENCH_NUMERICS=native: leave all); -> what is set."""
    if environ.get("PCBENCH_NUMERICS", "pinned") == "native":
        return {}
    for key, value in PINS.items():
        environ.setdefault(key, value)
    return {k: environ[k] for k in PINS}


def _cpuinfo(field: str) -> str | None:
    """The first /proc/cpuinfo line's value for `field` ('model name', 'vendor_id'), or None."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(field):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def cpu_vendor() -> str:
    """GenuineIntel, AuthenticAMD, ... or 'unknown'."""
    return _cpuinfo("vendor_id") or "unknown"


def blas() -> str:
    """The BLAS torch was built with, e.g. 'MKL 2024.2' (torch.__config__.show()'s line)."""
    import torch

    for line in torch.__config__.show().splitlines():
        if "Math Kernel Library" in line:
            return "MKL " + line.split("Version", 1)[1].split("-", 1)[0].strip()
        if "BLAS_INFO" in line:
            return line.split("BLAS_INFO=", 1)[1].split(",", 1)[0]
    return "unknown"


def describe() -> dict:
    """Where this process's floats come from: CPU, ATen capability, BLAS, pins, threads, versions."""
    import torch

    from pcbench import detmm

    return {"cpu": cpu_model(), "capability": torch.backends.cpu.get_cpu_capability(), "blas": blas(),
            "mkl_cbwr": os.environ.get("MKL_CBWR", "unset"), "pinned": os.environ.get("PCBENCH_NUMERICS", "pinned"),
            "matmul": "pcbench detgemm" if detmm.deterministic() else "torch", "torch": torch.__version__,
            "threads": torch.get_num_threads(), "fingerprint": fingerprint()}


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """sha256[:12] of the logits, gradients, AdamW-updated weights and sampled tokens of one pass
    through a default-shaped embedded model (hidden 128, 2 layers, batch 8 x 24 tokens), one
    thread: equal on two machines iff their kernels round alike on the embedded path's ops."""
    import numpy as np
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = Qwen2ForCausalLM(Qwen2Config(
                vocab_size=24, hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True,
                attn_implementation="eager"))
        from pcbench import detmm  # lazily: torch must not load before pin()

        detmm.install_unless_native(model)
        ids = torch.from_numpy(np.random.default_rng(0).integers(0, 24, size=(8, 24)))  # (8, 24)
        logits = model(input_ids=ids).logits  # (8, 24, 24)
        loss = -torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).mean()
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1).step()
        probs = torch.softmax(logits[:, -1].detach() / 0.7, -1)  # (8, 24)
        draws = torch.multinomial(probs, 4, replacement=True, generator=torch.Generator().manual_seed(0))
        h = hashlib.sha256()
        for t in (logits.detach(), grads, *[p.detach() for p in model.parameters()], draws):
            h.update(t.contiguous().numpy().tobytes())
        return h.hexdigest()[:12]
    finally:
        torch.set_num_threads(threads)


def reference() -> dict:
    return json.loads(REFERENCE.read_text())


def known(fingerprint: str) -> dict | None:
    """The committed identity measured on a machine with this fingerprint: the reference itself, one
    of its `other_machines` (another CPU vendor: its own warm start and first GRPO steps), or None."""
    ref = reference()
    for entry in (ref, *ref.get("other_machines", [])):
        if entry["machine"]["fingerprint"] == fingerprint:
            return entry
    return None


def mismatch(desc: dict | None = None) -> str | None:
    """One line when this machine's arithmetic differs from the reference machine's, else None."""
    desc = desc or describe()
    ref = reference()["machine"]
    if desc["fingerprint"] == ref["fingerprint"]:
        return None
    same_libs = all(desc.get(k) == ref.get(k) for k in ("capability", "blas", "matmul", "torch"))
    # with the same ATen kernels and pcbench's own matrix products two CPUs should round alike
    # (docs/numerics.md); a difference left then is one nobody has measured yet
    why = ("; same pins and libraries: please report it with `python -m pcbench.backends.embedded.reference "
           "machine`'s output") if same_libs and desc["cpu"] != ref["cpu"] else ""
    other = known(desc["fingerprint"])
    if other is not None:  # a measured other vendor: say whose numbers these are
        why += (f"; it computes as the {other['machine']['cpu']} recorded in pcbench/reference.json "
                f"(warm start {other['warmstart']['digest']})")
    return (f"pcbench: numerics: this machine's arithmetic differs from the reference machine's (here "
            f"{desc['cpu']}, CPU capability {desc['capability']}, {desc.get('matmul')} matmul, {desc['blas']}, torch "
            f"{desc['torch']}; reference {ref['cpu']}, {ref['capability']}, {ref.get('matmul')} matmul, {ref['blas']}, "
            f"torch {ref['torch']}{why}): embedded numbers will differ from the committed ones (docs/numerics.md)")


BRANCHES = ("AVX2", "COMPATIBLE")   # the pin, and MKL's one branch documented for non-Intel CPUs too


def branch_fingerprints() -> dict:
    """{MKL_CBWR branch: fingerprint} under the pinned ATen capability, one process each (MKL
    reads MKL_CBWR once, at its first call)."""
    import subprocess
    import sys

    out = {}
    for branch in BRANCHES:
        env = {**os.environ, "MKL_CBWR": branch, "ATEN_CPU_CAPABILITY": PINS["ATEN_CPU_CAPABILITY"]}
        env.pop("PCBENCH_NUMERICS", None)
        done = subprocess.run([sys.executable, "-c", "from pcbench import numerics; print(numerics.fingerprint())"],
                              env=env, capture_output=True, text=True, timeout=300)
        out[branch] = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else f"failed: {done.stderr[-200:]}"
    return out
