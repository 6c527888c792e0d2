"""pcbench.analysis.run_frames: walking result folders and tolerating bad input (fixtures: tests/fixtures/runs)."""

from __future__ import annotations

import json

from pcbench.analysis.run_frames import ID_COLUMNS, load_runs

A, B, C = "toy-1.5b", "toy-4b", "toy-8b"


def test_finds_exactly_the_runs(loaded):
    runs, metrics, _ = loaded
    # 15 run folders; .trash/ (hidden), notes/ (no run files) and grpo s3 (config only) are skipped
    assert len(runs) == 15
    assert set(metrics["run_id"]) == set(runs["run_id"])       # every run has lines
    counts = runs.groupby(["model", "method"]).size().to_dict()
    assert counts == {(A, "dapo"): 2, (A, "grpo"): 3, (A, "pilot_commit"): 2,
                      (B, "dapo"): 2, (B, "grpo"): 2, (B, "pilot_commit"): 3, (C, "pilot_commit"): 1}
    assert not any("s9" in r for r in runs["run_id"])          # the hidden .trash run
    assert runs["experiment"].tolist().count("toy-a") == 7
    assert set(runs["backend"]) == {"mock"}


def test_status_is_never_finished_without_summary(loaded):
    runs, _, _ = loaded
    unfinished = sorted(runs.loc[runs["status"] == "unfinished", "run_id"])
    assert [u.rsplit("-", 1)[0] for u in unfinished] == [
        "grpo-toy-1.5b-toymath-s2", "pilot_commit-toy-4b-toypolaris-s2"]
    assert (runs["status"] != "unfinished").sum() == 13
    assert set(runs["status"]) == {"finished", "unfinished"}


def test_metrics_frame_is_tidy(loaded):
    _, metrics, _ = loaded
    assert list(metrics.columns[:len(ID_COLUMNS)]) == list(ID_COLUMNS)
    for key in ("val/acc", "val/aime24/acc", "val/math500/acc", "rollouts/pilot", "alloc/kept", "time/step_s"):
        assert key in metrics.columns
    assert not metrics.duplicated(["path", "step"]).any()
    rows = metrics.groupby("run_id").size()
    pc_b2 = [r for r in rows.index if r.startswith("pilot_commit-toy-4b-toypolaris-s2")][0]
    assert rows[pc_b2] == 5                      # steps 0..4; the truncated step-5 line is skipped
    grpo_a0 = metrics[metrics["run_id"].str.startswith("grpo-toy-1.5b-toymath-s0")]
    assert grpo_a0["step"].tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert grpo_a0["cumulative_rollouts"].tolist() == [0, 1e6, 2e6, 3e6, 4e6, 5e6, 6e6]
    assert grpo_a0["val/acc"].dropna().tolist() == [0.30, 0.40, 0.46, 0.44]


def test_relogged_steps_keep_the_last_line(loaded):
    _, metrics, warnings = loaded
    c = metrics[metrics["model"] == C]
    assert c["step"].tolist() == [0, 1, 2, 3, 4]
    assert c["cumulative_rollouts"].tolist() == [0, 3072, 6144, 9216, 12288]
    assert c.loc[c["step"] == 2, "val/acc"].item() == 0.27     # the resumed line, not the first 0.31
    hits = [w for w in warnings if "pilot_commit-toy-8b" in w]
    assert len(hits) == 1 and "metrics.jsonl:5: step 2 after step 3" in hits[0]


def test_warnings_name_the_files(loaded):
    _, _, warnings = loaded
    assert len(warnings) == 4
    truncated = [w for w in warnings if "unparseable" in w]
    assert len(truncated) == 1 and "pilot_commit-toy-4b-toypolaris-s2" in truncated[0]
    assert "metrics.jsonl:6:" in truncated[0]
    no_eval = [w for w in warnings if "no evaluation lines" in w]
    assert len(no_eval) == 1 and "grpo-toy-1.5b-toymath-s2" in no_eval[0]
    config_only = [w for w in warnings if "has no metrics.jsonl" in w]
    assert len(config_only) == 1 and "grpo-toy-1.5b-toymath-s3" in config_only[0]


def test_run_without_evals_is_listed_with_zero_evals(loaded):
    runs, _, _ = loaded
    row = runs[runs["run_id"].str.startswith("grpo-toy-1.5b-toymath-s2")].iloc[0]
    assert row["n_evals"] == 0 and row["n_lines"] == 2 and row["final_cumulative_rollouts"] == 2_000_000


def test_garbled_lines_and_summaries(tmp_path, make_run):
    run = make_run("grpo", 0, {0: 0.1, 2: 0.2, 4: 0.3})
    lines = (run / "metrics.jsonl").read_text().splitlines()
    lines.insert(2, "not json at all")
    lines.insert(3, json.dumps({"step": "x", "cumulative_rollouts": 1}))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n\n")
    (run / "summary.json").write_text('{"status": "fini')
    crashed = make_run("grpo", 1, {0: 0.1}, n_steps=1)
    (crashed / "summary.json").write_text(json.dumps({"status": "crashed"}))
    runs, metrics, warnings = load_runs([tmp_path])
    status = dict(zip(runs["seed"], runs["status"]))
    assert status == {0: "unfinished", 1: "crashed"}
    assert metrics[metrics["seed"] == 0]["step"].tolist() == [0, 1, 2, 3, 4]
    assert any("metrics.jsonl:3: unparseable" in w for w in warnings)
    assert any("metrics.jsonl:4: line without a numeric 'step'" in w for w in warnings)
    assert any("summary.json: cannot parse summary" in w for w in warnings)


def test_bad_config_and_missing_dirs(tmp_path, make_run):
    run = make_run("grpo", 0, {0: 0.1})
    (run / "config.yaml").write_text("method: [unclosed\n")
    runs, metrics, warnings = load_runs([tmp_path, tmp_path / "nope"])
    assert runs.empty and metrics.empty
    assert any("config.yaml: cannot parse config" in w for w in warnings)
    assert any(w.endswith("nope: not a directory, skipped") for w in warnings)


def test_a_root_that_is_itself_a_run(make_run):
    run = make_run("dapo", 3, {0: 0.1, 4: 0.2})
    runs, metrics, warnings = load_runs([run])
    assert runs["method"].tolist() == ["dapo"] and len(metrics) == 5 and warnings == []


def test_non_numeric_values_are_dropped_and_bad_lines_capped(tmp_path, make_run):
    run = make_run("grpo", 0, {0: 0.1, 2: 0.2}, n_steps=2)
    with open(run / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 3, "cumulative_rollouts": 3000, "val/acc": "high", "ok": True}) + "\n")
        f.write('{"step": 4, "cumulative_rollouts": 4000, "train/loss": NaN}\n')
        f.write("\x00garbage\n" * 8)
    runs, metrics, warnings = load_runs([tmp_path])
    assert metrics["step"].tolist() == [0, 1, 2, 3, 4]
    step3 = metrics[metrics["step"] == 3].iloc[0]
    assert step3["ok"] == 1 and step3.isna()["val/acc"]          # "high" dropped, bool kept
    assert metrics[metrics["step"] == 4]["train/loss"].isna().all()  # NaN kept as missing
    assert runs["n_evals"].tolist() == [2] and runs["final_val_acc"].tolist() == [0.2]
    assert any("metrics.jsonl:4: non-numeric value(s) dropped for val/acc" in w for w in warnings)
    bad = [w for w in warnings if "metrics.jsonl" in w]
    assert len(bad) == 6 and bad[-1].endswith("metrics.jsonl: 4 more bad lines")
