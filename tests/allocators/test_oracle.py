"""Oracle rules: uncounted probes of the current pass rate, the top-p(1-p) batch trained at GRPO cost."""

import pytest

from pcbench.allocators import UNCOUNTED_PROBE, AllocContext, MissingCapability
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


def test_refuses_a_backend_without_the_uncounted_probe_capability():
    class RemoteBackend(FakeBackend):  # e.g. verl's: rollouts are queued for training as they are made
        capabilities = frozenset()

    h = Harness(method("oracle"), {i: 0.5 for i in range(60)}, train_batch=B)
    ctx = AllocContext(h.stream, RemoteBackend({i: 0.5 for i in range(60)}), h.ledger, 1)
    with pytest.raises(MissingCapability, match="oracle: needs a backend with uncounted_probe .*RemoteBackend does "
                                                "not declare it"):
        h.alloc.next_batch(ctx)
    assert h.ledger.cumulative == 0 and h.stream._pos == 0  # refused before any rollout or draw


def test_a_backend_declaring_the_capability_runs_it():
    class Other:  # not a FakeBackend: only the declaration counts, not the class or its name
        capabilities = frozenset({UNCOUNTED_PROBE})

        def __init__(self):
            self.inner = FakeBackend({i: 0.5 for i in range(60)})

        def generate(self, requests):
            return self.inner.generate(requests)

    h = Harness(method("oracle"), {i: 0.5 for i in range(60)}, train_batch=B)
    batch = h.alloc.next_batch(AllocContext(h.stream, Other(), h.ledger, 1))
    assert len(batch.groups) == B


@pytest.mark.parametrize("kw,msg", [(dict(extra={"n_probe": 1}), "n_probe"),
                                    (dict(gen_batch_size=2), "gen_batch_size")])
def test_impossible_settings_fail_with_a_fix(kw, msg):
    with pytest.raises(ValueError, match=msg):
        Harness(method("oracle", **kw), {0: 0.5}, train_batch=B)
