"""Every `docs/method.md#<section>` cited in code, configs, tests and docs names a section that exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
METHOD = REPO / "docs" / "method.md"
CITE = re.compile(r"docs/method\.md#([a-z0-9-]+)")


def slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def anchors() -> set[str]:
    return {slug(line.lstrip("#")) for line in METHOD.read_text().splitlines() if line.startswith("#")}


def tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [REPO / p for p in out.splitlines() if p.endswith((".py", ".md", ".yaml", ".toml", ".sh", ".txt"))]


def test_slug_matches_github():
    assert slug("Rollouts to target") == "rollouts-to-target"
    assert slug("Staleness and eviction") == "staleness-and-eviction"
    assert slug("DAPO dynamic sampling") == "dapo-dynamic-sampling"


def test_every_cited_section_exists():
    known = anchors()
    broken = [f"{p.relative_to(REPO)}: #{a}" for p in tracked_text_files() if p.exists()
              for a in CITE.findall(p.read_text(errors="replace")) if a not in known]
    assert not broken, f"sections missing from docs/method.md (has {sorted(known)}): {broken}"


def test_nothing_cites_the_paper_summary_outside_the_repository():
    """PAPER.md is not part of the repository: cite docs/method.md#<section> (results/ are generated records)."""
    stale = [str(p.relative_to(REPO)) for p in tracked_text_files() if p.exists() and p != Path(__file__)
             and not p.relative_to(REPO).parts[0] == "results" and "PAPER" + ".md" in p.read_text(errors="replace")]
    assert not stale, f"cite docs/method.md#<section> instead of the paper summary in: {stale}"
