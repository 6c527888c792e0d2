"""Each prompt runs once per step: the sampler's shared prefill gives the rows the numbers a
per-row prefill gives (exactly: the embedded model computes every row on its own), and the update's
shared-prompt log-probs are the padded batch's log-probs (to rounding) with the same gradient
(to rounding)."""

import random

import numpy as np
import pytest

import torch
from omegaconf import OmegaConf
from transformers import DynamicCache

from pcbench import detmm
from pcbench.backends.embedded import forward, policy, prefix
from pcbench.backends.embedded.forward import KVBuffer
from pcbench.backends.embedded.model import build_model
from pcbench.backends.embedded.sampler import _prefill, left_pad, unique_rows
from pcbench.backends.embedded.tokenizer import CharTokenizer

MODEL = OmegaConf.create(dict(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4, num_kv_heads=2,
                              max_position=64, init_seed=0))


def _model():
    tok = CharTokenizer()
    model = build_model(MODEL, tok, seed=0).eval()
    with torch.no_grad():  # sharper distributions than the init's: differences would show
        for p in model.parameters():
            p.mul_(3)
    return tok, model


def _groups(tok, n_prompts=6, n=8, seed=0):
    """n rows per prompt, prompts of different lengths (left padding), shuffled rows, and
    responses of different lengths ending in EOS (right padding)."""
    rng = random.Random(seed)
    uniq = [[tok.bos_id] + [rng.randrange(3, tok.vocab_size) for _ in range(rng.randrange(3, 11))]
            for _ in range(n_prompts)]
    prompts = [u for u in uniq for _ in range(n)]
    rng.shuffle(prompts)
    responses = [[rng.randrange(3, tok.vocab_size) for _ in range(rng.randrange(0, 9))] + [tok.eos_id]
                 for _ in prompts]
    return prompts, responses


def test_unique_rows_keeps_first_seen_order():
    uniq, row = unique_rows([[1, 5], [1, 6, 7], [1, 5], [1, 6, 7], [1, 9]])
    assert uniq == [[1, 5], [1, 6, 7], [1, 9]] and row.tolist() == [0, 1, 0, 1, 2]


def rows_are_independent() -> bool:
    """Whether a row of a product gets the same floats whatever the number of rows beside it. The
    embedded model's own products do (pcbench/detmm.py); with torch's (PCBENCH_NUMERICS=native) MKL's
    path on AMD CPUs does and its AVX2 branch on Intel CPUs does not (rows of a 2- or 7-row product
    differ from the same rows of a 48-row one by ~6e-6, docs/numerics.md)."""
    if detmm.deterministic():
        return True
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(48, 64, generator=gen), torch.randn(64, 128, generator=gen)
    return all(torch.equal(x[:m] @ w, (x @ w)[:m]) for m in range(1, 48))


@torch.inference_mode()
def test_shared_prefill_gives_the_rows_a_per_row_prefills_numbers():
    """What keeps sampled rollouts (and the warm start's probe) the same numbers as before the
    shared-prompt engine: bit for bit with the embedded model's own products, to rounding where a
    row's floats depend on the product's row count (torch's products on an Intel CPU's MKL)."""
    tok, model = _model()
    prompts, _ = _groups(tok)
    ids, mask = left_pad(prompts, tok.pad_id)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache()
    want = model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True).logits[:, -1]
    got_cache, got, full_mask, next_pos, L = _prefill(model, prompts, tok.pad_id, max_new_tokens=4)
    same = torch.equal if rows_are_independent() else \
        (lambda a, b: torch.allclose(a, b, rtol=1e-5, atol=1e-5))
    assert same(got, want), (got - want).abs().max()
    got_kv = [(K[:, :, :L], V[:, :, :L]) for K, V in got_cache.kv] if isinstance(got_cache, KVBuffer) else \
        [(layer.keys, layer.values) for layer in got_cache.layers]
    assert len(got_kv) == len(cache.layers)
    for a, (k, v) in zip(cache.layers, got_kv):
        assert same(a.keys, k) and same(a.values, v)
    assert torch.equal(full_mask[:, :L], mask) and bool((full_mask[:, L:] == 1).all())
    assert torch.equal(next_pos, pos[:, -1] + 1)


def test_shared_prompt_log_probs_and_gradient_match_the_padded_batch():
    tok, model = _model()
    prompts, responses = _groups(tok)
    padded = policy.build_token_batch(prompts, responses, tok.pad_id)
    shared = prefix.build_shared_batch(prompts, responses, tok.pad_id)
    assert shared.prompt_ids.shape[0] == 6 and torch.equal(shared.resp_mask, padded.resp_mask)
    with torch.no_grad():
        want, got = padded.log_probs(model), shared.log_probs(model)
    assert want.shape == got.shape
    assert torch.allclose(got, want, rtol=0, atol=1e-5), (got - want).abs().max()
    assert bool((got[shared.resp_mask == 0] == 0).all())

    idx = torch.tensor([i for i, p in enumerate(prompts) if p in (prompts[0], prompts[1])])  # a mini-batch of groups
    grads = []
    for batch in (padded.rows(idx), shared.rows(idx)):
        model.zero_grad(set_to_none=True)
        batch.log_probs(model).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert shared.rows(idx).prompt_ids.shape[0] == len({tuple(prompts[i]) for i in idx.tolist()})
    assert float((grads[0] - grads[1]).norm() / grads[0].norm()) < 1e-5


def test_shared_prompt_log_probs_of_one_token_responses():
    """Responses that are EOS alone: only the prompt pass's last position predicts them."""
    tok, model = _model()
    prompts = [[tok.bos_id, 5, 6], [tok.bos_id, 7, 8, 9]] * 3
    responses = [[tok.eos_id]] * 6
    with torch.no_grad():
        want = policy.build_token_batch(prompts, responses, tok.pad_id).log_probs(model)
        got = prefix.build_shared_batch(prompts, responses, tok.pad_id).log_probs(model)
    assert got.shape == (6, 1) and torch.allclose(got, want, rtol=0, atol=1e-5)
    # the same rows as a subset of a batch with longer responses (a mini-batch's flat rows): the
    # layout keeps the batch's T, yet no response token has a next one to predict
    longer = prefix.build_shared_batch(prompts + prompts[:1], responses + [[5, 6, tok.eos_id]], tok.pad_id)
    with torch.no_grad():
        sub = longer.rows(torch.arange(6)).log_probs(model)
    assert sub.shape == (6, 3) and torch.equal(sub[:, 0], got[:, 0]) and not sub[:, 1:].any()


def test_exact_evaluation_by_length_is_the_padded_evaluation_in_the_same_order():
    """evaluate() runs the exact pass rates in batches of one (prompt, response) length: no padding,
    the same probabilities (to rounding), each at its problem's index."""
    from pcbench.backends.embedded.evaluate import exact_pass_rates
    from pcbench.backends.embedded.task import Problem

    tok, model = _model()
    rng = random.Random(1)
    probs = []
    for pid in range(40):
        a, b = rng.randrange(1, 10 ** rng.randrange(1, 4)), rng.randrange(1, 10 ** rng.randrange(1, 4))
        probs.append(Problem(pid, f"{a}+{b}=", str(a + b)[::-1], "mixed"))
    padded = exact_pass_rates(model, tok, probs, 1.0, 1.0)  # top_p 1: no gold token cut, every rate > 0
    by_length = exact_pass_rates(model, tok, probs, 1.0, 1.0, by_length=True, chunk=7)
    assert len({(len(p.prompt), len(p.solution)) for p in probs}) > 3  # several batches, some chunked
    assert padded.min() > 0 and np.allclose(by_length, padded, rtol=1e-4, atol=0)


@torch.inference_mode()
def test_last_logits_are_the_full_forwards_floats_at_the_last_positions():
    """The exact evaluation's forward (forward.last_logits: the final layer on the predicting positions
    only, the input without its last token) gives the full forward's logits bit for bit, with left
    padding and without; a wrong query position, angle or mask row shows as a difference."""
    if not rows_are_independent():
        pytest.skip("this machine's products round by row count (PCBENCH_NUMERICS=native): evaluate() keeps the full forward")
    tok, model = _model()
    prompts, responses = _groups(tok, n_prompts=9, n=3, seed=2)
    b = policy.build_token_batch(prompts, responses, tok.pad_id)  # (N, Lp + T), left- and right-padded
    T = b.resp_mask.shape[1]
    full = model(input_ids=b.ids, attention_mask=b.attn, position_ids=b.pos).logits  # (N, L, V)
    assert torch.equal(forward.last_logits(model, b.ids[:, :-1], b.attn[:, :-1], b.pos[:, :-1], T), full[:, -T - 1:-1])
    same = [i for i, p in enumerate(prompts) if len(p) == len(prompts[0])]  # one prompt length: no padding
    u = b.rows(torch.tensor(same))
    assert torch.equal(forward.last_logits(model, u.ids, u.attn, u.pos, 3), full[same, -3:])
    wrong = forward.last_logits(model, b.ids[:, 1:], b.attn[:, 1:], b.pos[:, 1:], T)  # shifted by one position
    assert not torch.equal(wrong, full[:, -T - 1:-1])


def _update_case():
    """A model and a shared batch of 6 groups of 8 -> (model, batch, group (N,), mixed scores (N,), 3 mini-batches)."""
    tok, model = _model()
    prompts, responses = _groups(tok)
    batch = prefix.build_shared_batch(prompts, responses, tok.pad_id)
    group_of = {tuple(p): g for g, p in enumerate(dict.fromkeys(map(tuple, prompts)))}
    group = np.array([group_of[tuple(p)] for p in prompts])  # (N,) 6 groups of 8
    mixed = torch.tensor([1.0 if (i * 7) % 3 else -1.0 for i in range(len(prompts))])
    mbs = [np.flatnonzero((group >= s) & (group < s + 2)) for s in range(0, 6, 2)]
    return model, batch, group, mixed, mbs


def _train(model, batch, scores, group, mbs, skip_flat=True):
    """One ppo_update on a copy of model -> (metrics, the trained weights flattened)."""
    import copy

    cfg = OmegaConf.create(dict(clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0, loss_agg_mode="token-mean",
                                grad_clip=1.0))
    m = copy.deepcopy(model).train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    metrics = policy.ppo_update(m, opt, sched, batch, scores, group, mbs, cfg, rollout_n=8, skip_flat=skip_flat)
    return metrics, torch.cat([p.detach().flatten() for p in m.parameters()])


def test_the_update_takes_the_first_mini_batchs_old_log_probs_from_its_own_forward(monkeypatch):
    """ppo_update skips the first mini-batch's rows in its old-policy pass and reads them off that
    mini-batch's own forward (which runs before any optimizer step): the same metrics and weights,
    bit for bit, as the full old pass (what the update did before, and still does under torch's products)."""
    model, batch, group, scores, mbs = _update_case()
    results = []
    for reuse in (True, False):
        monkeypatch.setattr(detmm, "deterministic", lambda reuse=reuse: reuse)
        results.append(_train(model, batch, scores, group, mbs))
    (got, w_got), (want, w_want) = results
    assert got == want and torch.equal(w_got, w_want)
    assert float((w_got - torch.cat([p.detach().flatten() for p in model.parameters()])).abs().max()) > 0  # it trained


def test_flat_groups_skip_their_backward_and_train_the_same():
    """Rows whose advantage is 0 everywhere (a group scored alike) get no backward: a mini-batch of only
    such groups still takes its (zero-gradient) AdamW step, bit for bit; flat rows beside live ones change
    the gradient's float sums only (to rounding), and their ratio still enters train/ppo_kl."""
    if not rows_are_independent():
        pytest.skip("this machine's products round by row count (PCBENCH_NUMERICS=native)")
    model, batch, group, mixed, mbs = _update_case()
    # groups 0 and 1 (the first mini-batch) all correct: its loss has zero gradient
    scores = torch.where(torch.as_tensor(group < 2), torch.ones(len(mixed)), mixed)
    (got, w_got), (want, w_want) = (_train(model, batch, scores, group, mbs, skip) for skip in (True, False))
    assert got == want and torch.equal(w_got, w_want)
    # group 2 flat too, beside live group 3 in the second mini-batch: the same update to rounding
    scores = torch.where(torch.as_tensor(group == 2), -torch.ones(len(mixed)), scores)
    (got, w_got), (want, w_want) = (_train(model, batch, scores, group, mbs, skip) for skip in (True, False))
    assert got.keys() == want.keys() and all(abs(got[k] - want[k]) <= 1e-5 * (1 + abs(want[k])) for k in got)
    assert torch.allclose(w_got, w_want, rtol=0, atol=1e-5) and got["train/ppo_kl"] != 0.0


@torch.inference_mode()
def test_a_rows_log_probs_do_not_depend_on_the_other_rows_lengths():
    """The update's response pass runs on the packed tokens (no padding): a row's log-probs are the same
    floats whether the longest response beside it has 4 tokens or 12."""
    if not rows_are_independent():
        pytest.skip("this machine's products round by row count (PCBENCH_NUMERICS=native)")
    tok, model = _model()
    prompts, responses = _groups(tok)
    base = prefix.build_shared_batch(prompts, responses, tok.pad_id)
    longer = prefix.build_shared_batch(prompts + [prompts[0]], responses + [[5] * 11 + [tok.eos_id]], tok.pad_id)
    assert longer.resp_ids.shape[1] > base.resp_ids.shape[1]
    a, b = base.log_probs(model), longer.log_probs(model)[:-1, :base.resp_ids.shape[1]]
    assert torch.equal(a, b) and bool((a != 0).any())
