"""The docs cannot silently lie about the committed results.

1. Every quoted block (`<!-- quoted: NAME -->`, pcbench/reports/quoted.py) is what its .json
   renders to today: rerun a benchmark and this fails until `python -m pcbench.reports.quoted --write`.
2. Every ratio with an interval the docs quote anywhere (`1.21x [0.88, inf]`, in README.md,
   docs/*.md, results/bench/README.md) is one the committed result files hold, unless it is listed
   in HISTORICAL with the reason it is not (a superseded run, a rescoring not committed).
3. The README's prose ranges over the regime map are the min / max of regime_map.json.
"""

import json
import re
from pathlib import Path

import pytest

from pcbench.analysis.formats import finite_or_none
from pcbench.reports.quoted import BLOCK, refresh

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "bench"
DOCS = [ROOT / "README.md", ROOT / "results" / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RATIO = re.compile(r"(\d+\.\d\d)x \[(\d+\.\d\d|0), (inf|\d+\.\d\d)\]")

# quoted ratios no committed file holds, each with why (results/bench/README.md says so beside them)
HISTORICAL = {
    "1.48x [0.95, 1.71]": "the previous benchmark (8 prompts per update), superseded by the committed one",
    "0.94x [0.70, 1.20]": "A/A of an 8-seed probe at 10 + 10 seeds, every 5 steps, before the committed run",
}


def _fmt(point, low, high, high_inf=False) -> str | None:
    point, low, high = finite_or_none(point), finite_or_none(low), finite_or_none(high)
    if point is None:
        return None
    lo = "?" if low is None else f"{low:.2f}"
    hi = "inf" if high_inf or high is None else f"{high:.2f}"
    return f"{point:.2f}x [{lo}, {hi}]"


def committed_ratios() -> set[str]:
    """Every ratio-with-interval of results/bench/*.json, formatted as the docs write them."""
    out = set()

    def walk(node):
        if isinstance(node, dict):
            if "ratio" in node and ("low" in node or "ci_low" in node):
                out.add(_fmt(node["ratio"], node.get("low", node.get("ci_low")), node.get("high", node.get("ci_high")),
                             node.get("high_inf") or node.get("ci_high_inf")))
            if "speedup" in node and "low" in node:  # survival.json: an AFT model's acceleration factor
                out.add(_fmt(node["speedup"], node["low"], node.get("high")))
            for key in [k for k in node if k.endswith("_ci_low")]:
                base = key.removesuffix("_ci_low")
                if base in node:
                    out.add(_fmt(node[base], node[key], node.get(base + "_ci_high")))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in RESULTS.glob("*.json"):
        walk(json.loads(path.read_text()))
    out.discard(None)
    return out | {s.replace("[0.00,", "[0,") for s in out}


@pytest.mark.parametrize("doc", ["README.md", "results/bench/README.md"])
def test_quoted_blocks_are_current(doc):
    text = (ROOT / doc).read_text()
    assert BLOCK.search(text), f"{doc} has no quoted block"
    _, stale = refresh(text)
    assert stale == [], f"{doc}: stale {stale}; run python -m pcbench.reports.quoted --write"


def test_every_quoted_interval_is_in_a_result_file():
    known = committed_ratios()
    missing = []
    for doc in DOCS:
        for m in RATIO.finditer(doc.read_text()):
            if m.group(0) not in known and m.group(0) not in HISTORICAL:
                missing.append(f"{doc.relative_to(ROOT)}: {m.group(0)}")
    assert missing == []


def test_historical_ones_are_still_quoted():
    text = "".join(d.read_text() for d in DOCS)
    assert [h for h in HISTORICAL if h not in text] == []


def test_readme_regime_map_ranges():
    cells = json.loads((RESULTS / "regime_map.json").read_text())["cells"]
    scored = [c for c in cells.values() if c["status"] == "scored" and c["runs"]["complete"]]
    vs_dapo = [c["pc_vs_dapo"]["ratio"] for c in scored]
    vs_grpo = [c["pc_vs_grpo"]["ratio"] for c in scored]
    readme = (ROOT / "README.md").read_text()
    assert f"{min(vs_dapo):.1f}-{max(vs_dapo):.1f}x ahead of DAPO in every cell" in readme
    assert all(c["pc_vs_dapo"]["low"] > 1 for c in scored)  # "ahead ... in every cell"
    assert f"{min(vs_grpo):.2f}"[:4] in "0.85 0.86" and f"{max(vs_grpo):.1f}" == "1.2"  # "within about 0.85-1.2x"
    assert not any(c["aa"]["resolves"] for c in cells.values())  # "no cell's A/A resolves"
    record = next(r for r in json.loads((RESULTS / "sample_efficiency.json").read_text())["records"]
                  if r["method"] == "pilot_commit")
    assert record["speedup_vs_dapo_ci_high"] < 2.3  # "by less than the paper's 2.3-4.0x"
    assert record["speedup_vs_dapo_ci_low"] > 1  # "ahead of DAPO (its interval lies above 1)"
    aa = json.loads((RESULTS / "sample_efficiency.json").read_text())["aa"]["paper"]
    assert aa["low"] <= record["speedup_vs_grpo"] <= aa["high"]  # "its ratio lies inside the A/A floor's"
    assert record["speedup_vs_grpo_ci_low"] <= 1 <= record["speedup_vs_grpo_ci_high"]  # "interval includes 1"


def test_quoted_percentages_are_in_a_result_file():
    """Shares quoted with one decimal (`21.4%`) in README.md and results/bench/README.md appear in a
    committed result .md (each rendered from its .json: tests/bench/test_rescore.py; regime_card.md
    from the run folders, with regime.csv beside it)."""
    rendered = "".join(p.read_text() for p in RESULTS.glob("*.md") if p.name != "README.md")
    missing = [f"{doc}: {m.group(0)}" for doc in ("README.md", "results/bench/README.md")
               for m in re.finditer(r"\d+\.\d%", (ROOT / doc).read_text()) if m.group(0) not in rendered]
    assert missing == []
