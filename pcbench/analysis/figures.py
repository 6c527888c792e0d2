"""Paper figures from a results folder, each as PDF + PNG with the CSV of the plotted data.

    python analysis/figures.py results/ --out paper_figures/
    python analysis/figures.py results/a results/b --target 0.473 --only fig1_acc_vs_rollouts

Figures (one panel per (model, data) group unless said otherwise, a group being one setup: see pcbench/analysis/run_frames.py;
 mean over seeds, band = min..max):
- fig1_acc_vs_rollouts: average val accuracy (%) vs cumulative rollouts, dashed target line,
  a dot where each method's seed-mean curve first reaches the target (docs/method.md#results, Figure 1).
- per_set_acc: the same per validation set (`val/<set>/acc`), one panel per (group, set).
- rollouts_by_kind: rollouts per training step stacked by kind (pilot, commit, plain), with the
  discarded part hatched over them; one panel per (group, method).
- pc_prompt_states: Pilot-Commit's kept / too easy / too hard prompts per step, evicted
  (cumulative) and buffer size, mean staleness; skipped when there are no pilot_commit runs.
- wallclock: val accuracy vs elapsed time, and the median time per step per method.
The tables are built in pcbench/analysis/figure_tables.py; the CSV beside a figure is exactly that table.
Exit status: 0 ok, 2 no runs found or bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from pcbench.analysis import figure_tables
from pcbench.analysis.methods import label, method_colors, method_order
from pcbench.analysis.plotstyle import KIND_COLORS, grid, save_figure, unit_suffix, wrap
from pcbench.analysis.scoring import resolve_targets
from pcbench.analysis.speedup import add_where, load_or_explain, parse_target, report_warnings

BAND = "band: min..max over seeds"
MARKER_MAX = 25   # draw point markers on curves with at most this many points
BAR_MAX = 40      # rollouts_by_kind: bars up to this many steps, stepped areas beyond


def _curve(ax, rows: pd.DataFrame, color: str, text: str) -> None:
    """One seed-mean line (markers when few points) with its min..max band."""
    marker = "o" if len(rows) <= MARKER_MAX else None
    ax.plot(rows["x"], rows["y"], color=color, label=text, marker=marker, ms=3, lw=1.6)
    if (rows["n_seeds"] > 1).any():
        ax.fill_between(rows["x"], rows["y_low"], rows["y_high"], color=color, alpha=0.15, lw=0)


def _acc_panel(ax, panel: pd.DataFrame, colors: dict, xlabel: str) -> bool:
    unit = panel["x_unit"].iloc[0]
    has_target = (panel["series"] == "target").any()
    for method in method_order(panel.loc[panel["series"] == "curve", "method"]):
        rows = panel[panel["method"] == method]
        hits = rows[rows["series"] == "crossing"]
        text = label(method)
        if has_target:
            text += f" (crosses at {hits['x'].iloc[0]:.1f}{unit})" if len(hits) else " (does not cross)"
        _curve(ax, rows[rows["series"] == "curve"], colors[method], text)
        if len(hits):
            ax.scatter(hits["x"], hits["y"], s=45, color=colors[method], edgecolor="black", zorder=5)
    handles, _ = ax.get_legend_handles_labels()
    for _, tgt in panel[panel["series"] == "target"].iterrows():
        handles.append(ax.axhline(tgt["y"], ls="--", color="black", lw=1, label=f"target {tgt['y']:.1f}%"))
        handles.append(Line2D([], [], marker="o", ls="", color="grey", mec="black",
                              label="first crossing (seed mean)"))
    if not has_target:
        ax.text(0.02, 0.97, "no target (no baseline runs; see --target)", transform=ax.transAxes,
                va="top", fontsize=8, color="grey")
    ax.set_xlabel(f"{xlabel}{unit_suffix(unit)}")
    ax.set_ylabel("average val accuracy (%)")
    beside = len(handles) > 6  # a benchmark's nine methods: beside the panel, not over the curves
    if beside:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    else:
        ax.legend(handles=handles, loc="best", fontsize=8)
    return beside


def draw_acc_vs_rollouts(table: pd.DataFrame, colors: dict):
    keys = list(table.groupby(["model", "data"], sort=True).groups)
    fig, axes = wrap(len(keys))
    beside = False
    for ax, (model, data) in zip(axes, keys):
        panel = table[(table["model"] == model) & (table["data"] == data)]
        beside |= _acc_panel(ax, panel, colors, "cumulative rollouts")
        ax.set_title(f"{model} / {data}")
    if beside:  # a legend beside its panel: widen the figure so the axes keep their width
        w, h = fig.get_size_inches()
        fig.set_size_inches(w * 1.6, h)
    fig.suptitle(f"Average val accuracy vs cumulative rollouts (mean over seeds; {BAND})")
    return fig


def draw_per_set(table: pd.DataFrame, colors: dict):
    keys = list(table.groupby(["model", "data"], sort=True).groups)
    n_cols = max(table.groupby(["model", "data"])["set"].nunique())
    fig, axes = grid(len(keys), n_cols)
    for row, (model, data) in zip(axes, keys):
        group = table[(table["model"] == model) & (table["data"] == data)]
        sets = sorted(group["set"].unique())
        for ax in row[len(sets):]:
            ax.set_visible(False)
        for ax, name in zip(row, sets):
            rows = group[group["set"] == name]
            for method in method_order(rows["method"]):
                _curve(ax, rows[rows["method"] == method], colors[method], label(method))
            ax.set_title(f"{model} / {data}: {name}")
            ax.set_xlabel(f"cumulative rollouts{unit_suffix(rows['x_unit'].iloc[0])}")
            ax.set_ylabel(f"{name} accuracy (%)")
            ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"Accuracy per validation set (mean over seeds; {BAND})")
    return fig


def _kind_panel(ax, rows: pd.DataFrame, top: float) -> None:
    """Stacked pilot/commit/plain per step, discarded hatched over them: bars for few steps,
    stepped areas (same numbers, one polygon per kind) for many."""
    steps = rows["step"].to_numpy(dtype=float)
    bars = len(steps) <= BAR_MAX
    width = 0.8 * (min(pd.Series(steps).diff().dropna().min(), 1.0) if len(steps) > 1 else 1.0)
    bottom = pd.Series(0.0, index=rows.index)
    for kind in figure_tables.KINDS:
        if not (rows[kind] > 0).any():
            continue
        if bars:
            ax.bar(steps, rows[kind], width, bottom=bottom, color=KIND_COLORS[kind], label=kind, lw=0)
        else:
            ax.fill_between(steps, bottom, bottom + rows[kind], step="mid", color=KIND_COLORS[kind],
                            label=kind, lw=0)
        bottom = bottom + rows[kind]
    if (rows["discarded"] > 0).any():
        style = dict(facecolor="none", edgecolor="#252525", hatch="///", label="discarded (part of the above)")
        if bars:
            ax.bar(steps, rows["discarded"], width, lw=0.6, **style)
        else:
            ax.fill_between(steps, 0, rows["discarded"], step="mid", lw=0, **style)
    ax.set_ylim(0, 1.15 * top if top > 0 else 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(f"rollouts per step{unit_suffix(rows['y_unit'].iloc[0])}")


def draw_rollouts_by_kind(table: pd.DataFrame, colors: dict):
    keys = list(table.groupby(["model", "data"], sort=True).groups)
    methods = method_order(table["method"])
    fig, axes = grid(len(keys), len(methods))
    for row, (model, data) in zip(axes, keys):
        group = table[(table["model"] == model) & (table["data"] == data)]
        top = group[list(figure_tables.KINDS)].sum(axis=1).max()
        for ax, method in zip(row, methods):
            rows = group[group["method"] == method]
            if rows.empty:
                ax.set_visible(False)
                continue
            _kind_panel(ax, rows, top)
            ax.set_title(f"{label(method)}: {model} / {data}", color=colors[method])
            ax.legend(loc="upper right", fontsize=7, ncols=2)
    fig.suptitle("Rollouts generated per step by kind (mean over seeds); hatched: never trained on")
    return fig


PC_PANELS = (("pilot band filter", "prompts per step",
              {"kept": "kept", "too_easy": "too easy (skipped)", "too_hard": "too hard (deferred)"}),
             ("eviction and replay buffer", "prompts",
              {"evicted": "evicted (cumulative)", "buffer_size": "replay buffer size"}),
             ("staleness", "steps", {"staleness_mean": "mean staleness of committed prompts"}))
PC_COLORS = ("#2ca02c", "#ff7f0e", "#d62728")


def draw_pc_states(table: pd.DataFrame, colors: dict):
    keys = list(table.groupby(["model", "data"], sort=True).groups)
    fig, axes = grid(len(keys), len(PC_PANELS))
    for row, (model, data) in zip(axes, keys):
        group = table[(table["model"] == model) & (table["data"] == data)]
        for ax, (title, ylabel, series) in zip(row, PC_PANELS):
            for color, (col, text) in zip(PC_COLORS, series.items()):
                if group[col].notna().any():
                    ax.plot(group["step"], group[col], color=color, label=text, lw=1.6,
                            marker="o" if len(group) <= MARKER_MAX else None, ms=3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("training step")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{model} / {data}: {title}")
            ax.legend(loc="best", fontsize=8)
    fig.suptitle("Pilot-Commit prompt states (mean over seeds)")
    return fig


def _step_time_panel(ax, bars: pd.DataFrame, colors: dict) -> None:
    methods = method_order(bars["method"])
    values = [float(bars.loc[bars["method"] == m, "y"].iloc[0]) for m in methods]
    ax.bar(range(len(methods)), values, width=0.6, color=[colors[m] for m in methods])
    ref = values[methods.index("grpo")] if "grpo" in methods else None
    for i, value in enumerate(values):
        text = f"{value:.1f} s" + (f"\n{value / ref:.2f}x GRPO" if ref else "")
        ax.annotate(text, (i, value), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    ax.set_xticks(range(len(methods)), [label(m) for m in methods])
    ax.set_ylim(0, 1.3 * max(values))
    ax.set_ylabel("median time per step (s)")


def draw_wallclock(table: pd.DataFrame, colors: dict):
    keys = list(table.groupby(["model", "data"], sort=True).groups)
    fig, axes = grid(len(keys), 2)
    for (ax_acc, ax_bar), (model, data) in zip(axes, keys):
        group = table[(table["model"] == model) & (table["data"] == data)]
        acc = group[group["panel"] == "acc_vs_time"]
        for method in method_order(acc["method"]):
            _curve(ax_acc, acc[acc["method"] == method], colors[method], label(method))
        if len(acc):
            ax_acc.set_xlabel(f"elapsed time ({acc['x_unit'].iloc[0]})")
            ax_acc.legend(loc="lower right", fontsize=8)
        ax_acc.set_ylabel("average val accuracy (%)")
        ax_acc.set_title(f"{model} / {data}: accuracy vs wall-clock")
        bars = group[group["panel"] == "step_time"]
        if len(bars):
            _step_time_panel(ax_bar, bars, colors)
        ax_bar.set_title(f"{model} / {data}: time per step")
    fig.suptitle(f"Wall-clock (mean over seeds; {BAND}; bars: median over seeds of each run's median)")
    return fig


FIGURES = {
    "fig1_acc_vs_rollouts": (lambda m, t: figure_tables.acc_curve_table(m, t), draw_acc_vs_rollouts),
    "per_set_acc": (lambda m, t: figure_tables.per_set_table(m), draw_per_set),
    "rollouts_by_kind": (lambda m, t: figure_tables.rollouts_by_kind_table(m), draw_rollouts_by_kind),
    "pc_prompt_states": (lambda m, t: figure_tables.pc_states_table(m), draw_pc_states),
    "wallclock": (lambda m, t: figure_tables.wallclock_table(m), draw_wallclock),
}
EMPTY = {"pc_prompt_states": "no pilot_commit runs with alloc/* counters",
         "per_set_acc": "no val/<set>/acc columns", "wallclock": "no time/elapsed_s and time/step_s"}


def make_figures(metrics: pd.DataFrame, targets: dict, out_dir: Path,
                 only: list[str] | None = None) -> tuple[dict[str, list[Path]], list[str]]:
    """Draw and save every figure (or those in `only`); ({stem: paths}, skip messages)."""
    colors = method_colors(metrics["method"].unique())
    written, skipped = {}, []
    for stem, (build, draw) in FIGURES.items():
        if only and stem not in only:
            continue
        table = build(metrics, targets)
        if table.empty:
            skipped.append(f"{stem}: skipped, {EMPTY.get(stem, 'nothing to plot')}")
            continue
        written[stem] = save_figure(draw(table, colors), table, out_dir, stem)
    return written, skipped


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="*", default=["results"], metavar="RESULTS_DIR")
    parser.add_argument("--out", type=Path, default=Path("paper_figures"), help="output folder")
    parser.add_argument("--target", type=parse_target, default=None,
                        help="grpo-best (default: best of --baseline), <method>-best, or a fraction")
    parser.add_argument("--baseline", default="grpo")
    parser.add_argument("--only", nargs="+", choices=sorted(FIGURES), default=None)
    add_where(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    loaded = load_or_explain(args.dirs, args.where)
    if loaded is None:
        return 2
    runs, metrics = loaded
    warnings = []
    target = None if args.target == f"{args.baseline}-best" else args.target
    targets = resolve_targets(metrics, target, args.baseline, warnings)
    report_warnings(warnings)
    written, skipped = make_figures(metrics, targets, args.out, args.only)
    for message in skipped:
        print(message, file=sys.stderr)
    for stem in written:
        print(f"wrote {args.out / stem}.{{pdf,png,csv}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
