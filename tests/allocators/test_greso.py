"""GRESO rules: history-driven probabilistic skip before any rollout (0 cost), then DAPO filtering."""

import numpy as np
import pytest

from pcbench.testing import Harness, method

B, N, POOL = 4, 16, 12


def greso(**extra):
    return method("greso", extra={"adapt_step": 0.0, **extra})


def test_without_history_it_is_dapo():
    rates = {i: (0.5 if i % 2 == 0 else 1.0) for i in range(240)}
    h = Harness(greso(), rates, train_batch=B)
    batch, row = h.run_step()
    drawn = [r.prompt_id for call in h.backend.calls for r in call]
    varying = sum(1 for pid in drawn if pid % 2 == 0)
    assert row["alloc/skipped"] == 0 and len(drawn) == row["alloc/rounds"] * POOL
    assert row["rollouts/step"] == len(drawn) * N
    assert row["rollouts/discarded/filtered"] == (len(drawn) - varying) * N
    assert row["rollouts/discarded/surplus"] == (varying - B) * N
    assert row["rollouts/trained"] == B * N and all(0 < g.acc.mean() < 1 for g in batch.groups)


def test_streaks_count_consecutive_zero_variance_epochs():
    h = Harness(greso(), {0: 1.0, 1: 0.0, 2: 0.5}, train_batch=1)
    alloc = h.alloc
    from pcbench.allocators.base import Rollouts
    obs = lambda pid, acc: alloc._observe(Rollouts(pid, np.array(acc, float), None, "plain"))
    assert [obs(0, [1, 1]), obs(0, [1, 1]), obs(0, [0, 0]), obs(0, [1, 0])] == [1, 2, -1, 0]


@pytest.mark.parametrize("z,expected", [(0, 0.0), (1, 0.5), (3, 0.875), (-2, 0.75), (10, 0.95), (-10, 0.95)])
def test_skip_probability_grows_with_the_streak_up_to_the_floor(z, expected):
    h = Harness(greso(floor=0.05), {0: 0.5}, train_batch=1)
    h.alloc.streak[0] = z
    assert h.alloc.skip_probability(0) == pytest.approx(expected)


def test_skipped_prompts_cost_nothing_and_are_never_generated():
    # prompts 0..59 have a long all-correct streak (kept with prob floor = 0.05), 60..119 none
    rates = {i: 0.5 for i in range(120)}
    h = Harness(greso(floor=0.05), rates, train_batch=B)
    h.alloc.streak.update({i: 30 for i in range(60)})
    _, row = h.run_step()
    generated = [r.prompt_id for call in h.backend.calls for r in call]
    drawn = h.stream._perm[:h.stream._pos].tolist()
    streaked = [pid for pid in drawn if pid < 60]
    assert row["rollouts/step"] == len(generated) * N and len(drawn) == len(generated) + row["alloc/skipped"]
    assert set(generated) | set(drawn) == set(drawn) and len(generated) == POOL
    assert len(streaked) >= 5 and row["alloc/skipped"] >= len(streaked) - 2  # each kept w.p. 0.05


def test_history_cuts_the_cost_of_a_second_epoch():
    # a third of the prompts always solved, a third never, a third at 0.5 (bernoulli)
    rates = {i: (1.0, 0.0, 0.5)[i % 3] for i in range(96)}
    h = Harness(greso(), rates, train_batch=B, mode="bernoulli")
    by_epoch = {}
    while h.stream.epoch < 3:
        epoch = h.stream.epoch
        _, row = h.run_step()
        by_epoch.setdefault(epoch, []).append(row)
    cost = {e: sum(r["rollouts/step"] for r in rows) / len(rows) for e, rows in by_epoch.items()}
    assert cost[2] < 0.8 * cost[0]  # the zero-variance thirds are mostly skipped once seen
    assert sum(r["alloc/skipped"] for r in by_epoch[2]) > 0


def test_exploration_probability_adapts_toward_the_target_share():
    h = Harness(method("greso", extra={"adapt_step": 0.1, "target_easy": 0.1}),
                {i: (1.0 if i % 2 else 0.5) for i in range(480)}, train_batch=B)
    _, row = h.run_step()  # half the generated groups are all-correct: above target, skip more
    assert row["alloc/p_easy"] == pytest.approx(0.4) and row["alloc/p_hard"] == pytest.approx(0.6)


@pytest.mark.parametrize("extra,msg", [({"floor": 0.0}, "floor > 0"), ({"p_easy": 1.5}, "p_easy"),
                                       ({"adapt_step": -1.0}, "adapt_step"), ({"flor": 0.1}, "unknown key")])
def test_impossible_settings_fail_with_a_fix(extra, msg):
    with pytest.raises(ValueError, match=msg):
        Harness(method("greso", extra=extra), {0: 0.5}, train_batch=B)
