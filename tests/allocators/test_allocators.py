"""Each allocation rule of docs/method.md#the-three-methods, checked against a backend with known per-prompt success."""

import itertools

import numpy as np
import pytest

from pcbench.allocators import AllocationError
from pcbench.testing import Harness, method

B, N, NP, NC, POOL = 4, 16, 4, 12, 12


def uniform(rate, count=120):
    return {i: rate for i in range(count)}


# ---------------------------------------------------------------- GRPO
def test_grpo_trains_every_group_and_pays_b_times_n():
    h = Harness(method("grpo"), uniform(0.5), train_batch=B)
    batch, row = h.run_step()
    assert [g.size for g in batch.groups] == [N] * B
    assert row["rollouts/step"] == row["rollouts/plain"] == B * N
    assert row["rollouts/trained"] == B * N and row["rollouts/discarded"] == 0


def test_grpo_counts_zero_variance_groups_but_still_trains_them():
    h = Harness(method("grpo"), uniform(1.0), train_batch=B)
    batch, row = h.run_step()
    assert row["alloc/zero_variance_groups"] == B and len(batch.groups) == B


# ---------------------------------------------------------------- DAPO
def test_dapo_keeps_only_varying_groups_and_discards_surplus():
    rates = {i: (0.5 if i % 2 == 0 else 1.0) for i in range(240)}
    h = Harness(method("dapo"), rates, train_batch=B)
    batch, row = h.run_step()
    assert len(batch.groups) == B and all(0 < g.acc.mean() < 1 for g in batch.groups)
    drawn = [r.prompt_id for call in h.backend.calls for r in call]
    varying = sum(1 for pid in drawn if pid % 2 == 0)
    assert row["rollouts/step"] == len(drawn) * N == row["alloc/rounds"] * POOL * N
    assert row["rollouts/discarded/filtered"] == (len(drawn) - varying) * N
    assert row["rollouts/discarded/surplus"] == (varying - B) * N
    assert row["rollouts/trained"] == B * N
    assert row["rollouts/discarded"] + row["rollouts/trained"] == row["rollouts/step"]


def test_dapo_repeats_rounds_and_drains_surplus():
    seen = itertools.count()
    rate = lambda pid: 0.5 if next(seen) % 4 == 0 else 0.0  # every 4th request varies: 3 per round
    h = Harness(method("dapo"), rate, train_batch=B, prompt_ids=range(240))
    batch, row = h.run_step()
    assert row["alloc/rounds"] == 2 and row["rollouts/step"] == 2 * POOL * N
    assert row["alloc/surplus"] == 2 and row["rollouts/discarded/surplus"] == 2 * N
    assert len(batch.groups) == B


def test_dapo_fails_clearly_after_max_rounds():
    h = Harness(method("dapo", max_rounds=3), uniform(1.0, 400), train_batch=B)
    with pytest.raises(AllocationError, match="after 3 sampling rounds"):
        h.run_step()
    assert h.ledger.cumulative == 3 * POOL * N  # every round was paid for


# ---------------------------------------------------------------- Pilot-Commit
@pytest.mark.parametrize("p,verdict", [(0 / 8, "too_hard"), (1 / 8, "kept"), (6 / 8, "kept"),
                                       (7 / 8, "too_easy"), (8 / 8, "too_easy")])
def test_pc_band_edges_are_inclusive(p, verdict):
    cfg = method("pilot_commit", n=32, n_pilot=8, n_commit=24)
    h = Harness(cfg, uniform(p, 200), train_batch=B)
    h.alloc.cfg.max_rounds = 1
    try:
        h.run_step()
    except AllocationError:
        pass  # with max_rounds=1 a step never fills (commits come a round later); we read the triage
    counts = {k: 0 for k in ("kept", "too_easy", "too_hard")}
    counts[verdict] = POOL
    assert len(h.alloc.buffer) == counts["kept"]
    assert (len(h.alloc.evict_pending) == POOL) == (p == 1.0)


def test_pc_commit_is_pipelined_with_next_round_pilots_and_trains_union():
    h = Harness(method("pilot_commit"), uniform(0.5), train_batch=B)
    batch, row = h.run_step()
    calls = h.backend.calls
    assert [r.kind for r in calls[0]] == ["pilot"] * POOL  # round 1: nothing buffered yet
    kinds = [r.kind for r in calls[1]]
    assert kinds == ["commit"] * B + ["pilot"] * POOL  # commits ride in the next round's call
    assert [r.k for r in calls[1][:B]] == [NC] * B
    committed = {r.prompt_id for r in calls[1][:B]}
    assert committed <= {r.prompt_id for r in calls[0]}
    for g in batch.groups:
        assert g.size == NP + NC and [p.kind for p in g.parts] == ["pilot", "commit"]
        assert {pl[1] for pl in g.parts[0].payload} == {0} and {pl[1] for pl in g.parts[1].payload} == {1}
    assert row["alloc/rounds"] == 2


def test_pc_steady_state_cost_is_pool_pilots_plus_b_commits():
    h = Harness(method("pilot_commit"), uniform(0.5, 1200), train_batch=B)
    h.run_step()
    for _ in range(5):
        _, row = h.run_step()
        assert row["alloc/rounds"] == 1
        assert row["rollouts/pilot"] == POOL * NP and row["rollouts/commit"] == B * NC
        assert row["rollouts/step"] == 3 * B * NP + B * NC
        assert row["rollouts/trained"] == B * (NP + NC)


def test_pc_max_variance_commits_the_highest_std_pilots():
    rates = {i: (0.5 if i % 6 == 0 else 0.25) for i in range(96)}  # std(0.5) > std(0.25)
    h = Harness(method("pilot_commit", gen_batch_size=24), rates, train_batch=B)
    h.run_step()
    piloted = [r.prompt_id for r in h.backend.calls[0]]
    high = [pid for pid in piloted if pid % 6 == 0]
    commits = [r.prompt_id for r in h.backend.calls[1] if r.kind == "commit"]
    assert len(commits) == B
    assert set(commits) == set(high) if len(high) == B else (set(high) <= set(commits) if len(high) < B
                                                                else set(commits) <= set(high))


def test_pc_max_variance_tie_breaks_to_most_recent_step():
    from pcbench.allocators.replay import ReplayBuffer
    from pcbench.allocators.base import Rollouts
    buf = ReplayBuffer("max_variance")
    acc = np.array([1.0, 0.0, 1.0, 0.0])
    buf.add(Rollouts(1, acc, None, "pilot"), step=3)
    buf.add(Rollouts(2, acc, None, "pilot"), step=5)
    buf.add(Rollouts(3, np.array([1.0, 0, 0, 0]), None, "pilot"), step=9)
    assert [e.pilot.prompt_id for e in buf.pop(2, np.random.default_rng(0))] == [2, 1]


def test_pc_random_buffer_sampling_is_seeded():
    picks = []
    for _ in range(2):
        h = Harness(method("pilot_commit", buffer_sampling="random"), uniform(0.5, 600), train_batch=B, seed=3)
        h.run_step()
        picks.append([r.prompt_id for r in h.backend.calls[1] if r.kind == "commit"])
    assert picks[0] == picks[1] and len(picks[0]) == B


def test_pc_stale_entries_are_dropped_after_update():
    # 12 kept per round, 4 committed per step: the buffer grows by 8 per step until entries age out
    h = Harness(method("pilot_commit", staleness=2), uniform(0.5, 1200), train_batch=B)
    rows = [h.run_step()[1] for _ in range(6)]
    stamps = [e.step for e in h.alloc.buffer.entries.values()]
    assert min(stamps) >= h.step - 2
    assert sum(r["alloc/stale_dropped"] for r in rows) > 0
    assert sum(r.get("rollouts/discarded/stale", 0) for r in rows) == NP * sum(r["alloc/stale_dropped"] for r in rows)
    assert max(r["alloc/staleness_max"] for r in rows) <= 2


def test_pc_eviction_applies_at_epoch_end_only():
    # prompts 0..11 always solved, 12..47 at p=0.5; pool 12, 48 prompts: one epoch = 4 rounds
    rates = {i: (1.0 if i < 12 else 0.5) for i in range(48)}
    h = Harness(method("pilot_commit"), rates, train_batch=B)
    h.run_step()
    solved_seen = {r.prompt_id for call in h.backend.calls for r in call if r.kind == "pilot"} & set(range(12))
    assert solved_seen and h.alloc.evict_pending == solved_seen and not h.stream.excluded
    while h.stream.epoch == 0:
        h.run_step()  # until it crosses the epoch end
    assert h.alloc.evicted >= solved_seen and solved_seen <= h.stream.excluded
    first_new_epoch_call = len(h.backend.calls)
    h.run_step()
    later = [r.prompt_id for call in h.backend.calls[first_new_epoch_call - 1:] for r in call if r.kind == "pilot"]
    assert not set(later) & h.alloc.evicted


def test_pc_epoch_end_clears_buffer_and_drops_partial_batch():
    rates = {i: 0.5 for i in range(24)}  # 2 rounds per epoch
    h = Harness(method("pilot_commit"), rates, train_batch=8)
    batch, row = h.run_step()
    # epoch 0: round 1 pilots 12, round 2 commits 8 (batch full). Buffer keeps 4+12=16 for step 2.
    # step 2: no candidates left -> drop buffer (16 pilots), start epoch 1.
    _, row2 = h.run_step()
    assert row2["alloc/epoch_ends"] == 1 and row2["rollouts/discarded/epoch_clear"] == 16 * NP
    assert h.stream.epoch == 1


def test_pc_partial_batch_at_epoch_end_is_discarded():
    # 60 prompts, pool 12: 5 rounds per epoch; every 4th pilot is in the band (3 kept per round).
    # step 1 fills 8 in rounds 1-4 (buffer keeps 4); step 2 commits those 4 in round 5, then the
    # epoch runs out: the partial batch (4 groups) and the buffer (3 entries) are dropped.
    seen = itertools.count()
    rate = lambda pid: 0.5 if next(seen) % 4 == 0 else 0.0
    h = Harness(method("pilot_commit"), rate, train_batch=8, prompt_ids=range(60))
    _, row1 = h.run_step()
    assert row1["alloc/rounds"] == 4 and row1["alloc/epoch_ends"] == 0
    _, row2 = h.run_step()
    assert row2["alloc/epoch_ends"] == 1
    assert row2["rollouts/discarded/partial_batch"] == 4 * N
    assert row2["rollouts/discarded/epoch_clear"] == 3 * NP
    assert row2["rollouts/trained"] == 8 * N


def test_pc_fails_clearly_when_an_epoch_is_too_short_to_fill_a_batch():
    h = Harness(method("pilot_commit"), uniform(0.5, 12), train_batch=B)
    with pytest.raises(AllocationError, match="could not fill"):
        h.run_step()


def test_pc_fails_clearly_when_nothing_is_in_the_band():
    h = Harness(method("pilot_commit", max_rounds=4), uniform(0.0, 400), train_batch=B)
    with pytest.raises(AllocationError, match="after 4 sampling rounds"):
        h.run_step()


def test_ledger_cumulative_counts_everything_for_every_method():
    for name in ("grpo", "dapo", "pilot_commit"):
        h = Harness(method(name), {i: (i % 5) / 4 for i in range(600)}, train_batch=B, mode="bernoulli")
        rows = [h.run_step()[1] for _ in range(4)]
        assert rows[-1]["cumulative_rollouts"] == sum(r["rollouts/step"] for r in rows) == h.ledger.cumulative
        assert all(r["rollouts/pilot"] + r["rollouts/commit"] + r["rollouts/plain"] == r["rollouts/step"] for r in rows)


@pytest.mark.parametrize("name,kw,msg", [
    ("pilot_commit", dict(n_pilot=16, n_commit=0), "n_pilot"),
    ("pilot_commit", dict(n_pilot=4, n_commit=10), "n_commit = n - n_pilot"),
    ("pilot_commit", dict(lower=0.8, upper=0.3), "keeps nothing"),
    ("pilot_commit", dict(gen_batch_size=2), "gen_batch_size"),
    ("dapo", dict(gen_batch_size=2), "gen_batch_size"),
    ("grpo", dict(n=1), "at least 2"),
])
def test_impossible_settings_fail_with_a_fix(name, kw, msg):
    with pytest.raises(ValueError, match=msg):
        Harness(method(name, **kw), uniform(0.5), train_batch=B)


def test_unknown_method_lists_choices():
    with pytest.raises(ValueError, match="unknown method 'gpro'; choose one of: ") as e:
        Harness(method("gpro"), uniform(0.5), train_batch=B)
    assert {"dapo", "grpo", "pilot_commit"} <= set(str(e.value).split(": ")[1].split(", "))
