"""The checkpoint and task of tests/verl/test_embedded_on_verl.py (one checkpoint, two backends),
built once per test session into a folder every xdist worker sees (tests/conftest.py's
`agreement_checkpoint`): tests/embedded/test_agreement_checkpoint.py builds it on the worker that
does not run the Ray/vLLM unit, early in the session, so the verl tests find it ready.

The checkpoint is the embedded default model (hidden 128, head_dim 32) warm-started in three stages
so that each tier lands where the verl tests need it whatever the floats: SFT until add33 passes at
15%, 1,000 consolidation steps on add11-add32 (add22 and add32 mostly solved: too-easy pilots, p = 1
prompts evicted at the epoch end), and a top-up back to add33 at 15% (kept when 1-6 of 8 pilots pass,
deferred when none does). The task: a 60-prompt pool of add22 / add32 / add33 (5 rounds of 12
candidates per epoch, a round or more per step: an epoch ends within 6 steps; a smaller pool left too
few prompts after the evictions to fill a batch) and 96 validation problems.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

EMBEDDED = ["model.warmstart.stop_tier=add33", "model.warmstart.stop_pass_rate=0.15", "data.tiers.add44=0.0",
            "model.warmstart.stop_measure=sampled", "model.warmstart.probe_prompts=64", "model.warmstart.check_every=20",
            "model/warmstart=stop_only", "model.warmstart.consolidate.steps=1000",
            "+data.tiers.add32=0.3", "data.train_size=60", "data.val_size=96", "data.val_samples=1"]


def build(root: Path) -> dict:
    """The exported warm start (root/model), the task's parquet (root/data) and one parquet per tier of
    its validation problems, each repeated to >= 2,000 samples (root/tiers); each step reuses what is
    there (the export and the data are keyed and locked by pcbench/backends/verl/from_embedded.py)."""
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.verl.agreement import tier_repeats, write_tier_files
    from pcbench.backends.verl.from_embedded import compose_embedded, make_data, make_model

    cfg = OmegaConf.create({"paths": {"cache": str(root / "cache")}, "model": {"embedded": EMBEDDED},
                            "data": {"embedded": EMBEDDED}})
    make_model(root / "model", cfg)
    make_data(root / "data", cfg)
    ecfg = compose_embedded(EMBEDDED, root / "cache")
    sets = tier_repeats(SyntheticTask.for_run(ecfg).val)
    return {"root": root, "ecfg": ecfg, "sets": sets, "tier_files": write_tier_files(sets, root / "tiers")}
