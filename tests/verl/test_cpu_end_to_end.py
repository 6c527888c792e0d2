"""Real verl on CPU: `python -m pcbench.run backend=verl model=tiny-verl data=tiny-verl method=pilot_commit`
end to end (Ray, TransferQueue, FSDP2 actor on gloo, a vLLM CPU replica, the `pcbench` trainer mode,
pcbench's reward), 3 steps with validation at steps 0 and 3, killed and resumed on the way.

The run folder must be complete, and the ledger's rollouts per step must equal the sequences
verl generated that step, counted from the trajectories verl's agent loop wrote to TransferQueue
(`verl/generated_sequences`, rollout.py), not from the allocator's requests. The run is killed
right after its step-2 checkpoint and started again with the same command, and must finish step 3
continuing the ledger, stream and metrics exactly. DAPO on the real verl path (its ledger against
verl's count, its run folder and checkpoint) is tests/verl/test_embedded_on_verl.py's n = 32 run;
GRPO's is the SmolLM2 run (tests/verl/test_pretrained.py) and the 2-node fault test
(tests/slurm/test_multinode_verl.py); this file ran them too until the CI budget (issue 29).

Needs vLLM's CPU build (pip install -e '.[test,verl-cpu]', README); each launch is ~2-2.5 min of
start-up on 2 cores. Every launch is bounded (the entry's watchdog, backend.watchdog_s, and a
hard timeout here) and its whole process tree is killed afterwards.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from pcbench.backends.verl.watchdog import read_heartbeat
from tests.verl.launching import launch as launch_bounded

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.verl_cpu, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                 reason="needs vLLM's CPU build: pip install -e '.[test,verl-cpu]' (README)")]
LAUNCH_TIMEOUT_S = 1200  # the kill-and-resume run: 295 s in CI at b04ed60 (4x)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny-verl-cache")  # model + data, built once by the first launch


def command(tmp: Path, cache: Path, method: str) -> list[str]:
    return [sys.executable, "-m", "pcbench.run", "backend=verl", "model=tiny-verl", "data=tiny-verl",
            f"method={method}", "backend.platform=cpu", "backend.watchdog_s=420", f"paths.results={tmp}/results",
            f"paths.cache={cache}", f"hydra.run.dir={tmp}/hydra"]


def launch(cmd: list[str], log: Path, until=None) -> str:
    def stage() -> str:
        results = Path(next(a for a in cmd if a.startswith("paths.results=")).split("=", 1)[1])
        return f" in stage {read_heartbeat(next(iter(results.rglob('heartbeat.json')), Path('-'))).get('stage')!r}"

    return launch_bounded(cmd, log, cwd=REPO, timeout_s=LAUNCH_TIMEOUT_S, until=until, why=stage)


def run_folder(tmp: Path) -> Path:
    [run] = [p for p in (tmp / "results" / "verl").iterdir() if p.is_dir()]
    return run


def checkpoint_state(run: Path, step: int) -> dict:
    return torch.load(run / "checkpoint" / f"global_step_{step}" / "pcbench.pt", weights_only=False)


def check_run(run: Path, log: Path) -> list[dict]:
    """The run folder of a finished 3-step run; returns its metrics rows."""
    tail = log.read_text()[-4000:]
    assert (run / "config.yaml").exists() and (run / "verl_config.yaml").exists()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3], tail
    assert [("val/acc" in r) for r in rows] == [True, False, False, True]
    assert "val/arith_test/acc" in rows[3]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["steps"] == 3 and summary["backend"] == "verl"
    for prev, r in zip(rows, rows[1:]):
        # the ledger (what the allocator asked for) against verl's own count of generated sequences
        assert r["rollouts/step"] == r["verl/generated_sequences"] > 0, r
        assert r["cumulative_rollouts"] == prev["cumulative_rollouts"] + r["rollouts/step"]
    for step in (2, 3):  # every method's checkpoints carry pcbench's state
        assert checkpoint_state(run, step)["ledger"]["cumulative"] == rows[step]["cumulative_rollouts"]
    print(f"{run.name}: rollouts/step " + ", ".join(f"{r['rollouts/step']} (verl {r['verl/generated_sequences']})"
                                                    for r in rows[1:]))
    return rows


def test_pilot_commit_killed_after_step_2_checkpoint_resumes_at_step_3(tmp_path, cache):
    log, cmd = tmp_path / "log.txt", command(tmp_path, cache, "pilot_commit")

    def step2_saved() -> bool:
        hits = list((tmp_path / "results").rglob("checkpoint/latest_checkpointed_iteration.txt"))
        return bool(hits) and hits[0].read_text().strip() == "2"

    assert launch(cmd, log, until=step2_saved) == "stopped", log.read_text()[-6000:]
    run = run_folder(tmp_path)
    assert not (run / "summary.json").exists()
    saved = checkpoint_state(run, 2)
    assert launch(cmd, log) == "exit 0", log.read_text()[-6000:]  # the same command: resumes
    rows = check_run(run, log)
    # continued from the step-2 state, not restarted: ledger, stream position, evictions
    assert rows[2]["cumulative_rollouts"] == saved["ledger"]["cumulative"]
    after = checkpoint_state(run, 3)
    s2, s3 = saved["stream"], after["stream"]
    if s3["epoch"] == s2["epoch"]:
        assert s3["pos"] == s2["pos"] + 12 * rows[3]["alloc/rounds"]  # 12 fresh candidates per round
    assert set(saved["allocator"]["evicted"]) <= set(after["allocator"]["evicted"])
    for r in rows[1:]:  # pilots that fell outside the band are discarded, and counted
        assert r["rollouts/step"] == r["rollouts/pilot"] + r["rollouts/commit"]
