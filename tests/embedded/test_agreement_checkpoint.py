"""The checkpoint of the backend-agreement tests (tests/verl/agreement_checkpoint.py) lands where those
tests need it: add22 and add32 mostly solved (too-easy pilots, evictions), add33 inside the paper's
band (kept pilots) and below it (deferred ones). Built here, on the worker without the Ray/vLLM unit,
once per session (tests/conftest.py's agreement_checkpoint): the verl tests then find it ready."""

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def test_the_agreement_checkpoint_lands_where_the_verl_tests_need_it(agreement_checkpoint):
    from pcbench.backends.embedded.evaluate import exact_pass_rates
    from pcbench.backends.embedded.export import read_export_info
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import cache_key, load_or_train

    ecfg, tok = agreement_checkpoint["ecfg"], CharTokenizer()
    task = SyntheticTask.for_run(ecfg)
    model, report = load_or_train(ecfg, task, tok, log=lambda *_: None)
    assert report["stop"]["reached_at"] is not None, report["stop"]["trace"][-3:]
    assert report["consolidation_steps"] == 1000
    # the exported folder is this warm start (the verl launches read it; a stale export is refused)
    assert read_export_info(agreement_checkpoint["root"] / "model")["warmstart"] == cache_key(ecfg)
    rates = exact_pass_rates(model, tok, task.val, 1.0, 1.0)  # (96,) at the RL settings, no sampling noise
    tiers = {t: float(np.mean([r for r, p in zip(rates, task.val) if p.tier == t])) for t in ("add22", "add32", "add33")}
    print(f"agreement checkpoint: {report['sft_steps']} SFT + {report['consolidation_steps']} + "
          f"{report['top_up_steps']} top-up steps; exact pass rates {tiers}")
    assert tiers["add22"] > 0.7 and tiers["add32"] > 0.7 and 0.02 < tiers["add33"] < 0.5, tiers
