"""The layout holds: zero import circles in pcbench, analysis never imports bench (bench is a client
of analysis), and the regime card answers under both of its commands. Graph: tests/import_graph.py."""

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from import_graph import between, cycles, graph  # noqa: E402


def test_no_import_circles():
    assert cycles(graph()) == []


def test_analysis_never_imports_bench():
    assert between(graph(), "pcbench.analysis", "pcbench.bench") == []


def test_bench_uses_analysis():
    edges = {(a, b) for a, b in between(graph(), "pcbench.bench", "pcbench.analysis")}
    assert ("pcbench.bench.regime_map", "pcbench.analysis.map_report") in edges


def test_graph_sees_lazy_and_package_imports(tmp_path):
    """The circle this issue removed (bench/map_render <-> bench/regime_map, one side lazy) is found."""
    pkg = tmp_path / "pcbench"
    (pkg / "x").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "x" / "__init__.py").write_text("")
    (pkg / "x" / "a.py").write_text("from pcbench.x.b import f\n")
    (pkg / "x" / "b.py").write_text("def f():\n    from pcbench.x import a\n")
    assert cycles(graph(pkg)) == [["pcbench.x.a", "pcbench.x.b"]]


def test_moved_modules_are_gone_from_bench():
    for name in ("aa", "map_scoring", "map_render", "tables", "regime", "regime_plot", "render"):
        assert importlib.util.find_spec(f"pcbench.bench.{name}") is None, name
