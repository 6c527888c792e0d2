"""PODS rules: n' rollouts generated, the max-variance n trained, the rest counted as discarded."""

import numpy as np
import pytest

from pcbench.allocators.pods import max_variance_subset
from pcbench.testing import Harness, method

B, N, NG = 4, 16, 32


@pytest.mark.parametrize("correct,expected", [(5, 5), (16, 8), (20, 8), (29, 13), (0, 0), (32, 16)])
def test_binary_subset_is_as_balanced_as_the_rollouts_allow(correct, expected):
    acc = np.array([1.0] * correct + [0.0] * (NG - correct))
    idx = max_variance_subset(np.random.default_rng(0).permutation(acc), N)
    assert len(idx) == N == len(set(idx.tolist()))
    assert int(np.random.default_rng(0).permutation(acc)[idx].sum()) == expected


def test_general_rewards_take_both_extremes():
    r = np.array([0.1, 0.9, 0.5, 0.0, 1.0, 0.4])
    idx = max_variance_subset(r, 2)
    assert sorted(r[idx].tolist()) == [0.0, 1.0]
    brute = max(np.var(r[list(c)]) for c in __import__("itertools").combinations(range(6), 4))
    assert np.var(r[max_variance_subset(r, 4)]) == pytest.approx(brute)


@pytest.mark.parametrize("mode", ["exact", "bernoulli"])
def test_ledger_counts_generated_trained_and_left_out(mode):
    rates = {i: (i % 5) / 4 for i in range(200)}
    h = Harness(method("pods", extra={"n_generate": NG}), rates, train_batch=B, mode=mode)
    batch, row = h.run_step()
    assert [(r.kind, r.k) for r in h.backend.calls[0]] == [("plain", NG)] * B and len(h.backend.calls) == 1
    assert row["rollouts/step"] == row["rollouts/plain"] == B * NG
    assert row["rollouts/trained"] == B * N and [g.size for g in batch.groups] == [N] * B
    assert row["rollouts/discarded"] == row["rollouts/discarded/surplus"] == B * (NG - N)
    for g in batch.groups:  # the trained rollouts are a subset of what was generated for it
        assert {pl[0] for pl in g.parts[0].payload} == {g.prompt_id}
        assert len({pl[2] for pl in g.parts[0].payload}) == N


def test_trained_groups_carry_more_variance_than_the_first_n():
    h = Harness(method("pods"), {i: 0.2 for i in range(100)}, train_batch=B, mode="bernoulli")
    batch, row = h.run_step()
    assert h.backend.calls[0][0].k == 2 * N  # default n' = 2n
    assert all(abs(g.acc.mean() - 0.5) <= abs(0.2 - 0.5) for g in batch.groups if g.acc.std() > 0)
    assert row["alloc/group_var_mean"] > 0.2 * 0.8


def test_n_generate_must_exceed_n():
    with pytest.raises(ValueError, match="must exceed method.n=16"):
        Harness(method("pods", extra={"n_generate": 16}), {0: 0.5}, train_batch=B)
