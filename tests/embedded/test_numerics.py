"""Same command, same numbers: the embedded path's floats do not depend on the CPU's capability.

The pin (pcbench/numerics.py) fixes ATen's kernels to AVX2 and MKL's CNR branch to AVX2. These
tests show, on whatever machine runs them, that the capability changes the numbers when it is
not pinned (so the tests can fail), that the pinned run equals a run forced to AVX2 by hand, and
that a machine whose arithmetic differs from the reference one is told so in one line.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcbench import numerics

REPO = Path(__file__).resolve().parents[2]
HAS_AVX2 = "avx2" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else False
# a short warm start and 2 GRPO steps: the whole embedded path (SFT, sampling, reward, PPO, evaluation)
SHORT = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null",
         "model.warmstart.steps=40", "model/warmstart=stop_only", "model.warmstart.consolidate.steps=10", "data.train_size=240",
         "data.val_size=32", "data.sft_size=1000", "train.steps=2", "train.batch_size=4",
         "train.mini_batch_size=2", "rollout.n=8", "train.eval_every=1", "logging.progress=false", "train.threads=1"]

RUN = """
import json, sys, hashlib
from pathlib import Path
from pcbench import numerics
from pcbench.config import compose_cfg
from pcbench.runs import execute, load_backend
from pcbench.backends.embedded.reference import metrics_digest
out = Path(sys.argv[1]); over = json.loads(sys.argv[2])
cfg = compose_cfg([*over, f"paths.results={out}", f"paths.cache={out / 'cache'}", "method=grpo"])
execute(cfg, load_backend(cfg))
(folder,) = [p for p in (out / str(cfg.experiment)).iterdir() if p.is_dir()]
rows = [json.loads(l) for l in (folder / "metrics.jsonl").read_text().splitlines()]
machine = json.loads((folder / "machine.json").read_text())[-1]
print(json.dumps({"metrics": metrics_digest(rows), "warmstart": machine["warmstart_digest"],
                  "capability": machine["capability"], "fingerprint": machine["fingerprint"]}))
"""


def run_short(tmp_path: Path, name: str, env: dict) -> dict:
    keep = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "PCBENCH_NUMERICS")}
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path / name), json.dumps(SHORT)], cwd=REPO,
                          env={**keep, **env, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pin_sets_what_the_user_did_not():
    env = {}
    assert numerics.pin(env) == numerics.PINS and env == numerics.PINS
    env = {"ATEN_CPU_CAPABILITY": "default"}
    assert numerics.pin(env)["ATEN_CPU_CAPABILITY"] == "default"  # the user's choice stands
    env = {"PCBENCH_NUMERICS": "native"}
    assert numerics.pin(env) == {} and env == {"PCBENCH_NUMERICS": "native"}



def test_this_process_is_pinned():
    """pcbench is imported before any torch operation here (conftest), so the pin took effect."""
    import torch

    if (os.environ.get("ATEN_CPU_CAPABILITY", "avx2") != "avx2" or os.environ.get("PCBENCH_NUMERICS") == "native"
            or not HAS_AVX2):
        pytest.skip("the caller chose the arithmetic (ATEN_CPU_CAPABILITY or PCBENCH_NUMERICS=native), or no AVX2 here")
    assert torch.backends.cpu.get_cpu_capability() == "AVX2"
    assert os.environ["MKL_CBWR"] == "AVX2"


def test_mismatch_is_one_line_naming_capability_and_blas(monkeypatch):
    here = {**numerics.reference()["machine"], "fingerprint": "0" * 12, "capability": "DEFAULT"}
    line = numerics.mismatch(here)
    assert line is not None and "\n" not in line
    assert "CPU capability DEFAULT" in line and here["blas"] in line
    assert numerics.mismatch(numerics.reference()["machine"]) is None



def test_mismatch_names_the_cpus_when_only_the_cpu_differs():
    """Two CPUs with the same pins, libraries and deterministic products should compute alike; when
    they do not, the line says so and asks for a report instead of listing identical settings."""
    ref = numerics.reference()["machine"]
    other = "Intel(R) Xeon(R) Processor" if "AMD" in ref["cpu"] else "AMD EPYC"
    line = numerics.mismatch({**ref, "fingerprint": "0" * 12, "cpu": other})
    assert line is not None and "\n" not in line
    assert other in line and ref["cpu"] in line and "same pins" in line
    assert "same pins" not in numerics.mismatch({**ref, "fingerprint": "0" * 12, "capability": "DEFAULT"})


def test_another_vendor_is_recorded_beside_the_reference_and_a_new_reference_drops_it(tmp_path, monkeypatch):
    """`reference write --other` keeps the reference and adds this machine's identity; a run there is
    told whose numbers it computes; `reference write` (the numbers changed) drops the stale entry."""
    from pcbench.backends.embedded import reference as refcli

    base = {"machine": numerics.reference()["machine"], "warmstart": {"digest": "a" * 16},
            "grpo_first_steps": {"digest": "b" * 16}}
    monkeypatch.setattr(numerics, "REFERENCE", tmp_path / "reference.json")
    numerics.REFERENCE.write_text(json.dumps(base))
    other = {"machine": {**base["machine"], "cpu": "Other CPU", "fingerprint": "f" * 12},
             "warmstart": {"digest": "c" * 16}, "grpo_first_steps": {"digest": "d" * 16}}
    refcli.write(other, other=True)
    assert numerics.known("f" * 12)["warmstart"]["digest"] == "c" * 16
    assert numerics.known(base["machine"]["fingerprint"])["warmstart"]["digest"] == "a" * 16
    assert numerics.known("0" * 12) is None
    line = numerics.mismatch(other["machine"])
    assert "computes as the Other CPU" in line and "c" * 16 in line and "\n" not in line
    refcli.write(other, other=True)  # the same CPU again replaces its entry
    assert len(numerics.reference()["other_machines"]) == 1
    refcli.write({**base, "warmstart": {"digest": "e" * 16}}, other=False)
    assert "other_machines" not in numerics.reference() and numerics.known("f" * 12) is None

@pytest.mark.skipif(not HAS_AVX2, reason="the pin is AVX2; this CPU has none")
def test_branch_fingerprints_rerun_the_pinned_arithmetic_in_fresh_processes():
    """`reference machine` reruns the probe under MKL's pinned and COMPATIBLE branches in fresh
    processes: both equal this (pinned) process's fingerprint, because no product of the embedded
    model reaches MKL (tests/embedded/test_detmm.py shows the probe does tell MKL's branches apart)."""
    if os.environ.get("ATEN_CPU_CAPABILITY", "avx2") != "avx2" or os.environ.get("PCBENCH_NUMERICS") == "native":
        pytest.skip("the caller chose the arithmetic")
    fps = numerics.branch_fingerprints()
    assert fps["AVX2"] == fps["COMPATIBLE"] == numerics.fingerprint(), fps


@pytest.mark.slow
@pytest.mark.skipif(not HAS_AVX2, reason="the pin is AVX2; this CPU has none (a run says so in one line)")
def test_pinned_numbers_do_not_depend_on_capability_and_unpinned_ones_do(tmp_path):
    pinned = run_short(tmp_path, "pinned", {})
    # ATen forced to AVX2 by hand, and MKL on another branch (the one that differed between vendors)
    by_hand = run_short(tmp_path, "avx2", {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"})
    default = run_short(tmp_path, "default", {"ATEN_CPU_CAPABILITY": "default"})
    assert pinned["capability"] == "AVX2" and default["capability"] == "DEFAULT"
    # the pinned run is the AVX2 machine's run, number for number (weights, then every logged metric),
    # whatever MKL's branch: no product of the embedded model reaches MKL (pcbench/detmm.py)
    assert (pinned["warmstart"], pinned["metrics"]) == (by_hand["warmstart"], by_hand["metrics"])
    # and the capability does change the floats: the comparison above can fail
    assert default["warmstart"] != pinned["warmstart"] and default["fingerprint"] != pinned["fingerprint"]
