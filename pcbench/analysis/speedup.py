"""Rollouts-to-target table: the paper's headline numbers from a results folder.

For every (model, data) group and method: the target accuracy (default: the best seed-averaged
val/acc GRPO reaches), how many seeds reached it, the median over seeds of the cumulative
rollouts at the first evaluation at or above it ("did not reach" when the median is censored),
a seeded 95% bootstrap interval over seeds, speedups vs GRPO and vs DAPO, final accuracy and
final cumulative rollouts. Definitions: pcbench/analysis/scoring.py; run folders: docs/run_folder.md.

    python analysis/speedup.py results/                      # markdown, like the paper's table (docs/method.md#results)
    python analysis/speedup.py results/ --format json --out speedups.json
    python analysis/speedup.py results/a results/b --target 0.473 --seed 1
    python analysis/speedup.py results/ --where data.train_size=1000    # one setup of several

Runs are compared only within one setup (config.yaml minus the method, its knobs, the seed and
bookkeeping: pcbench/analysis/run_frames.py NOT_SETUP). A folder holding several setups of one (model, data)
gives one block of rows per setup, each with its own target, its data column naming the keys
that differ ("synthetic-arith [data.train_size=1000]"), and a warning saying how to keep one.

--format json prints a list of objects with keys: model, data, method, target, seeds, reached,
rollouts_to_target, rtt_ci_low, rtt_ci_high, speedup_vs_grpo(_ci_low/_ci_high),
speedup_vs_dapo(_ci_low/_ci_high), final_val_acc, cumulative_rollouts (median over seeds of
each run's last line), plus seed_values, unfinished (seeds neither finished, by summary.json's
status, nor starved) and starved (seeds whose allocator starved, stopped.json: scored up to the
stop, docs/method.md#rollouts-to-target). Numbers that are censored or not computable are null, never a number.
Warnings go to stderr, each naming its file. Exit status: 0 ok, 2 no runs found or bad arguments.
Also `python -m pcbench.analysis.speedup` or `pcbench-speedup` from any folder once pcbench is installed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pcbench.analysis.speedup_table import FORMATS
from pcbench.analysis.run_frames import load_runs
from pcbench.analysis.scoring import N_BOOT, score


def parse_target(text: str) -> str | float:
    """--target value: "<method>-best", "best", or a fraction in [0, 1]."""
    if text == "best" or text.endswith("-best"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: use grpo-best (or <method>-best) or a fraction like 0.473") from None
    if not 0.0 <= value <= 1.0:
        hint = f"; {text} looks like a percent, pass {value / 100:g}" if 1.0 < value <= 100.0 else ""
        raise argparse.ArgumentTypeError(f"{text}: the target is a val/acc fraction in [0, 1]{hint}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="*", default=["results"], metavar="RESULTS_DIR",
                        help="folders searched recursively for run folders (default: results/)")
    parser.add_argument("--target", type=parse_target, default=None,
                        help="grpo-best (default: best of --baseline), <method>-best, or a fraction")
    parser.add_argument("--baseline", default="grpo", help="method whose best accuracy is the target")
    parser.add_argument("--format", choices=sorted(FORMATS), default="markdown")
    parser.add_argument("--out", type=Path, default=None, help="write the table here instead of stdout")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--n-boot", type=int, default=N_BOOT, help=f"bootstrap resamples (default {N_BOOT})")
    add_where(parser)
    return parser


def add_where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="keep runs whose config.yaml has KEY=VALUE (dotted key, e.g. data.train_size=1000, "
                             "or setup=<hash>); repeat to combine")


def report_warnings(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def load_or_explain(dirs, where: list[str] | None = None):
    """(runs, metrics) with the loader's warnings on stderr; None, after a one-line error, if no run is there."""
    try:
        runs, metrics, warnings = load_runs(dirs, where=where)
    except ValueError as err:  # a malformed --where
        print(f"error: {err}", file=sys.stderr)
        return None
    report_warnings(warnings)
    if runs.empty:
        selected = f" matching --where {' '.join(where)} (values compare with config.yaml's)" if where else ""
        print(f"error: no runs found under {', '.join(map(str, dirs))}{selected} "
              "(a run is a folder with config.yaml and metrics.jsonl)", file=sys.stderr)
        return None
    return runs, metrics


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    target = None if args.target == f"{args.baseline}-best" else args.target
    loaded = load_or_explain(args.dirs, args.where)
    if loaded is None:
        return 2
    runs, metrics = loaded
    records, warnings = score(runs, metrics, target=target, baseline=args.baseline,
                              seed=args.seed, n_boot=args.n_boot)
    report_warnings(warnings)
    text = FORMATS[args.format](records, seed=args.seed, n_boot=args.n_boot)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
