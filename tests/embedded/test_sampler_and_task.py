"""The embedded sampler, tokenizer and synthetic task."""

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from pcbench.backends.embedded.model import build_model
from pcbench.backends.embedded.sampler import sample, top_p_filter
from pcbench.backends.embedded.evaluate import summarize
from pcbench.backends.embedded.task import SyntheticTask, sample_problems
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.reward import compute_score

MODEL = OmegaConf.create(dict(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2, num_kv_heads=1,
                              max_position=64, init_seed=0))


def test_tokenizer_round_trip_and_boxed_token():
    tok = CharTokenizer()
    ids = tok.encode("12+34=\\boxed{46}")
    assert tok.decode(ids + [tok.eos_id, 5]) == "12+34=\\boxed{46}"
    assert ids.count(tok.index["\\boxed{"]) == 1
    with pytest.raises(ValueError, match="not in the embedded tokenizer"):
        tok.encode("x")


def test_kv_cache_sampling_equals_full_recompute_greedy():
    tok = CharTokenizer()
    model = build_model(MODEL, tok, seed=0).eval()
    prompts = [[tok.bos_id] + tok.encode("7+5="), [tok.bos_id] + tok.encode("123+456=")]
    fast = sample(model, prompts, max_new_tokens=6, temperature=1e-4, top_p=1.0, eos_id=tok.eos_id,
                  pad_id=tok.pad_id, generator=torch.Generator().manual_seed(0))
    for p, got in zip(prompts, fast):  # greedy without cache, one prompt at a time (no padding)
        seq = list(p)
        for _ in range(len(got)):
            nxt = int(model(input_ids=torch.tensor([seq])).logits[0, -1].argmax())
            seq.append(nxt)
            if nxt == tok.eos_id:
                break
        assert seq[len(p):] == got


def test_sampling_is_seeded():
    tok = CharTokenizer()
    model = build_model(MODEL, tok, seed=0).eval()
    prompts = [[tok.bos_id] + tok.encode("1+1=")] * 8
    runs = [sample(model, prompts, max_new_tokens=5, temperature=1.0, top_p=1.0, eos_id=tok.eos_id,
                   pad_id=tok.pad_id, generator=torch.Generator().manual_seed(3)) for _ in range(2)]
    assert runs[0] == runs[1]


def test_top_p_keeps_the_smallest_set_reaching_the_mass():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(top_p_filter(logits, 0.7))
    assert kept.tolist() == [[True, True, False, False]]


def test_task_sets_are_disjoint_and_answers_verify():
    cfg = OmegaConf.load("conf/data/synthetic.yaml")
    task = SyntheticTask.build(cfg)
    train = {p.prompt for p in task.train}
    val = {p.prompt for p in task.val}
    ood = {p.prompt for ps in task.ood.values() for p in ps}
    sft = {p.prompt for p in task.sft}
    assert not (train & val) and not (train & sft) and not (val & sft) and not (ood & (train | val | sft))
    assert len(task.train) == cfg.train_size and len(task.val) == cfg.val_size and set(task.ood) == set(cfg.ood_sets)
    assert {p.tier for p in task.val} == set(cfg.tiers)  # val/acc is drawn like the RL mix
    for p in task.train[:200]:
        assert compute_score(p.solution, p.answer).acc
        assert not compute_score(f"\\boxed{{{int(p.answer) + 1}}}", p.answer).acc
    again = SyntheticTask.build(cfg)
    assert [p.prompt for p in again.train] == [p.prompt for p in task.train]


@pytest.mark.parametrize("reverse", [True, "both"])
def test_reversed_answers_are_the_sum_least_significant_digit_first(reverse):
    rng = np.random.default_rng(0)
    for p in sample_problems(300, {"add33": 1.0, "add44": 1.0}, rng, reverse=reverse):
        a, b = p.prompt.rstrip("=").split("+")
        if reverse == "both":
            a, b = a[::-1], b[::-1]
        assert p.answer == str(int(a) + int(b))[::-1]
        # no gold answer starts with 0: the numeric verifier would also accept it without that digit
        assert not p.answer.startswith("0")
        assert compute_score(p.solution, p.answer).acc
        assert not compute_score(f"\\boxed{{{p.answer[::-1]}}}", p.answer).acc or p.answer == p.answer[::-1]


def test_validation_se_is_the_per_problem_sampling_error():
    rates = np.array([0.0, 1.0, 0.5, 0.25])  # pass rates over k=4 samples
    s = summarize(rates, 4)
    assert s["acc"] == pytest.approx(0.4375)
    # unbiased per-problem variance k/(k-1) p(1-p): 0, 0, 1/3, 1/4; SE = sqrt(sum / k) / N
    assert s["acc_se"] == pytest.approx(np.sqrt((1 / 3 + 1 / 4) / 4) / 4)
    assert s["acc_se_problems"] == pytest.approx(rates.std(ddof=1) / 2)
    assert summarize(np.array([1.0, 0.0]), 8)["acc_se"] == 0.0  # problems decided on every sample add no noise


@torch.no_grad()
def _reference_sample(model, prompts, max_new_tokens, temperature, top_p, eos_id, pad_id, generator):
    """The sampler as it was before its speed-ups (issue 29): no_grad, the mask grown by torch.cat."""
    from transformers import DynamicCache

    from pcbench.backends.embedded.sampler import left_pad

    ids, mask = left_pad(prompts, pad_id)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache()
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache,
                   use_cache=True).logits[:, -1]
    B = ids.shape[0]
    done = torch.zeros(B, dtype=torch.bool)
    tokens = torch.full((B, max_new_tokens), pad_id, dtype=torch.long)
    next_pos = pos[:, -1] + 1
    for t in range(max_new_tokens):
        probs = torch.softmax(top_p_filter(logits / temperature, top_p), dim=-1)
        nxt = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
        tokens[:, t] = nxt
        done |= nxt == eos_id
        if bool(done.all()) or t == max_new_tokens - 1:
            break
        mask = torch.cat([mask, torch.ones((B, 1), dtype=mask.dtype)], dim=-1)
        logits = model(input_ids=nxt[:, None], attention_mask=mask, position_ids=next_pos[:, None],
                       past_key_values=cache, use_cache=True).logits[:, -1]
        next_pos = next_pos + 1
    return tokens


@pytest.mark.parametrize("top_p", [1.0, 0.7])
def test_sampler_draws_exactly_what_the_reference_loop_draws(top_p):
    """The sampler's rescheduling (inference mode, one preallocated mask viewed per step) must not
    move a single draw: same generator seed -> the same tokens as the plain loop, row for row, with
    prompts of different lengths (left padding) and rows stopping at different steps."""
    tok = CharTokenizer()
    model = build_model(MODEL, tok, seed=0).eval()
    texts = ["7+5=", "123+456=", "1+1=", "99+1=", "4321+1234="]
    prompts = [[tok.bos_id] + tok.encode(t) for t in texts for _ in range(6)]
    got = sample(model, prompts, max_new_tokens=8, temperature=1.0, top_p=top_p, eos_id=tok.eos_id,
                 pad_id=tok.pad_id, generator=torch.Generator().manual_seed(11))
    ref = _reference_sample(model, prompts, 8, 1.0, top_p, tok.eos_id, tok.pad_id, torch.Generator().manual_seed(11))
    want = []
    for row in ref.tolist():  # up to the first pad, EOS kept: as the sampler returns them
        seq = []
        for x in row:
            if x == tok.pad_id:
                break
            seq.append(x)
            if x == tok.eos_id:
                break
        want.append(seq)
    assert got == want
    assert len({len(g) for g in got}) > 1  # rows did stop at different steps


def test_the_decode_buffer_gives_transformers_cache_logits_bit_for_bit():
    """Decoding into the preallocated KVBuffer (unwritten positions zero and masked, rows leaving it)
    must give each step's logits exactly as transformers' growing cache does, row for row, under
    pcbench's products: prompts of different lengths (left padding), a repeated prompt sharing its
    prefill, and two rows dropped midway."""
    from transformers import DynamicCache

    from pcbench import detmm

    if not detmm.deterministic():
        pytest.skip("the sampler decodes into the buffer under pcbench's products only (PCBENCH_NUMERICS=native "
                    "keeps transformers' cache, whose products may round by row count)")

    from pcbench.backends.embedded.forward import KVBuffer, decode_step, prefill
    from pcbench.backends.embedded.sampler import left_pad, unique_rows

    tok = CharTokenizer()
    model = build_model(MODEL, tok, seed=0).eval()
    prompts = [[tok.bos_id] + tok.encode(t) for t in ["7+5=", "123+456=", "7+5=", "99+1="]]
    B, T = len(prompts), 5
    steps = torch.Generator().manual_seed(3)
    feed = torch.randint(4, tok.vocab_size, (B, T), generator=steps)  # the tokens both paths decode
    ids, mask = left_pad(prompts, tok.pad_id)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        cache = DynamicCache()
        ref = [model(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache,
                     use_cache=True).logits[:, -1]]
        full = torch.cat([mask, torch.ones(B, T, dtype=mask.dtype)], dim=1)
        for t in range(T):
            ref.append(model(input_ids=feed[:, t:t + 1], attention_mask=full[:, :mask.shape[1] + t + 1],
                             position_ids=pos[:, -1:] + 1 + t, past_key_values=cache, use_cache=True).logits[:, -1])

        uniq, row = unique_rows(prompts)
        u_ids, u_mask = left_pad(uniq, tok.pad_id)
        kv, first = prefill(model, u_ids, u_mask, (u_mask.cumsum(-1) - 1).clamp(min=0))
        assert torch.equal(first[row], ref[0])
        buf, live = KVBuffer(kv, row, T), torch.arange(B)
        for t in range(T):
            if t == 3:  # rows 1 and 2 finish: the buffer keeps the others
                live = torch.tensor([0, 3])
                buf.keep(live)
            got = decode_step(model, buf, feed[live, t:t + 1], pos[live, -1:] + 1 + t, full[live, :mask.shape[1] + t + 1])
            assert torch.equal(got, ref[t + 1][live]), f"decode step {t}"
