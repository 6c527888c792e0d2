"""MoPPS rules: Beta posteriors with forgetting, Thompson selection before generation, no extra cost."""

import numpy as np
import pytest

from pcbench.allocators.posterior import BetaPosterior
from pcbench.testing import Harness, method

B, N, POOL = 4, 16, 12


@pytest.mark.parametrize("mode", ["exact", "bernoulli"])
def test_cost_is_exactly_b_times_n_and_unpicked_candidates_are_free(mode):
    h = Harness(method("mopps"), {i: (i % 5) / 4 for i in range(240)}, train_batch=B, mode=mode)
    for step in range(1, 4):
        batch, row = h.run_step()
        assert row["rollouts/step"] == row["rollouts/plain"] == row["rollouts/trained"] == B * N
        assert row["rollouts/discarded"] == 0 and len(batch.groups) == B
        assert h.stream._pos == step * POOL  # a pool drawn, only B generated
    assert len(h.backend.calls) == 3 and all(len(c) == B for c in h.backend.calls)


def test_confident_posteriors_steer_selection_to_p_near_half():
    rates = {i: (0.5 if i % 3 == 0 else float(i % 2)) for i in range(120)}
    h = Harness(method("mopps"), rates, train_batch=B)
    for pid, p in rates.items():  # 40 observations each: Beta posteriors far from the prior
        h.alloc.posterior.observe(pid, np.array([1.0] * int(40 * p) + [0.0] * int(40 * (1 - p))), 0)
    for _ in range(5):
        batch, _ = h.run_step()
        pool = [int(pid) for pid in h.stream._perm[h.stream._pos - POOL:h.stream._pos]]
        mid_in_pool = sum(pid % 3 == 0 for pid in pool)
        assert sum(g.prompt_id % 3 == 0 for g in batch.groups) == min(B, mid_in_pool)


def test_unseen_prompts_are_picked_at_random_and_then_observed():
    h = Harness(method("mopps"), {i: 0.5 for i in range(60)}, train_batch=B)
    batch, row = h.run_step()
    assert row["alloc/unseen_picked"] == B
    assert all(h.alloc.posterior.params(g.prompt_id, 0) == (1.0 + 8, 1.0 + 8) for g in batch.groups)


def test_forgetting_is_per_epoch_elapsed():
    post = BetaPosterior(a0=1.0, b0=1.0, decay=0.5)
    post.observe(7, np.array([1.0] * 8), epoch=0)
    assert post.params(7, 0) == (9.0, 1.0) and post.params(7, 2) == (3.0, 1.0)
    post.observe(7, np.array([1.0, 0.0]), epoch=0)  # same epoch: no decay between pilot and commit
    assert post.params(7, 0) == (10.0, 2.0)


def test_thompson_draws_are_seeded():
    picks = []
    for _ in range(2):
        h = Harness(method("mopps"), {i: 0.5 for i in range(60)}, train_batch=B, seed=5)
        h.run_step()
        picks.append([r.prompt_id for r in h.backend.calls[0]])
    assert picks[0] == picks[1]


@pytest.mark.parametrize("kw,msg", [(dict(gen_batch_size=2), "gen_batch_size"), (dict(extra={"decay": 0.0}), "decay"),
                                    (dict(extra={"target": 1.0}), "target"), (dict(n=1), "at least 2")])
def test_impossible_settings_fail_with_a_fix(kw, msg):
    with pytest.raises(ValueError, match=msg):
        Harness(method("mopps", **kw), {0: 0.5}, train_batch=B)
