"""The paper's pilot resolutions on the embedded path: n=64 (16 + 48) and n=128 (32 + 96) with the
paper's ratios (3x candidates, n_pilot = n/4, staleness 4), and every step's ledger following
the paper's cost formula: rounds x candidates x n_pilot pilot rollouts plus one commit of
n_commit per trained prompt (384 x n_pilot + 128 x n_commit at one round, the paper's steady state).

The small warm start solves few sums, so the band is widened to keep every pilot (lower 0): what
is tested is the count of every rollout, not which prompts are kept."""

import pytest

from pcbench.backends.embedded.trainer import EmbeddedRun
from pcbench.rundir import RunDir

SMALL = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null",
         "model.warmstart.steps=250", "model/warmstart=stop_only", "data.sft_size=1000", "data.train_size=240", "data.val_size=8", "data.ood_size=4",
         "train.batch_size=4", "train.mini_batch_size=2", "train.threads=1", "data.tiers.add33=0.0",
         "data.val_mode=exact"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("warmstart")


def steps(cache, tmp_path, *overrides, n_steps=3):
    from pcbench.config import compose_cfg
    from pcbench.config import check_config

    cfg = compose_cfg([*SMALL, f"paths.cache={cache}", f"paths.results={tmp_path}", *overrides])
    check_config(cfg)
    run = EmbeddedRun(cfg, RunDir(tmp_path / "run", resumed=False), log=lambda *_: None)
    return cfg, [run.train_step() for _ in range(n_steps)]


@pytest.mark.parametrize("n,pilot,commit", [(64, 16, 48), (128, 32, 96)])
def test_pilot_commit_ledger_follows_the_paper_formula(cache, tmp_path, n, pilot, commit):
    cfg, rows = steps(cache, tmp_path, "method=pilot_commit", f"rollout.n={n}", "method.lower=0.0")
    m, batch = cfg.method, int(cfg.train.batch_size)
    assert (m.n_pilot, m.n_commit, m.gen_batch_size, m.staleness) == (pilot, commit, 3 * batch, 4)
    for r in rows:
        assert r["alloc/epoch_ends"] == 0
        assert r["rollouts/pilot"] == r["rollouts/rounds"] * 3 * batch * pilot
        assert r["rollouts/commit"] == batch * commit  # one commit per trained prompt
        assert r["rollouts/step"] == r["rollouts/pilot"] + r["rollouts/commit"]
        assert r["rollouts/trained"] == batch * n  # each group: its pilot and its commit
    steady = rows[-1]  # the buffer is full after step 1: one round, the paper's 384 n_pilot + 128 n_commit
    assert steady["rollouts/rounds"] == 1 and steady["rollouts/step"] == 3 * batch * pilot + batch * commit


@pytest.mark.parametrize("method,n", [("grpo", 64), ("dapo", 64), ("grpo", 128)])
def test_baselines_pay_their_formula_at_paper_group_sizes(cache, tmp_path, method, n):
    cfg, rows = steps(cache, tmp_path, f"method={method}", f"rollout.n={n}", n_steps=2)
    batch = int(cfg.train.batch_size)
    for r in rows:
        per_round = batch * n if method == "grpo" else 3 * batch * n
        assert r["rollouts/step"] == r["rollouts/plain"] == r["rollouts/rounds"] * per_round
        assert r["rollouts/trained"] == batch * n and r["alloc/groups"] == batch
