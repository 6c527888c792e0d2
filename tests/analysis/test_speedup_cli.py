"""analysis/speedup.py end to end, as a subprocess on the committed fixtures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run_cli(repo, *args, cwd=None):
    return subprocess.run([sys.executable, str(repo / "analysis" / "speedup.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or repo, timeout=120)


@pytest.fixture(scope="module")
def json_out(repo, fixture_runs):
    proc = run_cli(repo, fixture_runs, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_json_keys_and_rows(json_out):
    records, _ = json_out
    assert len(records) == 7
    required = {"model", "data", "method", "target", "seeds", "reached", "rollouts_to_target", "rtt_ci_low",
                "rtt_ci_high", "speedup_vs_grpo", "speedup_vs_grpo_ci_low", "speedup_vs_grpo_ci_high",
                "speedup_vs_dapo", "speedup_vs_dapo_ci_low", "speedup_vs_dapo_ci_high", "final_val_acc",
                "cumulative_rollouts"}
    for rec in records:
        assert required <= set(rec)


def test_json_numbers(json_out):
    records, _ = json_out
    rec = {(r["model"], r["method"]): r for r in records}
    pc = rec[("toy-1.5b", "pilot_commit")]
    assert pc["rollouts_to_target"] == 4_500_000 and pc["reached"] == 2 and pc["seeds"] == 2
    assert pc["speedup_vs_grpo"] == pytest.approx(10 / 9) and pc["speedup_vs_dapo"] == pytest.approx(31 / 9)
    assert (pc["speedup_vs_dapo_ci_low"], pc["speedup_vs_dapo_ci_high"]) == pytest.approx((2.0, 19 / 3))
    assert rec[("toy-4b", "dapo")]["rollouts_to_target"] is None
    assert rec[("toy-4b", "pilot_commit")]["rollouts_to_target"] is None
    assert rec[("toy-4b", "pilot_commit")]["reached"] == 1
    assert rec[("toy-8b", "pilot_commit")]["target"] is None


def test_warnings_on_stderr_name_paths(json_out):
    _, stderr = json_out
    lines = stderr.strip().splitlines()
    assert all(line.startswith("warning: ") for line in lines)
    assert any("pilot_commit-toy-4b-toypolaris-s2" in line and "metrics.jsonl:6" in line for line in lines)
    assert any("grpo-toy-1.5b-toymath-s2" in line and "no evaluation lines" in line for line in lines)
    assert any("toy-8b/toymath: no grpo runs" in line for line in lines)


def test_markdown_reads_like_the_paper(repo, fixture_runs):
    proc = run_cli(repo, fixture_runs)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| toy")]
    assert rows == [
        "| toy-1.5b | toymath | 46.0% | GRPO | 2/2 | 5.0M | [4.0M, 6.0M] | 1.0x [1.0, 1.0] | 3.1x [2.0, 4.8] "
        "| 46.0% | 6.0M |",
        "| toy-1.5b | toymath | 46.0% | DAPO | 2/2 | 15.5M | [12.0M, 19.0M] | 0.3x [0.2, 0.5] | 1.0x [1.0, 1.0] "
        "| 46.0% | 18.5M |",
        "| toy-1.5b | toymath | 46.0% | Pilot-Commit | 2/2 | 4.5M | [3.0M, 6.0M] | 1.1x [0.7, 2.0] | 3.4x [2.0, 6.3] "
        "| 51.0% | 9.0M |",
        "| toy-4b | toypolaris | 36.0% | GRPO | 2/2 | 6.1K | [4.1K, 8.2K] | 1.0x [1.0, 1.0] | - | 36.0% | 8.2K |",
        "| toy-4b | toypolaris | 36.0% | DAPO | 0/2 | did not reach | - | - | - | 34.0% | 24.6K |",
        "| toy-4b | toypolaris | 36.0% | Pilot-Commit | 1/3* | did not reach | [6.1K, inf] | - | - | 35.0% | 12.3K |",
        "| toy-8b | toymath | - | Pilot-Commit | - | - | - | - | - | 31.0% | 12.3K |",
    ]
    assert "* counts 1 unfinished run(s)" in proc.stdout


def test_fixed_target_csv_and_out_file(repo, fixture_runs, tmp_path):
    out = tmp_path / "t" / "speedups.csv"
    proc = run_cli(repo, fixture_runs, "--target", "0.3", "--format", "csv", "--out", out)
    assert proc.returncode == 0 and proc.stdout == ""
    header, *rows = out.read_text().splitlines()
    assert header.split(",")[:5] == ["model", "data", "method", "target", "seeds"]
    c_row = [r for r in rows if r.startswith("toy-8b")][0].split(",")
    assert c_row[header.split(",").index("rollouts_to_target")] == "12288"


def test_latex(repo, fixture_runs):
    proc = run_cli(repo, fixture_runs, "--format", "latex")
    assert proc.returncode == 0
    assert r"\begin{tabular}" in proc.stdout and r"46.0\%" in proc.stdout and "did not reach" in proc.stdout


def test_default_dir_and_no_runs(repo, tmp_path):
    (tmp_path / "results").mkdir()
    proc = run_cli(repo, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: no runs found under results")
    assert proc.stdout == ""


def test_percent_target_is_refused(repo, fixture_runs):
    proc = run_cli(repo, fixture_runs, "--target", "47.3")
    assert proc.returncode == 2 and "pass 0.473" in proc.stderr


def test_seed_changes_only_intervals(repo, fixture_runs):
    a = json.loads(run_cli(repo, fixture_runs, "--format", "json", "--seed", "1").stdout)
    b = json.loads(run_cli(repo, fixture_runs, "--format", "json", "--seed", "1").stdout)
    assert a == b
    assert [r["rollouts_to_target"] for r in a][:3] == [5_000_000, 15_500_000, 4_500_000]


def test_runs_without_any_evaluation_give_an_empty_report(repo, make_run, tmp_path):
    make_run("grpo", 0, {})
    proc = run_cli(repo, tmp_path / "runs", "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert "no evaluation lines" in proc.stderr


def test_baseline_option_moves_the_target(repo, fixture_runs):
    proc = run_cli(repo, fixture_runs, "--format", "json", "--baseline", "dapo")
    rec = {(r["model"], r["method"]): r for r in json.loads(proc.stdout)}
    assert rec[("toy-4b", "grpo")]["target"] == pytest.approx(0.34)       # DAPO's best seed mean
    assert rec[("toy-4b", "dapo")]["reached"] == 1                        # seed 1 logged .35
