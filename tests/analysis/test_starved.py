"""A run whose allocator starved (AllocationError -> stopped.json) is data, not a hole: it is read as
"starved", scored with its evaluations up to the stop (an event if it had reached the target, else
censored), and counted per method; a crash is not. docs/method.md#rollouts-to-target."""

import json

from runfolder_writer import ledger, make_lines, write_run

from pcbench.reports.sample_efficiency import starved_lines
from pcbench.analysis.run_frames import failed_runs, load_runs
from pcbench.analysis.scoring import score
from pcbench.analysis.survival import durations
from pcbench.analysis.targets import curves_table
from pcbench.rundir import RunDir


def run(root, method, seed, evals, n_steps=4, stop=None, finished=True, rollouts=1000):
    """A run folder; stop="round_bound" writes the record pcbench.runs.execute writes when it starved."""
    lines = make_lines([ledger(plain=rollouts, rounds=1)] * n_steps, evals, step_s=1.0)
    path = write_run(root, method, "m", "d", seed, lines, finished=finished and stop is None)
    if stop:
        RunDir(path, resumed=True).record_stop(stop, f"AllocationError: {method}: only 3/8 prompts kept")
    return path


def by_method(records):
    return {r["method"]: r for r in records}


def test_a_starved_folder_reads_as_starved_until_a_resume_moves_on(tmp_path):
    starved = run(tmp_path, "pilot_commit", 0, {0: 0.1, 2: 0.2}, n_steps=2, stop="round_bound")
    crashed = run(tmp_path, "pilot_commit", 1, {0: 0.1, 2: 0.2}, n_steps=2, finished=False)
    stale = run(tmp_path, "pilot_commit", 2, {0: 0.1, 2: 0.2}, n_steps=2, stop="pool_exhausted")
    with open(stale / "metrics.jsonl", "a") as f:  # resumed after the stop and logged step 3: running again
        f.write(json.dumps({"step": 3, "cumulative_rollouts": 3000}) + "\n")
    runs, _, warnings = load_runs([tmp_path])
    got = {r.seed: (r.status, r.stop_reason) for r in runs.itertuples()}
    assert got == {0: ("starved", "round_bound"), 1: ("unfinished", None), 2: ("unfinished", None)}
    assert json.loads((starved / "stopped.json").read_text())["step"] == 2 and not (crashed / "stopped.json").exists()
    assert not warnings


def test_a_starved_run_that_reached_the_target_counts_as_reached(tmp_path):
    for seed in (0, 1):
        run(tmp_path, "grpo", seed, {0: 0.1, 2: 0.3, 4: 0.5})  # target: 0.5
    run(tmp_path, "pilot_commit", 0, {0: 0.1, 2: 0.5}, n_steps=2, stop="round_bound")  # hit at step 2, then starved
    run(tmp_path, "pilot_commit", 1, {0: 0.1, 2: 0.3, 4: 0.5})
    runs, metrics, _ = load_runs([tmp_path])
    pc = by_method(score(runs, metrics, n_boot=100)[0])["pilot_commit"]
    assert (pc["reached"], pc["seeds"], pc["starved"], pc["unfinished"]) == (2, 2, 1, 0)
    assert pc["rollouts_to_target"] == 3000  # median of 2000 (the starved run's hit) and 4000
    d = durations(curves_table(metrics), 0.5)
    assert d[d["method"] == "pilot_commit"][["time", "event"]].values.tolist() == [[2000.0, 1], [4000.0, 1]]


def test_four_of_five_starved_runs_censor_the_median_not_the_survivor(tmp_path):
    for seed in (0, 1):
        run(tmp_path, "grpo", seed, {0: 0.1, 2: 0.3, 4: 0.5})
    run(tmp_path, "pilot_commit", 0, {0: 0.1, 2: 0.5, 4: 0.6})  # the survivor reaches at 2000
    for seed in range(1, 5):  # starved at step 2 at 0.3, below the target
        run(tmp_path, "pilot_commit", seed, {0: 0.1, 2: 0.3}, n_steps=2, stop="round_bound")
    runs, metrics, _ = load_runs([tmp_path])
    records, _ = score(runs, metrics, n_boot=100)
    pc = by_method(records)["pilot_commit"]
    assert (pc["seeds"], pc["reached"], pc["starved"]) == (5, 1, 4)
    assert pc["rollouts_to_target"] is None and pc["speedup_vs_grpo"] is None  # 'did not reach', not 2000
    d = durations(curves_table(metrics), 0.5)
    censored = d[(d["method"] == "pilot_commit") & (d["event"] == 0)]
    assert censored["time"].tolist() == [2000.0] * 4  # right-censored at the last evaluation before the stop
    report = {"records": records, "per_run": [{"method": "pilot_commit", "status": "starved",
                                              "stop_reason": "round_bound"}] * 4}
    assert starved_lines(report) == [
        "- Pilot-Commit: 4 of 5 runs stopped by the round bound (method.max_rounds), counted as censored from "
        "their last evaluation unless they had reached the target", ""]


def test_a_crash_is_a_failure_and_a_starved_run_is_not():
    results = [{"method": "pilot_commit", "seed": 0, "status": "starved", "error": "AllocationError: ..."},
               {"method": "dapo", "seed": 0, "status": "failed", "error": "RuntimeError: boom"},
               {"method": "grpo", "seed": 0, "status": "finished", "error": None}]
    assert [r["method"] for r in failed_runs(results)] == ["dapo"]


def test_speedup_footnote_names_starved_runs(tmp_path):
    from pcbench.analysis.speedup_table import to_markdown

    for seed in (0, 1):
        run(tmp_path, "grpo", seed, {0: 0.1, 4: 0.5})
    run(tmp_path, "pilot_commit", 0, {0: 0.1, 2: 0.3}, n_steps=2, stop="round_bound")
    runs, metrics, _ = load_runs([tmp_path])
    text = to_markdown(score(runs, metrics, n_boot=100)[0], n_boot=100)
    assert "1 run(s) stopped because their allocator starved" in text and "unfinished run(s)" not in text
