"""Which warm start a committed result file was measured from, said at the top of its markdown.

A benchmark's numbers hold for the weights its runs started from. Its provenance records their
digests (`warmstart_digests`, from each run folder's machine.json); files from before the digest
existed were measured from the default warm start of 2,220 SFT steps on unpinned arithmetic. When
that is not today's default (pcbench/reference.json), the file says so in its second line.
"""

from __future__ import annotations

import json
from pathlib import Path

from pcbench.backends.embedded.warmstart_stages import stages

LEGACY = ("the default warm start before 2026-12-04 (2,220 SFT steps, no consolidation, the unpinned "
          "arithmetic of the machine that ran it; its digest was not recorded)")


def warmstart_digests(folders) -> list[str]:
    """Distinct warm-start digests of run folders (their machine.json's first entry), sorted."""
    out = set()
    for f in folders:
        path = Path(f) / "machine.json"
        if path.exists():
            out.add(json.loads(path.read_text())[0].get("warmstart_digest"))
    return sorted(d for d in out if d)


def warmstart_notice(provenance: dict | None) -> str:
    from pcbench import numerics

    today = numerics.reference()["warmstart"]
    digests = (provenance or {}).get("warmstart_digests")
    if digests == [today["digest"]]:
        return f"Warm start: today's default (digest `{today['digest']}`, pcbench/reference.json)."
    if digests and today["digest"] in digests:
        # A grid whose cells select other warm starts (e.g. model/warmstart=three_stage) beside today's
        # default: that default is what can go stale, so only its absence is flagged below.
        others = "`, `".join(d for d in digests if d != today["digest"])
        return (f"Warm starts: today's default (digest `{today['digest']}`, pcbench/reference.json) and `{others}`, "
                f"which the cells' own overrides select (each run's machine.json names its digest).")
    what = ("warm start(s) `" + "`, `".join(digests) + "`") if digests else LEGACY
    own = numerics.reference()["machine"].get("matmul") == "pcbench detgemm"
    arithmetic = "pinned AVX2 arithmetic" + (" and pcbench's own matrix products, since 2026-12-06" if own else "")
    return (f"**Measured from {what}; today's default warm start differs** (digest `{today['digest']}`: "
            f"{stages(today)} on {arithmetic}; pcbench/reference.json). The "
            f"numbers below are those runs'; rerun the command for today's.")
