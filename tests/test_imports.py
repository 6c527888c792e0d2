"""The layout holds: zero import circles in pcbench; imports run one way, down the layers
backends < analysis (the library) < reports < bench: the backends import neither the analysis nor
the experiments, the analysis never imports the experiments, and nothing but the experiments and
the reports themselves imports a report. Graph: tests/import_graph.py."""

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from import_graph import between, cycles, graph  # noqa: E402


def test_no_import_circles():
    assert cycles(graph()) == []


def test_analysis_never_imports_bench():
    assert between(graph(), "pcbench.analysis", "pcbench.bench") == []


def test_backends_import_neither_bench_nor_analysis():
    edges = graph()
    assert between(edges, "pcbench.backends", "pcbench.bench") == []
    assert between(edges, "pcbench.backends", "pcbench.analysis") == []


def test_layer_test_sees_an_upward_import(tmp_path):
    """The check above finds a lazy backend -> analysis import (what backends/embedded/warmstart.py had)."""
    pkg = tmp_path / "pcbench"
    for sub in ("backends", "analysis"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "analysis" / "note.py").write_text("def stages():\n    pass\n")
    (pkg / "backends" / "warm.py").write_text("def f():\n    from pcbench.analysis.note import stages\n")
    assert between(graph(pkg), "pcbench.backends", "pcbench.analysis") == [("pcbench.backends.warm",
                                                                           "pcbench.analysis.note")]


def library_imports_of_reports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges into pcbench.reports from any module outside the reports and the experiments."""
    clients = ("pcbench.reports", "pcbench.bench")
    return sorted((a, b) for a, bs in edges.items() for b in bs
                  if b.startswith("pcbench.reports") and not a.startswith(clients))


def test_the_library_never_imports_a_report():
    edges = graph()
    assert library_imports_of_reports(edges) == []
    assert between(edges, "pcbench.reports", "pcbench.bench") == []


def test_report_check_sees_a_library_module_importing_a_report():
    edges = {"pcbench.analysis.regime": {"pcbench.reports.regime_map"}, "pcbench.bench.regime_map":
             {"pcbench.reports.regime_map"}, "pcbench.reports.regime_map": {"pcbench.analysis.regime"}}
    assert library_imports_of_reports(edges) == [("pcbench.analysis.regime", "pcbench.reports.regime_map")]


def test_bench_uses_reports_and_reports_use_analysis():
    edges = graph()
    assert ("pcbench.bench.regime_map", "pcbench.reports.regime_map") in between(edges, "pcbench.bench", "pcbench.reports")
    assert ("pcbench.reports.regime_map", "pcbench.analysis.map_scoring") in between(edges, "pcbench.reports",
                                                                                      "pcbench.analysis")


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
