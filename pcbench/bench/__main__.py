"""CLI of pcbench.bench (see the package docstring): sample_efficiency | regime_map | throughput | profile |
regime | warmstart_spread | cell_speed."""

from __future__ import annotations

import argparse
import sys

from pcbench.analysis import regime  # the regime card's home is analysis; `regime` here is its alias
from pcbench.bench import cell_speed, profile, regime_map, sample_efficiency, throughput


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pcbench.bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    se = sub.add_parser("sample_efficiency", help="every allocator x seeds: rollouts-to-target and wall-clock")
    sample_efficiency.add_arguments(se)
    rm = sub.add_parser("regime_map", help="where Pilot-Commit pays off: GRPO, DAPO, PC and an A/A per cell of a "
                        "committed grid (conf/bench/regime_map.yaml), resumable by --part / --cells")
    regime_map.add_arguments(rm)
    tp = sub.add_parser("throughput", help="embedded sampler vs transformers generate, tokens/s")
    throughput.add_arguments(tp)
    pf = sub.add_parser("profile", help="where one embedded job spends its time: start-up, generation, reward, "
                        "update, evaluation, allocator (GRPO, DAPO, PC at n=32 and 64)")
    profile.add_arguments(pf)
    rg = sub.add_parser("regime", help="regime card of run folders (embedded or verl): zero-variance shares, "
                        "pass-rate histograms, per-set accuracy (alias of python -m pcbench.analysis.regime)")
    regime.add_arguments(rg)
    sub.add_parser("warmstart_spread", add_help=False, help="the warm start's regime over SFT orders and CPU "
                   "capabilities, by warm-start design (its own options: warmstart_spread --help)")
    cs = sub.add_parser("cell_speed", help="one regime-map cell end to end, side by side across commits "
                        "(the committed plan conf/bench/cell_speed.yaml)")
    cell_speed.add_arguments(cs)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["warmstart_spread"]:  # its own parser (pcbench/bench/warmstart_spread.py)
        from pcbench.bench import warmstart_spread

        return warmstart_spread.main(argv[1:])
    args = build_parser().parse_args(argv)
    from pcbench.config import ConfigError
    try:
        if args.command == "sample_efficiency":
            return sample_efficiency.main(args, argv)
        if args.command == "regime_map":
            return regime_map.main(args, argv)
        if args.command == "profile":
            return profile.main(args, argv)
        if args.command == "cell_speed":
            return cell_speed.main(args, argv)
        if args.command == "regime":
            return regime.main(args)
        return throughput.main(args, argv)
    except ConfigError as e:
        print(f"pcbench.bench: config error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
