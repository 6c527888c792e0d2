"""A run whose allocator starves ends as today, its folder says so (stopped.json, pcbench.runs.execute),
the benchmarks score it (censored from its last evaluation) instead of dropping it, and a crash is
still left out and listed as a failure. A scripted backend stands in for training."""

import json

import pytest
from omegaconf import OmegaConf

from pcbench.allocators import AllocationError
from pcbench.reports.regime_map import starved_lines, tidy_cell
from pcbench.analysis.map_scoring import score_cell
from pcbench.analysis.run_frames import load_runs
from pcbench.bench import launch
from pcbench.bench.launch import Job, is_scored
from pcbench.ledger import RolloutLedger
from pcbench.rundir import STOPPED, run_path
from pcbench.runs import Backend, execute, step_row

REACHES = {2: 0.3, 4: 0.5}  # GRPO's curve: the cell's target is 0.5


class Stopping(Backend):
    """Logs step 0 and steps 1.. (1000 rollouts each, val/acc at the steps of `evals`), then raises
    `error` before step upto + 1 (None: trains to train.steps)."""

    def __init__(self, evals, upto=None, error=None):
        self.evals, self.upto, self.error = evals, upto, error

    def train(self, cfg, run):
        run.append_metrics(step_row(0, epoch=0, elapsed_s=0.0, evals={"val/acc": 0.1}))
        ledger = RolloutLedger()
        for step in range(1, int(cfg.train.steps) + 1):
            if self.upto is not None and step > self.upto:
                raise self.error
            ledger.generated("plain", 1000)
            ledger.trained(1000)
            evals = {"val/acc": self.evals[step]} if step in self.evals else {}
            alloc = {"alloc/groups": 4, "alloc/groups_all_correct": 1, "alloc/groups_all_wrong": 2}
            run.append_metrics(step_row(step, epoch=0, elapsed_s=float(step), ledger=ledger.close_step(),
                                        alloc=alloc, step_s=1.0, evals=evals))
        return {}


def cfg(tmp_path, method, seed, experiment="cell"):
    return OmegaConf.create({"experiment": experiment, "seed": seed, "resume": "auto", "dry_run": False,
                             "method": {"name": method}, "model": {"name": "m"}, "data": {"name": "d"},
                             "backend": {"name": "scripted"}, "train": {"steps": 4},
                             "paths": {"results": str(tmp_path / "results")}})


def train(tmp_path, method, seed, evals, upto=None, error=None, experiment="cell"):
    """Run one job through the real lifecycle; -> its folder (the error, if any, propagates as from pcbench.run)."""
    c = cfg(tmp_path, method, seed, experiment)
    if error is None:
        execute(c, Stopping(evals))
    else:
        with pytest.raises(type(error)):
            execute(c, Stopping(evals, upto, error))
    return run_path(c)


def test_the_round_bound_is_recorded_and_a_crash_is_not(tmp_path):
    starved = train(tmp_path, "pilot_commit", 0, {2: 0.3}, upto=2, error=AllocationError("only 3/8 kept"))
    crashed = train(tmp_path, "pilot_commit", 1, {2: 0.3}, upto=2, error=RuntimeError("rollout worker exploded"))
    pool = train(tmp_path, "pilot_commit", 2, {2: 0.3}, upto=3,
                 error=AllocationError("a whole epoch could not fill a batch", stop_reason="pool_exhausted"))
    assert json.loads((starved / STOPPED).read_text()) == {
        "status": "stopped", "reason": "round_bound", "error": "AllocationError: only 3/8 kept", "step": 2}
    assert not (crashed / STOPPED).exists() and not (crashed / "summary.json").exists()
    runs, _, _ = load_runs([tmp_path / "results"])
    assert {r.seed: (r.status, r.stop_reason) for r in runs.itertuples()} == {
        0: ("starved", "round_bound"), 1: ("unfinished", None), 2: ("starved", "pool_exhausted")}
    assert [is_scored(p) for p in (starved, crashed, pool)] == [True, False, True]


def test_the_one_line_says_a_starved_run_is_scored_and_a_crash_is_resumable(tmp_path):
    from pcbench.rundir import record_failure

    lines = {}
    for seed, error in ((0, AllocationError("only 3/8 kept")), (1, RuntimeError("worker exploded"))):
        train(tmp_path, "pilot_commit", seed, {2: 0.3}, upto=2, error=error)
        try:
            raise error
        except type(error):
            lines[seed] = record_failure(cfg(tmp_path, "pilot_commit", seed), str(error))
    assert "after step 2 of 4" in lines[0] and "allocator starved" in lines[0] and "rerun" not in lines[0]
    assert "rerun the same command to resume" in lines[1] and "starved" not in lines[1]


@pytest.mark.parametrize("error, status", [(AllocationError("dapo: only 3/8 kept after 10 rounds"), "starved"),
                                           (RuntimeError("boom"), "failed")])
def test_a_bench_job_that_starves_is_a_result_and_a_crash_a_failure(tmp_path, monkeypatch, error, status):
    import pcbench.config
    import pcbench.runs

    def stop(cfg):
        raise error

    monkeypatch.setattr(launch, "compose_cfg", lambda overrides: None)
    monkeypatch.setattr(pcbench.config, "check_config", lambda cfg: None)
    monkeypatch.setattr(pcbench.runs, "execute", stop)
    res = launch._work(Job("dapo", 0, ("method=dapo",)), str(tmp_path / "job.log"))
    assert (res["status"], res["reason"]) == (status, "round_bound" if status == "starved" else None)
    assert res["error"] == f"{type(error).__name__}: {error}"


def cell_folders(tmp_path):
    """GRPO on seeds 0, 1 (+ A/A on 2, 3) reaching 0.5 at step 4; Pilot-Commit: seed 0 finishes and reaches
    0.5 at step 2, seeds 1-4 starve after step 2 at 0.3, seed 5 crashes there. -> (main, aa) folders."""
    main = [train(tmp_path, "grpo", s, REACHES) for s in (0, 1)]
    aa = [train(tmp_path, "grpo", s, REACHES, experiment="cell_aa") for s in (2, 3)]
    main.append(train(tmp_path, "pilot_commit", 0, {2: 0.5, 4: 0.6}))
    main += [train(tmp_path, "pilot_commit", s, {2: 0.3}, upto=2, error=AllocationError("only 1/8 kept"))
             for s in range(1, 5)]
    main.append(train(tmp_path, "pilot_commit", 5, {2: 0.3}, upto=2, error=RuntimeError("rollout worker exploded")))
    return main, aa


def test_a_cell_where_4_of_5_pc_runs_starve_is_scored_on_all_5(tmp_path):
    main, aa = cell_folders(tmp_path)
    scored = [str(p) for p in main if is_scored(p)]  # what pcbench.bench.regime_map hands the analysis
    assert len(scored) == 2 + 5  # the crash (PC seed 5) is left out
    curves, regime, _, _ = tidy_cell("c", {"pilot": "p16"}, scored, [str(p) for p in aa])
    rec = score_cell(curves, regime, n_boot=200)
    assert rec["target"] == pytest.approx(0.5)
    pc = rec["pc_vs_grpo"]
    assert (pc["reached"], pc["runs"], pc["ratio"]) == (1, 5, None)  # censored median: 'did not reach'
    assert rec["starved"] == {"pilot_commit": {"starved": 4, "runs": 5, "reasons": ["round_bound"] * 4}}
    assert starved_lines({"c": rec}) == [
        "## Runs stopped because the allocator starved", "",
        "- c: Pilot-Commit: 4 of 5 runs stopped by the round bound (method.max_rounds), counted as censored "
        "from their last evaluation unless they had reached the target", ""]
    # the regime rows hold the starved runs' logged steps: 4 for the finished PC run, 2 for each starved one
    assert len(regime[regime["method"] == "pilot_commit"]) == 4 + 4 * 2
    # scored on the survivor alone (the hole this closes), PC would read as 2x faster than GRPO
    finished = [str(p) for p in main if (p / "summary.json").exists()]
    curves, regime, _, _ = tidy_cell("c", {"pilot": "p16"}, finished, [str(p) for p in aa])
    assert score_cell(curves, regime, n_boot=200)["pc_vs_grpo"]["ratio"] == pytest.approx(2.0)


def test_a_cell_without_starved_runs_reads_as_before(tmp_path):
    main = [train(tmp_path, "grpo", s, REACHES) for s in (0, 1)] + [train(tmp_path, "pilot_commit", 0, REACHES)]
    curves, regime, _, _ = tidy_cell("c", {"pilot": "p16"}, [str(p) for p in main], [])
    rec = score_cell(curves, regime, n_boot=200)
    assert "starved" not in rec and starved_lines({"c": rec}) == []
