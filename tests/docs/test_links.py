"""Every relative markdown link of README.md, docs/*.md and results/*/README.md names a file that
exists and, with a #fragment into a markdown file, a heading of it (GitHub's anchors)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    return re.sub(r"[^\w -]", "", heading.strip().lower()).replace(" ", "-")


def test_relative_links_resolve():
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "results").glob("*/README.md"))]
    broken = []
    for doc in docs:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.relative_to(REPO)}: {target} (no file)")
            elif frag and file.suffix == ".md":
                heads = {slug(ln.lstrip("#")) for ln in file.read_text().splitlines() if ln.startswith("#")}
                if frag not in heads:
                    broken.append(f"{doc.relative_to(REPO)}: {target} (no heading)")
    assert broken == []
