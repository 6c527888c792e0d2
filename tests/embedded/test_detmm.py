"""The embedded model's deterministic matrix products (pcbench/detmm.py, pcbench/detgemm.c).

What a user relies on: the products are right (against float64), an element's floats do not depend
on the shape around it, the thread count or MKL's code path (MKL's path is what differed between an
Intel and an AMD CPU), the model keeps its parameters and checkpoints, and a machine that cannot
build the kernel is told so in one line before any work.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pcbench import detmm

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(detmm.available() is not None, reason=str(detmm.available()))

SHAPES = [(1, 1, 1, 1), (1, 7, 5, 3), (2, 13, 29, 17), (3, 6, 16, 128), (1, 100, 24, 300), (4, 20, 20, 32),
          (1, 5, 8, 600), (1, 12, 33, 0)]  # (batch, M, N, K): tails of the 6-row / 16-, 8-column tiles, K blocks


@pytest.mark.parametrize("batch,M,N,K", SHAPES)
def test_products_match_float64(batch, M, N, K):
    g = torch.Generator().manual_seed(M * 1000 + N)
    a, b = torch.randn(batch, M, K, generator=g), torch.randn(batch, K, N, generator=g)
    got = detmm.bmm(a, b)
    want = (a.double() @ b.double()).float()
    assert got.shape == (batch, M, N)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5 * max(1, K) ** 0.5)


def test_strided_operands_agree_with_their_contiguous_copies():
    a, b, w = torch.randn(40, 70), torch.randn(40, 50), torch.randn(30, 50)
    # a.t() (70, 40) has strides (1, 70) and is read in place; w.t() (50, 30) is copied
    assert torch.equal(detmm.bmm(a.t()[None], b[None]), detmm.bmm(a.t().contiguous()[None], b[None]))
    assert torch.equal(detmm.bmm(b[None], w.t()[None]), detmm.bmm(b[None], w.t().contiguous()[None]))
    torch.testing.assert_close(detmm.bmm(a.t()[None], b[None])[0], a.t() @ b, rtol=1e-5, atol=1e-4)


def test_a_row_does_not_depend_on_the_rows_around_it_nor_on_threads():
    """MKL's AVX2 branch on an Intel Xeon gave a row of a 2-row product other floats than the same
    row of a 48-row one (~6e-6); here every row is its own fixed chain."""
    a, b = torch.randn(97, 300), torch.randn(300, 40)
    full = detmm.bmm(a[None], b[None])[0]
    for rows in (slice(0, 1), slice(5, 7), slice(13, 61), slice(96, 97)):
        assert torch.equal(detmm.bmm(a[rows][None], b[None])[0], full[rows])
    threads = torch.get_num_threads()
    try:
        big = torch.randn(2000, 300)
        torch.set_num_threads(1)
        one = detmm.bmm(big[None], b[None])
        torch.set_num_threads(3)
        assert torch.equal(detmm.bmm(big[None], b[None]), one)
        assert torch.equal(detmm.bmm(big.view(4, 500, 300), b.expand(4, 300, 40)), one.view(4, 500, 40))
    finally:
        torch.set_num_threads(threads)


def test_linear_and_matmul_gradients_match_torch():
    x = torch.randn(3, 11, 20, requires_grad=True)
    w, bias = torch.randn(9, 20, requires_grad=True), torch.randn(9, requires_grad=True)
    q, k = torch.randn(2, 4, 7, 8, requires_grad=True), torch.randn(2, 1, 8, 7, requires_grad=True)  # k broadcast
    outs = [detmm.Linear.apply(x, w, bias), torch.nn.functional.linear(x, w, bias),
            detmm.MatMul.apply(q, k), q @ k]
    grads = [torch.autograd.grad(o.square().sum(), ins) for o, ins in zip(outs, [(x, w, bias)] * 2 + [(q, k)] * 2)]
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[2], outs[3], rtol=1e-5, atol=1e-5)
    for mine, theirs in ((grads[0], grads[1]), (grads[2], grads[3])):
        for g1, g2 in zip(mine, theirs):
            assert g1.shape == g2.shape
            torch.testing.assert_close(g1, g2, rtol=1e-4, atol=1e-4)


def test_install_keeps_parameters_ties_and_outputs():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=24, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                         attn_implementation="eager")
    plain = Qwen2ForCausalLM(config)
    det = Qwen2ForCausalLM(config)
    det.load_state_dict(plain.state_dict())
    detmm.install(det)
    assert det.lm_head.weight is det.model.embed_tokens.weight  # the tie survives the class swap
    assert isinstance(det.lm_head, detmm.DetLinear) and list(det.state_dict()) == list(plain.state_dict())
    ids = torch.randint(0, 24, (5, 12))
    mask = torch.ones(5, 12, dtype=torch.long)
    mask[0, :4] = 0  # left padding goes through the same additive mask
    torch.testing.assert_close(det(input_ids=ids, attention_mask=mask).logits,
                               plain(input_ids=ids, attention_mask=mask).logits, rtol=1e-5, atol=1e-5)


def test_a_linear_layer_sees_every_change_of_its_weight():
    """DetLinear keeps its weight's transposed copy between calls: an optimizer step, a load and an
    in-place edit must each be seen by the next call (and inference mode must not break it)."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 24)
    lin.__class__ = detmm.DetLinear  # what install() does to each of the model's layers
    x = torch.randn(5, 16)

    def fresh():
        return x @ lin.weight.detach().t() + lin.bias.detach()

    torch.testing.assert_close(lin(x), fresh())
    opt = torch.optim.AdamW(lin.parameters(), lr=0.1)
    lin(x).square().sum().backward()
    opt.step()
    torch.testing.assert_close(lin(x), fresh())
    lin.load_state_dict({"weight": torch.randn(24, 16), "bias": torch.zeros(24)})
    with torch.inference_mode():
        torch.testing.assert_close(lin(x), fresh())
    with torch.no_grad():
        lin.weight.mul_(-2)
    torch.testing.assert_close(lin(x), fresh())


FINGERPRINT = "from pcbench import numerics; print(numerics.fingerprint())"


def fingerprint(env: dict) -> str:
    keep = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "PCBENCH_NUMERICS")}
    done = subprocess.run([sys.executable, "-c", FINGERPRINT], env={**keep, **env}, cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_probe_tells_mkls_branches_apart_when_torch_computes_the_products():
    """MKL_CBWR=COMPATIBLE gave other floats on AMD and Intel (609b6aaf8bdb, f37a8e5554fb). With torch's
    products (PCBENCH_NUMERICS=native) its branches change the fingerprint here, so the check that
    they do not change the pinned one (test_numerics.py, `reference machine`) can fail."""
    native = {"PCBENCH_NUMERICS": "native", "ATEN_CPU_CAPABILITY": "avx2"}
    assert fingerprint({**native, "MKL_CBWR": "COMPATIBLE"}) != fingerprint({**native, "MKL_CBWR": "AVX2"})


def test_no_compiler_is_one_line_before_any_work(tmp_path):
    code = ("from pcbench import detmm; from pcbench.config import compose_cfg\n"
            "from pcbench.config import check_config, ConfigError\n"
            "try:\n    check_config(compose_cfg([]))\nexcept ConfigError as e:\n    print('ERR', e)\n")
    env = {**os.environ, "CC": str(tmp_path / "no-such-cc"), "PATH": str(tmp_path), "PCBENCH_KERNEL_CACHE": str(tmp_path / "k")}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("ERR ") and "C compiler" in line, done.stdout + done.stderr[-2000:]
    assert "PCBENCH_NUMERICS=native" in line
    assert not (tmp_path / "k").exists() or not list((tmp_path / "k").glob("*.so"))
