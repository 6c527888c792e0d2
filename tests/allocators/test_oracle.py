"""Oracle rules: uncounted probes of the current pass rate, the top-p(1-p) batch trained at GRPO cost."""

import pytest

from pcbench.allocators import AllocContext
from pcbench.backends.fake import FakeBackend
from pcbench.testing import Harness, method

B, N, POOL, NPROBE = 4, 16, 12, 32


@pytest.mark.parametrize("mode", ["exact", "bernoulli"])
def test_probes_are_not_in_the_ledger(mode):
    h = Harness(method("oracle", extra={"n_probe": NPROBE}), {i: (i % 5) / 4 for i in range(120)},
                train_batch=B, mode=mode)
    batch, row = h.run_step()
    probe, counted = h.backend.calls
    assert [(r.k, r.kind) for r in probe] == [(NPROBE, "plain")] * POOL
    assert [(r.k, r.kind) for r in counted] == [(N, "plain")] * B
    assert row["rollouts/step"] == row["rollouts/trained"] == h.ledger.cumulative == B * N
    assert row["alloc/probe_rollouts"] == POOL * NPROBE
    assert all(pl[1] == 1 for g in batch.groups for pl in g.parts[0].payload)  # probes never train


def test_picks_the_candidates_with_the_highest_pass_rate_variance():
    rates = {i: (0.0, 0.25, 0.5, 0.75, 1.0, 0.125)[i % 6] for i in range(120)}
    h = Harness(method("oracle"), rates, train_batch=B)
    batch, _ = h.run_step()
    pool = [r.prompt_id for r in h.backend.calls[0]]
    score = lambda pid: rates[pid] * (1 - rates[pid])
    best = sorted((score(pid) for pid in pool), reverse=True)[:B]
    assert sorted((score(g.prompt_id) for g in batch.groups), reverse=True) == best


def test_refuses_a_backend_that_cannot_generate_outside_the_ledger():
    class RemoteBackend(FakeBackend):
        pass

    h = Harness(method("oracle"), {i: 0.5 for i in range(60)}, train_batch=B)
    ctx = AllocContext(h.stream, RemoteBackend({i: 0.5 for i in range(60)}), h.ledger, 1)
    with pytest.raises(RuntimeError, match="runs on backend=embedded only"):
        h.alloc.next_batch(ctx)
    assert h.ledger.cumulative == 0 and h.stream._pos == 0  # refused before any rollout or draw


def test_opt_in_backend_attribute_is_honoured():
    class Opted(FakeBackend):
        uncounted_generate = True

    h = Harness(method("oracle"), {i: 0.5 for i in range(60)}, train_batch=B)
    batch = h.alloc.next_batch(AllocContext(h.stream, Opted({i: 0.5 for i in range(60)}), h.ledger, 1))
    assert len(batch.groups) == B


@pytest.mark.parametrize("kw,msg", [(dict(extra={"n_probe": 1}), "n_probe"),
                                    (dict(gen_batch_size=2), "gen_batch_size")])
def test_impossible_settings_fail_with_a_fix(kw, msg):
    with pytest.raises(ValueError, match=msg):
        Harness(method("oracle", **kw), {0: 0.5}, train_batch=B)
