"""The embedded sampler, tokenizer and synthetic task."""

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from pcbench.backends.embedded.model import build_model
from pcbench.backends.embedded.sampler import sample, top_p_filter
from pcbench.backends.embedded.task import SyntheticTask
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
    val = {p.prompt for ps in task.val.values() for p in ps}
    sft = {p.prompt for p in task.sft}
    assert not (train & val) and not (train & sft) and not (val & sft)
    assert len(task.train) == cfg.train_size and set(task.val) == {"add21", "add22", "add33"}
    for p in task.train[:200]:
        assert compute_score(p.solution, p.answer).acc
        assert not compute_score(f"\\boxed{{{int(p.answer) + 1}}}", p.answer).acc
    again = SyntheticTask.build(cfg)
    assert [p.prompt for p in again.train] == [p.prompt for p in task.train]
