"""PC-Bayes rules: posterior-informed pilots (direct commit / skip / pilot), E[p(1-p)] buffer,
online pilot pool, and the Beta arithmetic they rest on."""

import math

import numpy as np
import pytest

from pcbench.allocators.posterior import BetaPosterior, band_mass, beta_cdf, expected_variance
from pcbench.testing import Harness, method

B, N, NP, NC, POOL = 4, 16, 4, 12, 12


def bayes(**extra):
    return method("pilot_commit_bayes", n_pilot=NP, n_commit=NC, extra=extra)


def uniform(rate, count=1200):
    return {i: rate for i in range(count)}


def teach(h, pids, correct, total):
    for pid in pids:
        h.alloc.posterior.observe(pid, np.array([1.0] * correct + [0.0] * (total - correct)), 0)


# ---------------------------------------------------------------- the Beta arithmetic
@pytest.mark.parametrize("x,a,b,exact", [(0.3, 1, 1, 0.3), (0.3, 2.5, 1, 0.3 ** 2.5), (0.3, 1, 4, 1 - 0.7 ** 4),
                                         (0.5, 0.2, 0.2, 0.5), (0.5, 7, 7, 0.5)])
def test_beta_cdf_matches_closed_forms(x, a, b, exact):
    assert beta_cdf(x, a, b) == pytest.approx(exact, abs=1e-10)


def test_band_mass_matches_sampling_even_for_u_shaped_posteriors():
    rng = np.random.default_rng(0)
    for a, b in [(0.2, 4.2), (3.0, 3.0), (30.0, 2.0)]:
        s = rng.beta(a, b, 400_000)
        assert band_mass(a, b, 0.125, 0.25) == pytest.approx(np.mean((s >= 0.125) & (s <= 0.75)), abs=0.005)


def test_expected_variance_is_ab_over_sum_times_sum_plus_one():
    assert expected_variance(1, 1) == pytest.approx(1 / 6)
    assert expected_variance(3, 1) == pytest.approx(3 / 20)


def test_population_prior_is_refitted_from_latest_observations():
    rng = np.random.default_rng(0)
    ends, flat = BetaPosterior(), BetaPosterior(decay=0.5)
    for pid in range(800):
        ends.observe(pid, np.full(4, float(pid % 2)), 0)  # every prompt at p = 0 or 1
        flat.observe(pid, (rng.random(16) < rng.random()).astype(float), pid % 3)
    ends.fit_prior()
    flat.fit_prior()
    assert ends.a0 < 0.3 and ends.b0 < 0.3  # U-shaped: a 0/4 prompt is believed hard
    assert flat.a0 == pytest.approx(1.0, rel=0.25) and flat.b0 == pytest.approx(1.0, rel=0.25)


# ---------------------------------------------------------------- the allocator
def test_first_epoch_pilots_only_what_the_commits_need():
    h = Harness(bayes(), uniform(0.5), train_batch=B)
    batch, row = h.run_step()
    first, second = h.backend.calls
    # empty buffer: ceil(1.25 * 4 / yield 0.5) = 10 pilots, not PC's fixed 12
    assert [(r.kind, r.k) for r in first] == [("pilot", NP)] * 10
    # 10 kept, 4 committed, 6 stay buffered >= the next step's 4: no pilots in this round
    assert [(r.kind, r.k) for r in second] == [("commit", NC)] * B
    assert all([p.kind for p in g.parts] == ["pilot", "commit"] and g.size == N for g in batch.groups)
    assert row["rollouts/step"] == 10 * NP + B * NC and row["rollouts/trained"] == B * N


def test_steady_state_is_cheaper_than_pc_when_pilots_keep_well():
    cost, stale = {}, {}
    for name, cfg in [("pc", method("pilot_commit")), ("bayes", bayes())]:
        h = Harness(cfg, uniform(0.5), train_batch=B)
        rows = [h.run_step()[1] for _ in range(12)]
        cost[name] = sum(r["rollouts/step"] for r in rows)
        stale[name] = sum(r.get("rollouts/discarded/stale", 0) for r in rows)
        assert all(r["rollouts/trained"] == B * N for r in rows)
    assert cost["bayes"] < 0.8 * cost["pc"] and stale["bayes"] < stale["pc"]


def test_confident_in_band_prompts_commit_directly_without_a_pilot():
    h = Harness(bayes(), uniform(0.5, 240), train_batch=B)
    teach(h, range(240), 8, 16)  # Beta(9, 9): P(in band) ~ 0.98
    batch, row = h.run_step()
    (call,) = h.backend.calls
    assert [(r.kind, r.k) for r in call[:B]] == [("commit", N)] * B  # direct commits, then pilots
    assert all(r.kind == "pilot" for r in call[B:])
    assert row["alloc/direct"] == B and all(len(g.parts) == 1 and g.size == N for g in batch.groups)
    assert row["rollouts/commit"] == B * N and row["rollouts/trained"] == B * N


@pytest.mark.parametrize("explore", [0.0, 1.0])
def test_confident_out_of_band_prompts_are_skipped_at_no_cost(explore):
    rates = {i: (0.0 if i < 120 else 0.5) for i in range(240)}
    h = Harness(bayes(explore=explore), rates, train_batch=B)
    teach(h, range(120), 0, 32)  # Beta(1, 33): P(in band) ~ 0.01
    _, row = h.run_step()
    piloted = {r.prompt_id for call in h.backend.calls for r in call}
    if explore == 0.0:
        assert not piloted & set(range(120)) and row["alloc/skipped"] > 0
    else:
        assert piloted & set(range(120)) and row["alloc/skipped"] == 0 and row["alloc/explored"] > 0
    assert row["rollouts/step"] == sum(r.k for call in h.backend.calls for r in call)


def test_skipping_never_starves_a_step_skipped_prompts_are_revisited():
    # stale knowledge: every prompt looks hopeless, but 0..29 have become learnable
    rates = {i: (0.5 if i < 30 else 0.0) for i in range(120)}
    h = Harness(bayes(explore=0.0), rates, train_batch=B)
    teach(h, range(120), 0, 32)
    batch, row = h.run_step()
    assert len(batch.groups) == B and row["alloc/revisited"] > 0 and row["alloc/epoch_ends"] == 0
    assert row["alloc/skipped"] == 120  # the whole epoch was skipped once, then revisited
    assert {g.prompt_id for g in batch.groups} <= set(range(30))


def test_buffer_commits_the_highest_expected_variance_first():
    rates = {i: (0.5 if i % 2 else 0.25) for i in range(240)}
    h = Harness(bayes(), rates, train_batch=B)
    h.run_step()
    first_pilots = [r.prompt_id for r in h.backend.calls[0]]
    committed = [r.prompt_id for r in h.backend.calls[1] if r.kind == "commit"]
    halves = [pid for pid in first_pilots if pid % 2]  # Beta(3, 3) after 2/4 beats Beta(2, 4) after 1/4
    assert len(halves) >= B and set(committed) == set(halves[-B:])  # ties: newest insertion first


def test_no_eviction_and_posteriors_survive_the_epoch_end():
    rates = {i: (1.0 if i < 12 else 0.5) for i in range(48)}
    h = Harness(bayes(), rates, train_batch=B)
    while h.stream.epoch == 0:
        h.run_step()
    assert not h.stream.excluded and h.alloc.posterior.seen(0)
    a, b = h.alloc.posterior.params(0, h.stream.epoch)
    assert a > b  # it remembers that prompt 0 was solved


def test_zero_variance_groups_come_only_from_direct_commits_on_stale_posteriors():
    """Why the benchmark's pilot_commit_bayes trains all-correct groups from its second epoch on
    (docs/allocators.md): a kept pilot is in the band, so pilot + commit always mixes, but a
    direct commit trusts last epoch's evidence, decayed once. Prompts learnt in between are
    still believed in the band, committed n rollouts without a pilot, and all n are correct."""
    learnt = set()
    first = {i: 0.5 if i < 16 else (0.0 if i < 32 else 1.0) for i in range(48)}  # a U-shaped population
    rates = lambda pid: 1.0 if pid in learnt else first[pid]  # noqa: E731 (the policy learns between epochs)
    h = Harness(bayes(), rates, train_batch=B, prompt_ids=range(48))
    while h.stream.epoch == 0:
        batch, row = h.run_step()
        assert row["alloc/zero_variance_groups"] == 0  # nothing solved mid-epoch: every group mixes
    assert h.alloc.posterior.a0 < 1 and h.alloc.posterior.b0 < 1  # the prior alone says "not in the band"
    learnt.update(range(16))
    batch, row = h.run_step()
    direct = [g for g in batch.groups if [p.kind for p in g.parts] == ["commit"]]
    assert direct and row["alloc/direct"] == len(direct)  # no pilot could have caught them
    assert all(g.prompt_id in learnt and g.size == N and np.all(g.parts[0].acc == 1.0) for g in direct)
    piloted = [g for g in batch.groups if [p.kind for p in g.parts] == ["pilot", "commit"]]
    assert all(0 < np.mean(g.parts[0].acc) < 1 for g in piloted)  # an in-band pilot keeps its group mixed
    assert row["alloc/groups_all_correct"] == row["alloc/zero_variance_groups"] == len(direct)


@pytest.mark.parametrize("extra,msg", [({"skip_below": 0.9}, "skip_below < direct_above"),
                                       ({"decay": 0.0}, "decay"), ({"headroom": 0.0}, "headroom"),
                                       ({"explor": 0.1}, "unknown key")])
def test_impossible_settings_fail_with_a_fix(extra, msg):
    with pytest.raises(ValueError, match=msg):
        Harness(bayes(**extra), uniform(0.5), train_batch=B)


def test_pc_checks_still_apply():
    with pytest.raises(ValueError, match="n_commit = n - n_pilot"):
        Harness(method("pilot_commit_bayes", n_pilot=4, n_commit=3), uniform(0.5), train_batch=B)
    assert math.isfinite(band_mass(1, 1, 0.125, 0.25))
