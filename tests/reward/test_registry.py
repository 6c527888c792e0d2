"""Rewards by name (pcbench/reward/registry.py): an installed package's reward is found through the
`pcbench.rewards` entry points, runs in the process guard (bounded, crash-proof), and its `acc`
reaches verl's reward function; a bad name fails at composition with one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pcbench.reward import named, registry, verl_compute_score
from pcbench.reward import procguard
from pcbench.reward.procguard import ProcessGuard

REPO = Path(__file__).resolve().parents[2]

MODULE = '''
import sys, time

def exact(response, ground_truth, extra_info):
    return response.strip().rsplit(" ", 1)[-1] == ground_truth      # a plain bool

def graded(response, ground_truth, extra_info):
    return {"acc": ground_truth in response, "score": 0.5, "pred": sys.argv[0]}

def spins(response, ground_truth, extra_info):
    while True:
        pass

def sleeps_in_c(response, ground_truth, extra_info):
    time.sleep(60)  # a signal does interrupt sleep: the soft deadline ends it

def no_acc(response, ground_truth, extra_info):
    return {"score": 1.0}

def raises(response, ground_truth, extra_info):
    raise KeyError("label")
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A package as pip installs it: its module and a .dist-info declaring one reward."""
    root = tmp_path_factory.mktemp("site")
    (root / "myrewards.py").write_text(MODULE)
    info = root / "myrewards-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myrewards\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pcbench.rewards]\nexact = myrewards:exact\n")
    sys.path.insert(0, str(root))
    registry.load.cache_clear()
    yield root
    sys.path.remove(str(root))
    registry.load.cache_clear()


@pytest.fixture
def fresh_default_guard(monkeypatch):
    """The process-wide guard started anew, so its workers get this test's sys.path (a guard's
    workers copy the parent's import path when they start, as in a run)."""
    from pcbench.reward import procguard

    monkeypatch.setattr(procguard, "_default", None)
    yield
    if procguard._default is not None:
        procguard._default.shutdown()


@pytest.fixture(scope="module")
def guard():
    g = ProcessGuard(max_workers=1, grace_s=0.5)
    yield g
    g.shutdown()


def test_the_math_verifier_is_a_named_reward_and_scores_as_before():
    assert registry.target("math") == "pcbench.reward.math_reward:score_math"
    assert "math" in registry.known()
    assert named.score("math", "so \\boxed{\\frac{1}{2}}", "0.5") == {"score": 1.0, "acc": True, "pred": "\\frac{1}{2}"}
    assert named.score("math", "no box: 0.5", "0.5")["acc"] is False


def test_an_entry_point_reward_runs_in_the_guard_worker(site, guard):
    assert registry.known()["exact"] == "myrewards:exact"
    right = named.score("exact", "the answer is 42", "42", {"index": 3}, guard=guard)
    assert right == {"score": 1.0, "acc": True, "pred": ""}  # a bool gets the +1 / -1 score
    assert named.score("exact", "the answer is 41", "42", guard=guard)["acc"] is False
    graded = named.score("myrewards:graded", "x 42", "42", guard=guard)  # module:function works too
    assert graded == {"score": 0.5, "acc": True, "pred": "-c"}  # pred = the worker's argv[0]: `python -c <boot>`


def test_a_reward_that_hangs_or_fails_scores_wrong_within_its_bound(site, guard, capsys, monkeypatch):
    guard.call({"name": "exact", "response": "", "ground_truth": "", "extra_info": {}, "timeout_s": 1.0}, 60)  # warm
    # the bound is the guard's own deadline for the reply (no wall-clock assertion: CI machines are loaded)
    waits, read_line = [], procguard._Worker.read_line
    monkeypatch.setattr(procguard._Worker, "read_line", lambda w, timeout: waits.append(timeout) or read_line(w, timeout))
    for name in ("myrewards:spins", "myrewards:sleeps_in_c"):
        assert named.score(name, "1", "1", timeout_s=0.3, guard=guard) == {"score": -1.0, "acc": False, "pred": ""}
        assert waits[-1] == 0.3 + guard.grace_s
    for name, why in (("myrewards:no_acc", "returned a dict without 'acc'"), ("myrewards:raises", "KeyError: 'label'")):
        assert named.score(name, "1", "1", guard=guard)["acc"] is False
        assert why in capsys.readouterr().err
    named.score("myrewards:raises", "1", "1", guard=guard)
    assert capsys.readouterr().err == ""  # reported once, not once per rollout
    assert named.score("exact", "is 5", "5", guard=guard)["acc"] is True  # the guard still serves


def test_verl_entry_scores_a_row_with_the_reward_it_names(site, fresh_default_guard):
    row = {"index": 0, "split": "train", "reward": "exact"}
    assert verl_compute_score("own", "it is 12", "12", row) == {"score": 1.0, "acc": True, "pred": ""}
    assert verl_compute_score("own", "it is \\boxed{12}", "12", row)["acc"] is False  # exact, not math
    assert verl_compute_score("own", "it is \\boxed{12}", "12", {"index": 0})["acc"] is True  # no name: math


@pytest.mark.parametrize("name,line", [
    ("nope", "data.reward='nope': must be a reward pcbench can load (no reward named 'nope'; choose one of: math; or "
             "add your own: a 'pcbench.rewards' entry point or module:function (docs/own-data.md))"),
    ("no_such_mod_x:score", "data.reward='no_such_mod_x:score': must be a reward pcbench can load (reward "
                            "'no_such_mod_x:score' (no_such_mod_x:score): cannot import it (ModuleNotFoundError: No "
                            "module named 'no_such_mod_x'); put its folder on PYTHONPATH or pip install its package)"),
])
def test_a_bad_reward_name_fails_at_composition_in_one_line(name, line):
    out = subprocess.run([sys.executable, "-m", "pcbench.run", "backend=verl", "model=tiny-verl", "data=own",
                          f"data.reward={name}", "dry_run=true"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == f"pcbench: config error: {line}"
