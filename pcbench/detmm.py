"""Matrix products that round the same on every x86-64 CPU, for the embedded model.

Why: every fp32 matrix product of the embedded path went to MKL, and MKL picks its code path by
CPU vendor and model. Its reproducibility branches (MKL_CBWR) align CPUs of one vendor only:
measured 2026-12, the pinned fingerprint was 755e28e2e297 on AMD EPYCs and d6bb2a69a687 on an
Intel Xeon, and even MKL_CBWR=COMPATIBLE (the branch MKL documents for non-Intel CPUs) gave
609b6aaf8bdb on AMD against f37a8e5554fb on Intel. So the default warm start stopped 180 SFT steps
apart on the two vendors and every README number moved. pcbench/detgemm.c computes each element
as one fused multiply-add chain in a fixed order (see there), which any CPU with AVX2 + FMA rounds
alike, at about MKL's speed on these shapes (docs/numerics.md). ATen's own kernels (softmax,
RMSNorm, AdamW) stay pinned to AVX2 by pcbench/numerics.py.

`install(model)` routes a transformers model's nn.Linear layers and eager attention products
through it (same parameters, same state_dict); `available()` says whether this machine can, and
why not. The C source is compiled once per machine with the system's C compiler into a cache
folder (~/.cache/pcbench/kernels, or $PCBENCH_KERNEL_CACHE).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("detgemm.c")
FLAGS = ["-O2", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-fast-math", "-fopenmp", "-fPIC", "-shared"]


class DetMMUnavailable(RuntimeError):
    """This machine cannot build or run pcbench/detgemm.c; the message says what to do."""


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _cache_dir() -> Path:
    if os.environ.get("PCBENCH_KERNEL_CACHE"):
        return Path(os.environ["PCBENCH_KERNEL_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pcbench" / "kernels"


def _build(target: Path) -> None:
    cc = shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")
    if not cc:
        raise DetMMUnavailable("the embedded path's deterministic matmul needs a C compiler (none of $CC, cc, "
                               "gcc found): install one (apt-get install gcc), or set PCBENCH_NUMERICS=native to use "
                               "torch's (the numbers then depend on the CPU)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)  # parallel workers: build apart, rename atomically
    os.close(fd)
    done = subprocess.run([cc, *FLAGS, "-o", tmp, str(SOURCE)], capture_output=True, text=True)
    if done.returncode != 0:
        os.unlink(tmp)
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DetMMUnavailable(f"building pcbench/detgemm.c with {cc} failed ({last}); fix the compiler, "
                               "or set PCBENCH_NUMERICS=native to use torch's matmul (the numbers then depend on the CPU)")
    os.replace(tmp, target)


@lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    missing = {"avx2", "fma"} - _cpu_flags()
    if missing:
        raise DetMMUnavailable(f"this CPU lacks {', '.join(sorted(missing))}, which the embedded path's "
                               "deterministic matmul needs; set PCBENCH_NUMERICS=native to use torch's (the numbers "
                               "then depend on the CPU)")
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(FLAGS).encode()).hexdigest()[:16]
    target = _cache_dir() / f"detgemm-{digest}.so"
    if not target.exists():
        try:
            _build(target)
        except OSError:  # an unwritable cache folder: build into a private temporary one
            target = Path(tempfile.mkdtemp(prefix="pcbench-kernels-")) / target.name
            _build(target)
    # torch is imported (top of this module), so its libgomp.so.1 is loaded and the kernel's OpenMP
    # binds to that same runtime: torch's own threads, not a second pool
    lib = ctypes.CDLL(str(target))
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.pcbench_det_gemm.argtypes = [i64, i64, i64, i64, ptr, i64, i64, i64, ptr, i64, i64, ptr, i64, i64, ctypes.c_int]
    lib.pcbench_det_gemm.restype = None
    return lib


def available() -> str | None:
    """None when the deterministic matmul runs here, else the one-line reason."""
    try:
        _lib()
    except DetMMUnavailable as e:
        return str(e)
    return None


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a (batch, M, K) @ b (batch, K, N) -> (batch, M, N), fp32, no autograd. `a` may have any strides;
    `b` is copied only when its last dimension is not contiguous. Batches (or rows) are split over
    torch's thread count: an element's arithmetic does not depend on which thread computes it."""
    if a.dtype != torch.float32 or b.dtype != torch.float32 or a.device.type != "cpu":
        raise TypeError(f"detmm: fp32 CPU tensors only (got {a.dtype} on {a.device}, {b.dtype})")
    if b.stride(-1) != 1 and b.size(-1) > 1:
        b = b.contiguous()
    batch, M, K = a.shape
    N = b.size(-1)
    out = torch.empty(batch, M, N, dtype=torch.float32)
    _lib().pcbench_det_gemm(batch, M, N, K, a.data_ptr(), a.stride(0), a.stride(1), a.stride(2), b.data_ptr(),
                            b.stride(0), b.stride(1), out.data_ptr(), M * N, N, torch.get_num_threads())
    return out


def _matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Broadcasting a (..., M, K) @ b (..., K, N) -> (..., M, N) through bmm (no autograd)."""
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a3 = a.expand(*batch, *a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b3 = b.expand(*batch, *b.shape[-2:]).reshape(-1, *b.shape[-2:])
    return bmm(a3, b3).reshape(*batch, a.size(-2), b.size(-1))


def _unbroadcast(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a gradient over the batch dimensions its operand was broadcast along."""
    while grad.dim() > len(shape):
        grad = grad.sum(0)
    dims = [i for i, s in enumerate(shape[:-2]) if s == 1 and grad.size(i) != 1]
    return grad.sum(dims, keepdim=True) if dims else grad


class MatMul(torch.autograd.Function):
    """a (..., M, K) @ b (..., K, N); both gradients through the same deterministic kernel."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = _unbroadcast(_matmul(grad, b.transpose(-1, -2)), a.shape)
        if ctx.needs_input_grad[1]:
            gb = _unbroadcast(_matmul(a.transpose(-1, -2), grad), b.shape)
        return ga, gb


class Linear(torch.autograd.Function):
    """x (..., in) @ weight (out, in)^T + bias (out,) -> (..., out)."""

    @staticmethod
    def forward(ctx, x, weight, bias, weight_t=None):
        """weight_t: the weight's (in, out) contiguous copy when the caller keeps one (DetLinear does)."""
        x2 = x.reshape(-1, x.size(-1))  # (rows, in)
        ctx.save_for_backward(x2, weight)
        ctx.has_bias, ctx.shape = bias is not None, x.shape
        wt = weight.t() if weight_t is None else weight_t  # bmm copies a non-contiguous (in, out) view
        y = bmm(x2[None], wt[None])[0]  # (rows, out)
        if bias is not None:
            y += bias
        return y.reshape(*x.shape[:-1], weight.size(0))

    @staticmethod
    def backward(ctx, grad):
        x2, weight = ctx.saved_tensors
        g2 = grad.reshape(-1, grad.size(-1))  # (rows, out)
        gx = bmm(g2[None], weight[None])[0].reshape(ctx.shape) if ctx.needs_input_grad[0] else None
        gw = bmm(g2.t()[None], x2[None])[0] if ctx.needs_input_grad[1] else None  # (out, in), a chain over rows
        gb = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb, None


class DetLinear(torch.nn.Linear):
    """nn.Linear whose product is deterministic; the class swap keeps parameters, ties and state_dict."""

    def forward(self, x):
        return Linear.apply(x, self.weight, self.bias, self.weight_t())

    def weight_t(self) -> torch.Tensor:
        """The weight's (in, out) contiguous copy, which the kernel reads 16 columns at a time. Kept
        between calls and remade when the weight changes (an optimizer step or a load bumps its
        version counter): a decode step otherwise spends as long copying the weight as multiplying
        by it. The same floats either way; not a parameter, buffer or state_dict entry."""
        w = self.weight
        if w.is_inference():  # built under inference mode: no version counter to notice a change by
            return w.t()
        key = (w.data_ptr(), w._version)
        cached = self.__dict__.get("_weight_t")
        if cached is None or cached[0] != key:
            with torch.inference_mode(False), torch.no_grad():  # a plain tensor, usable outside inference mode
                cached = self.__dict__["_weight_t"] = (key, w.detach().t().contiguous())
        return cached[1]


def eager_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """transformers' eager attention for grouped keys (Qwen2) with both products deterministic.
    query (B, H, Tq, D), key / value (B, Hkv, Tk, D) -> (B, Tq, H, D), weights (B, H, Tq, Tk).

    The H / Hkv query heads of one key head are consecutive (transformers' repeat_kv), so they are
    taken as one (g * Tq)-row product against that head's keys instead of repeating the keys. When
    there are fewer query rows than keys (decoding: Tq = 1) the scores are computed transposed,
    keys @ queries^T, which copies the few queries rather than all cached keys; fma(k, q, c) is
    fma(q, k, c), so every score is the same float either way."""
    B, H, Tq, D = query.shape
    Hkv, Tk = key.size(1), key.size(2)
    q = query.reshape(B, Hkv, H // Hkv * Tq, D)  # (B, Hkv, g*Tq, D)
    if q.size(2) < Tk:
        scores = MatMul.apply(key, q.transpose(2, 3)).transpose(2, 3)  # (B, Hkv, g*Tq, Tk)
    else:
        scores = MatMul.apply(q, key.transpose(2, 3))
    weights = scores.reshape(B, H, Tq, Tk) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    out = MatMul.apply(weights.reshape(B, Hkv, H // Hkv * Tq, Tk), value)  # (B, Hkv, g*Tq, D)
    return out.reshape(B, H, Tq, D).transpose(1, 2).contiguous(), weights


ATTENTION = "pcbench_deterministic"


def install(model: torch.nn.Module) -> torch.nn.Module:
    """Route `model`'s linear layers and attention products through the deterministic kernel, in place.
    Raises DetMMUnavailable (one actionable line) before anything changes when this machine cannot."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    _lib()
    AttentionInterface.register(ATTENTION, eager_attention)
    AttentionMaskInterface.register(ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS["eager"])  # the same additive mask
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.__class__ = DetLinear
    model.config._attn_implementation = ATTENTION
    return model


def deterministic() -> bool:
    """Whether the embedded model's matrix products go through this module (not PCBENCH_NUMERICS=native)."""
    return os.environ.get("PCBENCH_NUMERICS", "pinned") != "native"


def install_unless_native(model: torch.nn.Module) -> torch.nn.Module:
    """install(model), except under PCBENCH_NUMERICS=native (torch's own products): the one place
    the embedded model, the numerics probe and a loaded export decide it."""
    return install(model) if deterministic() else model
