"""The default warm start a user's main job starts from: solved, band and never-solved prompts
on any CPU, and on a machine with the reference arithmetic the committed weights and first GRPO steps
(pcbench/reference.json), so a change of numbers never goes unnoticed."""

import pytest

from pcbench import numerics
from pcbench.backends.embedded import reference

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def default(default_warmstart_cache):  # tests/conftest.py: shared with the default probes
    return reference.warmstart(default_warmstart_cache)


def test_default_warm_start_gives_solved_band_and_never_solved_prompts(default):
    """add22 nearly solved, add33 in the band, add44 never: GRPO gets all-right, all-wrong and mixed
    groups. The prelude design (conf/model/warmstart/prelude.yaml) put add22 at 0.94-0.98 and 7-19%
    of the pool at p >= 0.99 over 6 warm starts that differ in float noise or SFT order; its seed-0
    warm start has p = 1 on 17-18% of the sampled histogram both pinned and with ATen forced to
    AVX-512 (docs/numerics.md). The bounds are wider than that spread, and the upper ones keep what
    broke before the competence stop: a thread-count change moved the warm start past add33's
    transition (p = 1 on 73% of prompts) and DAPO failed at step 2. The stop-alone design this one
    replaced failed the add22 bound under forced AVX-512 (0.68)."""
    assert default["stop"]["reached_at"] is not None, default["stop"]["trace"][-3:]
    tiers, hist = default["per_tier"], default["histogram"]
    assert tiers["add22"] >= 0.9 and 0.25 <= tiers["add33"] <= 0.6 and tiers["add44"] <= 0.01, tiers
    mixed = 1.0 - hist["p=0"] - hist["p=1"]
    near_solved = hist["p=1"] + hist["[7/8,1)"]
    assert hist["p=0"] >= 0.2 and 0.05 <= hist["p=1"] <= 0.3 and near_solved <= 0.5 and mixed >= 0.4, hist


def test_default_warm_start_and_first_grpo_steps_match_the_reference(default, default_warmstart_cache, tmp_path):
    """Against the reference machine's digests, or those of a recorded other machine this one
    computes as (pcbench/reference.json's other_machines; none since pcbench's own matrix products)."""
    ref = numerics.known(numerics.fingerprint())
    if ref is None:
        pytest.skip(numerics.mismatch())
    assert default["digest"] == ref["warmstart"]["digest"], "the default warm start changed: rerun the README's " \
        "main job and `python -m pcbench.backends.embedded.reference write`, and say so in the benchmark files"
    assert reference.grpo_first_steps(default_warmstart_cache, tmp_path) == ref["grpo_first_steps"]["digest"]
