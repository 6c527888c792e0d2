"""analysis/figures.py: every figure as PDF + PNG + CSV, and the CSV is what was drawn."""

from __future__ import annotations

import subprocess
import sys

import matplotlib
from matplotlib.collections import PathCollection
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from pcbench.analysis import figure_tables, figures  # noqa: E402
from pcbench.analysis.methods import label, method_colors  # noqa: E402
from pcbench.analysis.scoring import resolve_targets  # noqa: E402

STEMS = ["fig1_acc_vs_rollouts", "per_set_acc", "rollouts_by_kind", "pc_prompt_states", "wallclock"]


def run_figures(repo, *args, cwd=None):
    return subprocess.run([sys.executable, str(repo / "analysis" / "figures.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or repo, timeout=300)


@pytest.fixture(scope="module")
def cli_out(repo, fixture_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    proc = run_figures(repo, fixture_runs, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out, proc


@pytest.fixture(scope="module")
def tables(loaded):
    _, metrics, _ = loaded
    targets = resolve_targets(metrics)
    return metrics, {stem: build(metrics, targets) for stem, (build, _) in figures.FIGURES.items()}


def test_cli_writes_pdf_png_csv_for_every_figure(cli_out):
    out, proc = cli_out
    assert proc.stdout.splitlines() == [f"wrote {out / s}.{{pdf,png,csv}}" for s in STEMS]
    for stem in STEMS:
        assert (out / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(pd.read_csv(out / f"{stem}.csv")) > 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{s}.{e}" for s in STEMS for e in ("pdf", "png", "csv"))


@pytest.mark.parametrize("stem", STEMS)
def test_csv_is_the_table(cli_out, tables, stem):
    out, _ = cli_out
    saved = pd.read_csv(out / f"{stem}.csv", keep_default_na=False, na_values=[""])
    table = tables[1][stem]
    assert list(saved.columns) == list(table.columns) and len(saved) == len(table)
    for col in table.columns:
        if pd.api.types.is_numeric_dtype(table[col]):
            np.testing.assert_allclose(saved[col].to_numpy(float), table[col].to_numpy(float), equal_nan=True)
        else:
            assert saved[col].fillna("").astype(str).tolist() == table[col].fillna("").astype(str).tolist()


def test_fig1_hand_computed_points(tables):
    table = tables[1]["fig1_acc_vs_rollouts"]
    cross = table[table["series"] == "crossing"]
    got = {(r.model, r.method): (r.step, round(r.x, 6), round(r.y, 6)) for r in cross.itertuples()}
    assert got == {("toy-1.5b", "grpo"): (6, 6.0, 46.0), ("toy-1.5b", "dapo"): (6, 18.5, 46.0),
                   ("toy-1.5b", "pilot_commit"): (4, 6.0, 48.5), ("toy-4b", "grpo"): (4, 8.192, 36.0),
                   ("toy-4b", "pilot_commit"): (4, 12.288, 36.0)}       # DAPO on toy-4b never crosses
    targets = table[table["series"] == "target"]
    assert dict(zip(targets["model"], targets["y"].round(6))) == {"toy-1.5b": 46.0, "toy-4b": 36.0}
    pc_a = table[(table["series"] == "curve") & (table["model"] == "toy-1.5b") & (table["method"] == "pilot_commit")]
    assert pc_a["x"].tolist() == [0, 3, 6, 9] and pc_a["y"].round(6).tolist() == [30, 45, 48.5, 51]
    assert pc_a["y_low"].round(6).tolist() == [30, 44, 47, 50] and set(pc_a["x_unit"]) == {"M"}
    assert set(table.loc[table["model"] == "toy-4b", "x_unit"]) == {"K"}


def test_rollouts_by_kind_numbers(tables):
    table = tables[1]["rollouts_by_kind"]
    pc = table[(table["model"] == "toy-4b") & (table["method"] == "pilot_commit")]
    assert pc[["pilot", "commit", "plain", "discarded"]].iloc[0].tolist() == [2.048, 1.024, 0.0, 0.512]
    dapo = table[(table["model"] == "toy-1.5b") & (table["method"] == "dapo")]
    assert dapo["plain"].tolist() == [3.0, 3.0, 3.0, 3.5, 3.0, 3.0]     # mean of seeds (4M and 3M at step 4)


def _lines(ax):
    """{label: (x, y)} of the labelled data lines of an axes (axhline excluded)."""
    return {ln.get_label(): (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
            for ln in ax.get_lines() if not ln.get_label().startswith(("_", "target"))}


def _draw(tables, stem):
    metrics, built = tables
    return figures.FIGURES[stem][1](built[stem], method_colors(metrics["method"].unique())), built[stem]


def test_fig1_draws_exactly_the_table(tables):
    fig, table = _draw(tables, "fig1_acc_vs_rollouts")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3
    for ax in axes:
        model, data = ax.get_title().split(" / ")
        panel = table[(table["model"] == model) & (table["data"] == data)]
        curve = panel[panel["series"] == "curve"]
        lines = {text.split(" (")[0]: xy for text, xy in _lines(ax).items()}
        assert sorted(lines) == sorted(label(m) for m in curve["method"].unique())
        for method, rows in curve.groupby("method"):
            np.testing.assert_allclose(lines[label(method)][0], rows["x"])
            np.testing.assert_allclose(lines[label(method)][1], rows["y"])
        dots = np.concatenate([c.get_offsets() for c in ax.collections if isinstance(c, PathCollection)]
                              or [np.empty((0, 2))])
        hits = panel[panel["series"] == "crossing"]
        np.testing.assert_allclose(dots, hits[["x", "y"]].to_numpy(float))
        hlines = [ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_label().startswith("target")]
        np.testing.assert_allclose(hlines, panel.loc[panel["series"] == "target", "y"])


def test_fig1_legend_says_where_each_mean_curve_crosses(tables):
    fig, _ = _draw(tables, "fig1_acc_vs_rollouts")
    texts = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert texts == ["GRPO (crosses at 6.0M)", "DAPO (crosses at 18.5M)", "Pilot-Commit (crosses at 6.0M)",
                     "target 46.0%", "first crossing (seed mean)",
                     "GRPO (crosses at 8.2K)", "DAPO (does not cross)", "Pilot-Commit (crosses at 12.3K)",
                     "target 36.0%", "first crossing (seed mean)", "Pilot-Commit"]


def test_per_set_and_wallclock_lines_are_the_table(tables):
    for stem in ("per_set_acc", "wallclock"):
        fig, table = _draw(tables, stem)
        drawn = sorted((round(x, 9), round(y, 9)) for ax in fig.axes for x_, y_ in _lines(ax).values()
                       for x, y in zip(x_, y_))
        rows = table if stem == "per_set_acc" else table[table["panel"] == "acc_vs_time"]
        assert drawn == sorted((round(x, 9), round(y, 9)) for x, y in zip(rows["x"], rows["y"]))


def _bar_heights(fig):
    return sorted(round(p.get_height(), 9) for ax in fig.axes for c in ax.containers for p in c.patches)


def test_bars_are_the_table(tables):
    fig, table = _draw(tables, "rollouts_by_kind")
    values = [v for col in ("pilot", "commit", "plain", "discarded") for v in table[col] if v > 0]
    assert _bar_heights(fig) == sorted(round(v, 9) for v in values)
    fig, table = _draw(tables, "wallclock")
    assert _bar_heights(fig) == sorted(table.loc[table["panel"] == "step_time", "y"].round(9))


def test_pc_states_lines_are_the_table(tables):
    fig, table = _draw(tables, "pc_prompt_states")
    drawn = sorted(round(y, 9) for ax in fig.axes for _, y_ in _lines(ax).values() for y in y_)
    cols = [c for c in figure_tables.PC_STATES if c in table]
    assert drawn == sorted(round(v, 9) for c in cols for v in table[c])


def test_pc_figure_skipped_without_pilot_commit(repo, make_run, tmp_path):
    make_run("grpo", 0, {0: 0.1, 2: 0.3, 4: 0.4})
    make_run("dapo", 0, {0: 0.1, 2: 0.35, 4: 0.45})
    out = tmp_path / "figs"
    proc = run_figures(repo, tmp_path / "runs", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "pc_prompt_states: skipped, no pilot_commit runs" in proc.stderr
    assert sorted(p.stem for p in out.glob("*.png")) == sorted(set(STEMS) - {"pc_prompt_states"})


def test_no_runs_exit_2(repo, tmp_path):
    proc = run_figures(repo, tmp_path, "--out", tmp_path / "figs")
    assert proc.returncode == 2 and "error: no runs found" in proc.stderr
