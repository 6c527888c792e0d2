"""SPEED-RL rules: strict 0 < p < 1 screen, pipelined continuation, screening rollouts reused."""

import pytest

from pcbench.allocators import AllocationError
from pcbench.testing import Harness, method

B, N, NS, NC, POOL = 4, 16, 4, 12, 12


def speed(**kw):
    return method("speed_rl", **{"n_pilot": NS, "n_commit": NC, "buffer_sampling": "random", **kw})


def uniform(rate, count=240):
    return {i: rate for i in range(count)}


@pytest.mark.parametrize("p,kept", [(0 / 8, False), (1 / 8, True), (7 / 8, True), (8 / 8, False)])
def test_screen_keeps_any_variance_strictly(p, kept):
    # n_screen = 8: PC's band would drop p = 7/8 (too easy); SPEED-RL keeps every 0 < p < 1
    h = Harness(speed(n=32, n_pilot=8, n_commit=24, max_rounds=1), uniform(p), train_batch=B)
    with pytest.raises(AllocationError):
        h.run_step()  # one round never fills a step: continuations ride in the next round
    assert len(h.alloc.buffer) == (POOL if kept else 0)
    assert h.ledger.cumulative == POOL * 8
    assert not h.alloc.evict_pending  # SPEED-RL never evicts


def test_continuation_is_pipelined_and_trains_screen_plus_continuation():
    h = Harness(speed(), uniform(0.5), train_batch=B)
    batch, row = h.run_step()
    first, second = h.backend.calls
    assert [r.kind for r in first] == ["pilot"] * POOL
    assert [r.kind for r in second] == ["commit"] * B + ["pilot"] * POOL
    assert [r.k for r in second[:B]] == [NC] * B
    for g in batch.groups:
        assert g.size == N and [p.kind for p in g.parts] == ["pilot", "commit"]
        assert {pl[1] for pl in g.parts[0].payload} == {0} and {pl[1] for pl in g.parts[1].payload} == {1}
    assert row["rollouts/pilot"] == 2 * POOL * NS and row["rollouts/commit"] == B * NC
    assert row["rollouts/trained"] == B * N and row["rollouts/discarded"] == 0


def test_unqualified_screens_are_counted_as_discarded():
    rates = {i: (0.5 if i % 3 == 0 else (1.0 if i % 3 == 1 else 0.0)) for i in range(600)}
    h = Harness(speed(), rates, train_batch=B)
    _, row = h.run_step()
    screened = [r.prompt_id for call in h.backend.calls for r in call if r.kind == "pilot"]
    dropped = sum(1 for pid in screened if pid % 3 != 0)
    assert row["rollouts/discarded/skipped_pilot"] == dropped * NS
    assert row["alloc/too_easy"] + row["alloc/too_hard"] == dropped


def test_all_correct_prompts_return_next_epoch():
    rates = {i: (1.0 if i < 12 else 0.5) for i in range(48)}
    h = Harness(speed(), rates, train_batch=B)
    while h.stream.epoch == 0:
        h.run_step()
    h.run_step()
    assert not h.stream.excluded and not h.alloc.evicted
    later = {r.prompt_id for call in h.backend.calls[-2:] for r in call if r.kind == "pilot"}
    assert later & set(range(12))  # solved prompts are screened again in the new epoch


def test_bernoulli_ledger_balances():
    h = Harness(speed(), {i: (i % 5) / 4 for i in range(900)}, train_batch=B, mode="bernoulli")
    rows = [h.run_step()[1] for _ in range(6)]
    generated = sum(r["rollouts/step"] for r in rows)
    held = sum(len(e.pilot) for e in h.alloc.buffer.entries.values())
    assert generated == h.ledger.cumulative == rows[-1]["cumulative_rollouts"]
    assert generated == sum(r["rollouts/trained"] + r["rollouts/discarded"] for r in rows) + held
    assert all(r["rollouts/trained"] == B * N for r in rows)


@pytest.mark.parametrize("kw,msg", [(dict(n_pilot=16, n_commit=0), "screening"),
                                    (dict(n_commit=10), "n_commit = n - n_pilot"),
                                    (dict(gen_batch_size=2), "gen_batch_size")])
def test_impossible_settings_fail_with_a_fix(kw, msg):
    with pytest.raises(ValueError, match=msg):
        Harness(speed(**kw), uniform(0.5), train_batch=B)
