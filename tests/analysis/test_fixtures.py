"""The committed fixture run folders are exactly what tests/fixtures/make_runs.py writes."""

from __future__ import annotations

import importlib.util


def load_generator(repo):
    path = repo / "tests" / "fixtures" / "make_runs.py"
    spec = importlib.util.spec_from_file_location("pcbench_make_fixture_runs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_fixtures_match_generator(repo, fixture_runs, tmp_path):
    load_generator(repo).write_all(tmp_path)
    committed = {k: v for k, v in tree(fixture_runs).items() if k != "README.md"}
    assert committed == tree(tmp_path)
