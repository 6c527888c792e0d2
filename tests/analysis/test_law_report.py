"""The committed law / survival / pre-run outputs regenerate identically from the committed CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcbench.reports import law as law_report

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "results" / "bench"
FILES = ("law.md", "law.json", "survival.md", "survival.json", "prerun.md", "prerun.json")


@pytest.mark.slow
def test_committed_outputs_regenerate_identically(tmp_path):
    assert law_report.main(["--bench", str(BENCH), "--out", str(tmp_path), "--figures", str(tmp_path / "fig")]) == 0
    for name in FILES:
        assert (tmp_path / name).read_text() == (BENCH / name).read_text(), name
    committed = (REPO / "paper_figures" / "law_informative_groups.csv").read_text()
    assert (tmp_path / "fig" / "law_informative_groups.csv").read_text() == committed
    assert (tmp_path / "fig" / "law_informative_groups.pdf").read_bytes() == (REPO / "paper_figures" / "law_informative_groups.pdf").read_bytes()
