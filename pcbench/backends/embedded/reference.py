"""The committed identity of the default embedded numbers (pcbench/reference.json).

    python -m pcbench.backends.embedded.reference check    # this machine vs the committed reference
    python -m pcbench.backends.embedded.reference write    # make this machine the reference (after a numerics change)
    python -m pcbench.backends.embedded.reference write --other  # record it as another vendor's identity
    python -m pcbench.backends.embedded.reference machine  # only the fingerprint, under each MKL_CBWR branch (seconds)

Three digests, cheapest first: the numerics fingerprint (pcbench/numerics.py: one pass through a
small model, milliseconds), the default warm start's weights (conf/model/tiny.yaml, its
model/warmstart=prelude, and conf/data/synthetic.yaml: trained or read from the cache) and the metrics of the first
GRPO_STEPS steps of GRPO seed 0 from it (every logged number but the timings). Equal
fingerprints and different warm-start digests mean the code changed, not the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from pcbench import numerics

GRPO_STEPS = 2
TIMING = ("time/", "perf/")  # wall-clock fields of a metrics line (prefixes): not part of the identity


def warmstart(cache: Path) -> dict:
    """The default warm start's report (digest, SFT steps), trained into `cache` unless there."""
    from pcbench.backends.embedded.task import SyntheticTask
    from pcbench.backends.embedded.tokenizer import CharTokenizer
    from pcbench.backends.embedded.warmstart import load_or_train
    from pcbench.config import compose_cfg

    cfg = compose_cfg([f"paths.cache={cache}"])
    return load_or_train(cfg, SyntheticTask.for_run(cfg), CharTokenizer(), log=lambda *_: None)[1]


def metrics_digest(rows: list[dict]) -> str:
    """sha256[:16] of the metrics lines without their wall-clock fields (sorted-key JSON)."""
    kept = [{k: v for k, v in r.items() if not k.startswith(TIMING)} for r in rows]
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def grpo_first_steps(cache: Path, results: Path) -> str:
    """Digest of the metrics of GRPO seed 0's first GRPO_STEPS steps on the default config."""
    from pcbench.config import compose_cfg
    from pcbench.runs import execute, load_backend

    cfg = compose_cfg([f"paths.cache={cache}", f"paths.results={results}", "method=grpo", "seed=0",
                f"train.steps={GRPO_STEPS}", "logging.progress=false", "train.threads=1"])
    execute(cfg, load_backend(cfg))
    (folder,) = [p for p in (results / str(cfg.experiment)).iterdir() if p.is_dir()]
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return metrics_digest(rows)


def current(cache: Path) -> dict:
    ws = warmstart(cache)
    with tempfile.TemporaryDirectory() as tmp:
        grpo = grpo_first_steps(cache, Path(tmp))
    return {"machine": {k: v for k, v in numerics.describe().items() if k != "threads"},
            "warmstart": {"digest": ws["digest"], "prelude_steps": ws.get("prelude_steps", 0), "sft_steps": ws["sft_steps"],
                          "consolidation_steps": ws.get("consolidation_steps", 0),
                          "top_up_steps": ws.get("top_up_steps", 0), "per_tier": ws["per_tier"]},
            "grpo_first_steps": {"steps": GRPO_STEPS, "digest": grpo}}


def machine() -> int:
    """This machine's arithmetic against the reference's, without training: the pinned fingerprint and
    the one under MKL's COMPATIBLE branch (the branch MKL documents for non-Intel CPUs too)."""
    desc, ref = numerics.describe(), numerics.reference()["machine"]
    print(json.dumps({"here": desc, "reference": ref}))
    print("numerics: " + " ".join(f"MKL_CBWR={b} {fp}" for b, fp in numerics.branch_fingerprints().items())
          + f" on {desc['cpu']} (reference {ref['cpu']}: MKL_CBWR={ref['mkl_cbwr']} {ref['fingerprint']})")
    print(numerics.mismatch(desc) or f"numerics: this machine computes as the reference machine ({ref['fingerprint']})")
    same = desc["fingerprint"] == ref["fingerprint"]
    print(f"machine: {numerics.cpu_vendor()} {desc['cpu']}, {os.cpu_count()} CPUs, ATen {desc['capability']}; "
          f"numerics fingerprint {desc['fingerprint']} ({'matches' if same else 'differs from'} the reference "
          f"{ref['fingerprint']})")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pcbench.backends.embedded.reference", description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["check", "write", "machine"])
    ap.add_argument("--cache", type=Path, default=Path("results/.cache"), help="warm-start cache (default: results/.cache)")
    ap.add_argument("--other", action="store_true", help="write: record this machine under other_machines "
                    "(another CPU vendor) instead of making it the reference")
    a = ap.parse_args(argv)
    if a.action == "machine":
        return machine()
    now = current(a.cache)
    if a.action == "write":
        write(now, other=a.other)
        return 0
    ref = numerics.reference()
    mine = numerics.known(now["machine"]["fingerprint"])
    if mine is not None and mine["machine"]["fingerprint"] != ref["machine"]["fingerprint"]:
        print(f"this machine computes as the {mine['machine']['cpu']} in other_machines (not the reference "
              f"{ref['machine']['cpu']}, whose numbers the README and benchmarks quote): checking against it")
        ref = mine
    rows = [("fingerprint", ref["machine"]["fingerprint"], now["machine"]["fingerprint"]),
            ("warm start", ref["warmstart"]["digest"], now["warmstart"]["digest"]),
            ("GRPO first steps", ref["grpo_first_steps"]["digest"], now["grpo_first_steps"]["digest"])]
    for name, want, got in rows:
        print(f"{name:17s} reference {want}  here {got}  {'same' if want == got else 'DIFFERENT'}")
    line = numerics.mismatch(now["machine"])
    if line:
        print(line)
    return 0 if all(w == g for _, w, g in rows) else 1


def write(now: dict, other: bool) -> None:
    """Make this machine the reference, or (`other`) record it under other_machines, replacing an
    entry of the same CPU. A new reference drops the other machines: it means the numbers changed,
    so theirs are stale until measured again there."""
    ref = numerics.reference() if numerics.REFERENCE.exists() else {}
    if other:
        kept = [o for o in ref.get("other_machines", []) if o["machine"]["cpu"] != now["machine"]["cpu"]]
        ref["other_machines"] = [*kept, now]
        numerics.REFERENCE.write_text(json.dumps(ref, indent=1) + "\n")
        print(f"wrote {numerics.REFERENCE} (other_machines: {now['machine']['cpu']})")
        return
    numerics.REFERENCE.write_text(json.dumps(now, indent=1) + "\n")
    dropped = [o["machine"]["cpu"] for o in ref.get("other_machines", [])]
    print(f"wrote {numerics.REFERENCE}" + (f"; dropped the now stale other_machines {dropped}: "
                                          "measure them again there with `write --other`" if dropped else ""))


if __name__ == "__main__":
    sys.exit(main())
