"""`python -m pcbench.bench profile`: where one embedded benchmark job spends its time.

For one short job of each method (GRPO, DAPO, Pilot-Commit) at each group size (n=32, n=64),
each in a fresh process (one torch thread, the benchmark's job config with exact evaluation), the
wall and CPU time of:

- start-up: importing the trainer module (torch, transformers, ...), composing the config,
  building the model and loading the warm start (`EmbeddedRun(...)`), the first verl import;
- generation: the KV-cache sampler (`sampler.sample`), training rollouts only;
- reward: scoring those rollouts (`EmbeddedRollouts.generate` minus the sampler);
- update: `EmbeddedRun.update` (token batch, old log-probs, the PPO mini-batch steps);
- evaluation: every `evaluate` call, the step-0 one and the last step's sampled cross-check included;
- allocator: the rest of `train_step` (the allocator's own bookkeeping, the ledger, the row);
- writing: metrics rows and checkpoints (as the real loop writes them).

The phases are timed by wrapping the functions in the child process, so the profile runs on the
engine as it is (it changes nothing the job computes). Result: results/bench/profile.{md,json}.

    python -m pcbench.bench profile                       # 6 jobs x 8 steps, a few minutes
    python -m pcbench.bench profile --steps 6 --methods grpo --ns 32
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# the phases a job's time is split into (the docstring says what each holds), in the report's order
PHASES = ("startup", "generation", "reward", "update", "evaluation", "allocator", "writing")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--methods", default="grpo,dapo,pilot_commit")
    p.add_argument("--ns", default="32,64", help="rollout.n values, comma-separated")
    p.add_argument("--steps", type=int, default=8, help="training steps per job (exact evaluation every 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("results/bench"))
    p.add_argument("--name", default="profile", help="output stem: <out>/<name>.{md,json}")
    p.add_argument("--note", default="", help="a sentence printed under the title (what this profile is compared with)")
    p.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE",
                   help="Hydra override added to every job, e.g. -o paths.cache=/shared/cache")


class _Clock:
    """Wall and CPU seconds per phase; `wrap` times a function into a phase."""

    def __init__(self):
        self.wall = {p: 0.0 for p in PHASES}
        self.cpu = {p: 0.0 for p in PHASES}
        self.exclusive = 0  # > 0 inside an evaluation: its sampling is evaluation, not generation

    def add(self, phase: str, wall: float, cpu: float) -> None:
        self.wall[phase] += wall
        self.cpu[phase] += cpu

    def wrap(self, owner, name: str, phase: str, inner: tuple[str, ...] = (), exclusive: bool = False):
        """Time owner.name into `phase`, minus the time spent in phases it calls (`inner`); an
        `exclusive` phase keeps everything it calls."""
        fn = getattr(owner, name)
        clock = self

        def timed(*a, **k):
            if clock.exclusive:
                return fn(*a, **k)
            w0, c0 = time.perf_counter(), time.process_time()
            before = {p: (clock.wall[p], clock.cpu[p]) for p in inner}
            clock.exclusive += exclusive
            try:
                return fn(*a, **k)
            finally:
                clock.exclusive -= exclusive
                w, c = time.perf_counter() - w0, time.process_time() - c0
                for p in inner:
                    w -= clock.wall[p] - before[p][0]
                    c -= clock.cpu[p] - before[p][1]
                clock.add(phase, w, c)

        setattr(owner, name, timed)


def child(method: str, n: int, steps: int, seed: int, overrides: list[str], out: Path) -> None:
    """One job in this process; writes its phase times as JSON to `out`."""
    w0, c0 = time.perf_counter(), time.process_time()
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    import tempfile

    import torch

    from pcbench import rl
    from pcbench.backends.embedded import generation, trainer
    from pcbench.config import compose_cfg
    from pcbench.config import check_config
    from pcbench.loggers import MetricsLogger
    from pcbench.rundir import RunDir

    imports_wall, imports_cpu = time.perf_counter() - w0, time.process_time() - c0
    clock = _Clock()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = compose_cfg(["exp=sample_efficiency", "data.val_mode=exact", f"method={method}", f"rollout.n={n}",
                           f"seed={seed}", f"train.steps={steps}", f"paths.results={tmp}", *overrides])
        check_config(cfg)
        torch.set_num_threads(1)
        rundir = RunDir(Path(tmp) / "run", resumed=False)
        rundir.path.mkdir(parents=True)
        run = trainer.EmbeddedRun(cfg, rundir, log=lambda *_: None)
        rl._core()  # verl's core_algos, imported at the first update: start-up, not update
        clock.add("startup", time.perf_counter() - w0, time.process_time() - c0)
        # phases: the sampler inside generate is generation, the rest of generate is reward
        clock.wrap(generation, "sample", "generation")
        clock.wrap(generation.EmbeddedRollouts, "generate", "reward", inner=("generation",))
        clock.wrap(trainer.EmbeddedRun, "update", "update")
        clock.wrap(trainer, "evaluate", "evaluation", exclusive=True)
        clock.wrap(trainer.checkpoint, "save", "writing")
        logger = MetricsLogger(rundir, cfg)
        clock.wrap(logger, "log", "writing")
        steps_wall = []
        logger.log(trainer.step_row(0, epoch=0, elapsed_s=0.0,
                                    evals=trainer.evaluate(run.model, run.tok, run.task, cfg, 0)))
        while run.step < steps:
            s0, sc0 = time.perf_counter(), time.process_time()
            before = {p: (clock.wall[p], clock.cpu[p]) for p in PHASES}
            logger.log(run.train_step())
            if run.step % int(cfg.train.checkpoint_every) == 0 or run.step == steps:
                trainer.checkpoint.save(run)
            w, c = time.perf_counter() - s0, time.process_time() - sc0
            steps_wall.append(w)
            clock.add("allocator", w - sum(clock.wall[p] - before[p][0] for p in PHASES),
                      c - sum(clock.cpu[p] - before[p][1] for p in PHASES))
        logger.close()
        rollouts = run.ledger.cumulative
    total_wall, total_cpu = time.perf_counter() - w0, time.process_time() - c0
    out.write_text(json.dumps({
        "method": method, "n": n, "steps": steps, "rollouts": rollouts,
        "wall": {k: round(v, 3) for k, v in clock.wall.items()}, "cpu": {k: round(v, 3) for k, v in clock.cpu.items()},
        "imports_wall": round(imports_wall, 3), "imports_cpu": round(imports_cpu, 3),
        "total_wall": round(total_wall, 3), "total_cpu": round(total_cpu, 3),
        "step_wall": [round(x, 3) for x in steps_wall]}))


def main(args, argv: list[str]) -> int:
    from pcbench import numerics
    from pcbench.reports.profile import profile_md as render
    from pcbench.bench.provenance import provenance
    from pcbench.rundir import atomic_write_json, atomic_write_text

    meta = provenance(argv)
    meta["cpu"] = numerics.cpu_model()
    meta["command"] = "python -m pcbench.bench " + " ".join(argv)
    jobs = []
    args.out.mkdir(parents=True, exist_ok=True)
    for n in [int(x) for x in args.ns.split(",")]:
        for method in args.methods.split(","):
            tmp = args.out / f".{args.name}-{method}-{n}.json"
            load0 = os.getloadavg()[0]
            cmd = [sys.executable, "-m", "pcbench.bench.profile", method, str(n), str(args.steps), str(args.seed),
                   str(tmp), *args.override]
            env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
            subprocess.run(cmd, check=True, env=env)
            job = json.loads(tmp.read_text())
            tmp.unlink()
            job["loadavg_1min"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
            jobs.append(job)
            print(f"{method} n={n}: {job['total_wall']:.1f} s wall, "
                  + ", ".join(f"{p} {job['wall'][p]:.1f}" for p in PHASES), flush=True)
    meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    report = {"provenance": meta, "note": args.note, "steps": args.steps, "seed": args.seed, "overrides": args.override,
              "phases": list(PHASES), "jobs": jobs}
    atomic_write_json(args.out / f"{args.name}.json", report)
    atomic_write_text(args.out / f"{args.name}.md", render(report))
    print(f"wrote {args.out / args.name}.md and .json")
    return 0


if __name__ == "__main__":  # the child process of one job: method n steps seed out [overrides...]
    child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[6:], Path(sys.argv[5]))
