"""pcbench.predict: bad input is one line and exit 2; the report from a known probe; one real probe;
the pool card of the probed prompts in every format (exact on embedded, labelled sampled on verl)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from pcbench import predict
from pcbench.analysis.mixed_groups_prediction import Setup

REPO = Path(__file__).resolve().parents[2]
# a tiny embedded setup whose warm start trains in seconds (tests/embedded/test_exact_eval.py's SMALL,
# with every tier of data=synthetic and 100 SFT steps: the card's numbers do not matter here)
TINY = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null",
        "model.warmstart.steps=100", "model/warmstart=stop_only", "data.train_size=240", "data.val_size=48",
        "data.sft_size=1000", "rollout.n=8", "data.ood_size=8"]
CARD_HEAD = ["tier", "n", "mean", "solved", "near-solved", "band", "hard", "never"]


@pytest.mark.parametrize("argv, says", [
    (["--k", "1"], "k >= 2"),
    (["--checkpoint", "/no/such/file.pt"], "no such checkpoint"),
    (["method=no_such_method"], "config error"),
    (["--pilots", "1"], "2 <= size"),
    (["--prompts", "0"], "at least one prompt"),
    (["backend=verl", "model=qwen2.5-math-1.5b", "data=deepmath"], "embedded-verl only"),
])
def test_bad_input_is_one_line_exit_2(argv, says, capsys):
    assert predict.main(argv + ["--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pcbench-predict: ") and says in err[0]


def test_report_from_a_known_probe():
    rates = np.array([0.0] * 30 + [1.0] * 10 + [0.5] * 60)
    rep = predict.predict(rates, Setup(n=32, batch=16), pilots=[4, 8, 16], n_boot=20)
    rows = {(r["method"], r["pilot"]): r for r in rep["rows"]}
    assert rows[("grpo", None)]["zero_variance"] == pytest.approx(0.4, abs=1e-6)
    for key in (("dapo", None), ("pilot_commit", 8)):
        r = rows[key]
        assert r["low"] <= r["predicted"] <= r["high"]
    assert rep["recommendation"]["method"] in {"grpo", "dapo", "pilot_commit"}
    for fmt in ("text", "md"):
        rep["facts"] = {"prompts": 100, "pool": 100, "k": 32, "checkpoint": "x", "seconds": 1.0}
        assert "recommended" in predict.render(rep, fmt)
    assert json.loads(predict.render(rep, "json"))["rows"][0]["method"] == "grpo"


def test_every_format_shows_the_exact_pool_card_of_the_probed_prompts(tmp_path, capsys):
    argv = [*TINY, f"paths.cache={tmp_path}", "--prompts", "32", "--k", "4", "--pilots", "2,4", "--no-progress"]
    assert predict.main(argv) == 0  # trains the tiny warm start once, then probes 32 prompts
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("pool card of the probed prompts"))
    assert "(pass rates: exact, at T 1, top_p 1)" in lines[at] and lines[at + 1].split() == CARD_HEAD
    rows = [line.split() for line in lines[at + 2:at + 6]]
    assert [r[0] for r in rows] == ["add22", "add33", "add44", "pool"] and rows[-1][1] == "32"
    assert predict.main(argv + ["--format", "md"]) == 0
    assert "| " + " | ".join(CARD_HEAD) + " |" in capsys.readouterr().out
    assert predict.main(argv + ["--format", "json"]) == 0
    card = json.loads(capsys.readouterr().out)["card"]
    assert card["measure"] == "exact" and card["tiers"]["all"]["n"] == 32
    assert sum(card["tiers"][t]["n"] for t in ("add22", "add33", "add44")) == 32


def test_the_verl_probe_card_is_labelled_sampled(monkeypatch):
    """No exact rates through vLLM: the card counts the k sampled rollouts and says so."""
    cfg = predict._compose(["backend=verl", "model=embedded-verl", "data=embedded-verl"])
    monkeypatch.setattr(predict, "verl_probe", lambda cfg, probs, tok, k, seed: np.linspace(0, 1, len(probs)))
    rates, facts, card = predict.probe(cfg, 16, 4, seed=0, checkpoint=None, progress=False)
    assert card["measure"] == "sampled, k=4" and card["tiers"]["all"]["n"] == facts["prompts"] == 16
    assert card["tiers"]["all"]["mean"] == pytest.approx(rates.mean(), abs=1e-4)


@pytest.mark.slow
def test_embedded_default_probe_on_the_default_warm_start(capsys, default_warmstart_cache):
    """The default probe a user runs first, on the session's default warm start (tests/conftest.py:
    trained once for every test that needs it, by the fixture itself)."""
    assert predict.main([f"paths.cache={default_warmstart_cache}", "--prompts", "32", "--format", "json",
                         "--no-progress"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["facts"]["prompts"] == 32 and {r["method"] for r in rep["rows"]} == {"grpo", "dapo", "pilot_commit"}


@pytest.mark.slow
@pytest.mark.verl_cpu
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM (pip install -e '.[verl-cpu]')")
def test_verl_probe_through_vllm_on_embedded_verl(capsys, default_warmstart_cache):
    """The verl path's probe: k rollouts per prompt through vLLM (CPU build) on the exported warm start
    (the session's default warm start, tests/conftest.py, exported into the same cache)."""
    code = predict.main(["backend=verl", "model=embedded-verl", "data=embedded-verl", f"paths.cache={default_warmstart_cache}",
                         "--prompts", "16", "--k", "8", "--format", "json", "--no-progress"])
    assert code == 0
    rep = json.loads(capsys.readouterr().out)  # stdout holds the report only (the export's messages go to stderr)
    assert rep["facts"]["checkpoint"].startswith("vLLM on") and rep["facts"]["k"] == 8
    assert rep["card"]["measure"] == "sampled, k=8" and rep["card"]["tiers"]["all"]["n"] == 16
    assert 0.0 <= rep["probe"]["mean_pass_rate"] <= 1.0
