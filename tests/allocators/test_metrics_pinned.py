"""Every logged metric of every built-in allocator, pinned: 8 steps against the FakeBackend
(bernoulli, fixed seeds) must log exactly the rows in metrics_pinned.json.

The bookkeeping every allocator shares (trained-rollout count, zero-variance counters) lives
in the base class and StepBatch; this pins that moving it there changed no name and no value.
One addition, on purpose: alloc/zero_variance_groups (all-correct + all-wrong trained groups)
is now logged by every allocator, not only grpo/mopps/pods/oracle; it is checked, not pinned,
where the pinned rows lack it. Regenerate only for an intended change, and say why in the commit:

    python tests/allocators/test_metrics_pinned.py   # rewrites metrics_pinned.json
"""

import json
import math
from pathlib import Path

import pytest

from pcbench.testing import Harness, method

PINNED = Path(__file__).with_name("metrics_pinned.json")
STEPS, B = 8, 4
PILOT = dict(n_pilot=4, n_commit=12)
CONFIGS = {
    "grpo": {}, "dapo": {}, "pilot_commit": PILOT,
    "speed_rl": dict(PILOT, buffer_sampling="random"),
    "greso": dict(extra={"adapt_step": 0.05}),
    "pods": dict(extra={"n_generate": 24}),
    "mopps": {},
    "pilot_commit_bayes": PILOT,
    "oracle": dict(extra={"n_probe": 8}),
}
# every pass-rate level, so groups are all-correct, all-wrong and mixed
RATES = {i: (0.0, 0.25, 0.5, 1.0, 0.75, 0.125)[i % 6] for i in range(90)}


def rows(name: str) -> list[dict]:
    h = Harness(method(name, **CONFIGS[name]), RATES, train_batch=B, seed=3, mode="bernoulli")
    out = []
    for _ in range(STEPS):
        batch, row = h.run_step()
        out.append({**row, "groups": [[g.prompt_id, g.size] for g in batch.groups]})
    return out


def dump(pinned: dict) -> str:
    """One step per line, so a diff shows which allocator and step changed."""
    blocks = [f"{json.dumps(name)}: [\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in steps) + "\n]"
              for name, steps in pinned.items()]
    return "{\n" + ",\n".join(blocks) + "\n}\n"


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


ADDED = "alloc/zero_variance_groups"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_logged_metrics_are_pinned(name):
    want = json.loads(PINNED.read_text())[name]
    got = json.loads(json.dumps(rows(name)))
    assert len(got) == len(want)
    for step, (g, w) in enumerate(zip(got, want), start=1):
        assert g[ADDED] == g["alloc/groups_all_correct"] + g["alloc/groups_all_wrong"]
        if ADDED not in w:
            del g[ADDED]
        assert sorted(g) == sorted(w), f"{name} step {step}: metric names differ: {set(g) ^ set(w)}"
        bad = {k: (g[k], w[k]) for k in w if not _same(g[k], w[k])}
        assert not bad, f"{name} step {step}: (now, pinned) {bad}"


if __name__ == "__main__":
    PINNED.write_text(dump({name: rows(name) for name in sorted(CONFIGS)}))
    print(f"wrote {PINNED}")
