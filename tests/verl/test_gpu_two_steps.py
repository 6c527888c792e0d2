"""GPU only: the tiny verl run (model=tiny-verl data=tiny-verl) on one CUDA GPU with vLLM.

The same model and data as the CPU end-to-end tests (tests/verl/test_cpu_end_to_end.py): a
random-init 2-layer Qwen2 (head_dim 32) with an offline byte-level BPE tokenizer, and generated
sums, both built by the entry on first use. backend.platform=gpu: verl's own CUDA platform, the
vLLM CUDA build, flash-attn-free (the tiny model asks for sdpa), sleep mode and CUDA IPC weight
transfer as on a cluster. Skipped without CUDA (tests/conftest.py) or without vLLM.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcbench.backends.verl.watchdog import kill_tree

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("method", ["pilot_commit", "grpo"])
def test_three_verl_steps_on_one_gpu(tmp_path, method):
    pytest.importorskip("vllm")
    cmd = [sys.executable, "-m", "pcbench.run", "backend=verl", "model=tiny-verl", "data=tiny-verl",
           f"method={method}", "backend.platform=gpu", "backend.watchdog_s=600", "backend.ray_num_cpus=8",
           f"paths.results={tmp_path}/results", f"paths.cache={tmp_path}/cache", f"hydra.run.dir={tmp_path}/hydra"]
    with open(tmp_path / "log.txt", "w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    try:
        rc = proc.wait(timeout=1500)
    finally:
        kill_tree(proc.pid, {proc.pid})
    assert rc == 0, (tmp_path / "log.txt").read_text()[-6000:]
    [run] = [p for p in (tmp_path / "results" / "verl").iterdir() if p.is_dir()]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert "val/acc" in rows[0] and "val/arith_test/acc" in rows[3]
    assert json.loads((run / "summary.json").read_text())["status"] == "finished"
    for r in rows[1:]:
        assert r["rollouts/step"] == r["verl/generated_sequences"] > 0
    if method == "grpo":
        assert [r["rollouts/step"] for r in rows[1:]] == [32, 32, 32]
    assert rows[-1]["cumulative_rollouts"] == sum(r["rollouts/step"] for r in rows[1:])
    for step in (2, 3):
        assert (run / "checkpoint" / f"global_step_{step}" / "pcbench.pt").exists()
