"""How far float noise moves the warm start's regime: several warm starts that differ only in
something that should not matter, each scored on the default pool.

    python -m pcbench.bench warmstart_spread                  # 5 SFT orders x {prelude, stop_only, three_stage} + capabilities
    python -m pcbench.bench warmstart_spread --designs prelude # only today's default (conf/model/warmstart/prelude.yaml)
    python -m pcbench.bench warmstart_spread --jobs 16 --out results/bench
    python -m pcbench.bench warmstart_spread --designs prelude --with results/bench/warmstart_spread.json

A variant is (design, SFT data order `model.warmstart.seed`, ATen CPU capability). A design is a
choice of the config group model/warmstart (conf/model/warmstart/): `prelude` (the default since
2026-12-07) trains the tiers meant to be solved first and stops a slower mixed SFT with an exact
probe; `stop_only` (the default before) is the competence stop alone; `three_stage` adds to it 2,000
consolidation steps on the tiers meant to be solved and the top-up back to the stop's level. Each warm start trains
from scratch in its own process, one thread, no cache, and is scored with exact pass rates at the
RL sampling settings (T 1.0, top_p 1.0) on every pool and validation prompt: per tier mean, and
the pool card's classes: solved (p >= 0.99), near-solved [0.75, 0.99), band [0.125, 0.75),
hard (0, 0.125), never (p < 1e-6, i.e. 0 to sampling precision).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pcbench.paths import CONF_DIR

# the named designs: the choices of the config group model/warmstart (one file each)
DESIGNS = tuple(sorted(p.stem for p in (CONF_DIR / "model" / "warmstart").glob("*.yaml")))


def one(overrides: list[str]) -> dict:
    """Train one warm start from scratch under `overrides` (this process), score it, -> its record."""
    import torch

    from pcbench import numerics
    from pcbench.backends.embedded.evaluate import exact_pass_rates
    from pcbench.backends.embedded.model import build_model
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import train_warm_start
    from pcbench.pool_card import pool_card
    from pcbench.config import compose_cfg as compose

    torch.set_num_threads(1)
    cfg = compose(overrides)
    task, tok = SyntheticTask.for_run(cfg), CharTokenizer()
    model = build_model(cfg.model, tok, seed=int(cfg.model.init_seed))
    t0 = time.perf_counter()
    report = train_warm_start(model, task, tok, cfg, log=lambda *_: None)
    T, P = float(cfg.train.temperature), float(cfg.train.top_p)
    cards = {name: pool_card(exact_pass_rates(model, tok, probs, T, P), [p.tier for p in probs])
             for name, probs in (("pool", task.train), ("val", task.val))}
    return {"overrides": overrides, "sft_steps": report["sft_steps"], "digest": report["digest"],
            "consolidation_steps": report["consolidation_steps"], "top_up_steps": report.get("top_up_steps", 0),
            "prelude_steps": report.get("prelude_steps", 0), "stop": report.get("stop", {}).get("trace", [])[-3:],
            "seconds": round(time.perf_counter() - t0, 1), "machine": numerics.describe(), **cards}


def variants(seeds: int, capabilities: list[str], designs: dict[str, list[str]]) -> list[dict]:
    out = []
    for design, extra in designs.items():
        for s in range(seeds):
            out.append({"design": design, "seed": s, "capability": "avx2 (pinned)",
                        "env": {}, "overrides": [*extra, f"model.warmstart.seed={s}"]})
        for cap in capabilities:
            out.append({"design": design, "seed": 0, "capability": cap,
                        "env": {"ATEN_CPU_CAPABILITY": cap, "PCBENCH_NUMERICS": "native"}, "overrides": list(extra)})
    return out


def _run(v: dict, log_dir: Path) -> dict:
    env = {**os.environ, **v["env"], "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pcbench.bench.warmstart_spread", "--one", json.dumps(v["overrides"])]
    log = log_dir / f"{v['design']}-s{v['seed']}-{v['capability'].split()[0]}.log"
    with open(log, "w") as f:
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=f, text=True)
    if done.returncode:
        return {**v, "error": f"exit {done.returncode}, see {log}"}
    return {**v, **json.loads(done.stdout.strip().splitlines()[-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pcbench.bench warmstart_spread", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="SFT data orders per design (pinned arithmetic)")
    ap.add_argument("--capabilities", default="default,avx512",
                    help="unpinned ATen capabilities to add at seed 0 (comma list; those the CPU lacks fall back)")
    ap.add_argument("--jobs", type=int, default=2, help="warm starts trained at once (one thread each)")
    ap.add_argument("--design", action="append", default=[], metavar="NAME=OVERRIDE,...",
                    help="a further design to compare (Hydra overrides, comma-separated), e.g. "
                         "'late=model.warmstart.stop_pass_rate=0.5'; repeatable")
    ap.add_argument("--designs", default=",".join(DESIGNS),
                    help=f"which model/warmstart choices to run (comma list of {', '.join(DESIGNS)}; '' for none)")
    ap.add_argument("--with", dest="earlier", type=Path, action="append", default=[],
                    help="an earlier warmstart_spread.json whose warm starts join this report (same code: "
                         "its digests show it); repeatable")
    ap.add_argument("--out", type=Path, default=Path("results/bench"))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one is not None:
        print(json.dumps(one(json.loads(a.one))))
        return 0
    from pcbench.bench.provenance import provenance
    from pcbench.reports.warmstart_spread import write_report

    caps = [c for c in a.capabilities.split(",") if c]
    named = {d: [f"model/warmstart={d}"] for d in DESIGNS}
    unknown = [d for d in a.designs.split(",") if d and d not in named]
    if unknown:
        ap.error(f"--designs: unknown {', '.join(unknown)}; choose from {', '.join(named)} (or --design NAME=OVERRIDES)")
    missing = [str(p) for p in a.earlier if not p.is_file()]
    if missing:
        ap.error(f"--with: no such file {', '.join(missing)} (an earlier run's warmstart_spread.json)")
    designs = {d: named[d] for d in a.designs.split(",") if d}
    for d in a.design:
        name, _, ovr = d.partition("=")
        designs[name] = [o for o in ovr.split(",") if o]
    vs = variants(a.seeds, caps, designs)
    a.out.mkdir(parents=True, exist_ok=True)
    log_dir = a.out / "warmstart_spread_logs"
    log_dir.mkdir(exist_ok=True)
    t0 = time.time()
    with ThreadPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(lambda v: _run(v, log_dir), vs))
    meta = {**provenance(["warmstart_spread", *(sys.argv[1:] if argv is None else argv)]), "wall_s": round(time.time() - t0, 1), "jobs": a.jobs}
    earlier = [json.loads(path.read_text()) for path in a.earlier]
    if earlier:  # their warm starts first, in the order given
        rows = [*(r for e in earlier for r in e["rows"]), *rows]
        meta["earlier"] = [e["meta"] for e in earlier]
    write_report(rows, meta, a.out)
    print(f"wrote {a.out / 'warmstart_spread.md'} ({len(rows)} warm starts, {meta['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
