"""The cell-speed comparison: its plan is checked before anything runs, identity means every logged
value but timings, and the table is computed from the folder's files alone."""

import json

import pytest

from pcbench.reports.cell_speed import load, render, wall_table
from pcbench.bench.cell_speed import compare_runs, load_plan
from pcbench.config import ConfigError


def _plan(tmp_path, **over):
    plan = {"cell": "p8-continuum-low", "versions": {"before": "a341e20", "after": "HEAD"},
            "order": ["before", "after"], "success": {"speedup_min": 2.0}, **over}
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(plan))  # JSON is YAML
    return path


def test_a_plan_naming_an_undefined_version_fails_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match="order names start, which versions does not define"):
        load_plan(_plan(tmp_path, order=["before", "start"]))
    with pytest.raises(ConfigError, match="missing success"):
        path = tmp_path / "p.yaml"
        path.write_text("cell: x\nversions: {a: HEAD}\norder: [a]\n")
        load_plan(path)


def _run(root, name, rows):
    folder = root / "exp" / name
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_identity_ignores_timings_and_names_the_first_difference(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "grpo-s0", [{"step": 0, "val/acc": 0.5, "time/elapsed_s": 1.0}, {"step": 1, "val/acc": 0.6, "time/step_s": 2.0}])
    _run(b, "grpo-s0", [{"step": 0, "val/acc": 0.5, "time/elapsed_s": 9.0}, {"step": 1, "val/acc": 0.6, "time/step_s": 7.0}])
    same = compare_runs(a, b)
    assert same["runs"] == 1 and same["values"] == 4 and same["differences"] == 0
    _run(a, "pc-s0", [{"step": 0, "val/acc": 0.5}])
    _run(b, "pc-s0", [{"step": 0, "val/acc": 0.5000001}])
    diff = compare_runs(a, b)
    assert diff["differences"] == 1 and diff["first"][0]["key"] == "val/acc" and diff["first"][0]["run"] == "pc-s0"


def test_the_table_is_computed_from_the_folder(tmp_path):
    out = tmp_path / "out"
    entries = []
    for key, version, wall, secs in [("before1", "before", 400.0, [300, 500]), ("after1", "after", 190.0, [150, 230]),
                                     ("before2", "before", 420.0, [310, 500]), ("after2", "after", 210.0, [160, 240])]:
        (out / key).mkdir(parents=True)
        report = {"provenance": {"machine": {"capability": "AVX2", "pinned": "pinned", "matmul": "pcbench detgemm",
                                             "fingerprint": "f" + version}, "warmstart_digests": ["w" + version]},
                  "cells": {"c": {"pc_vs_grpo": {"ratio": 1.2, "low": 0.9, "high": None, "high_inf": True},
                                  "aa": {"ratio": 1.0, "low": 0.8, "high": 1.25}}, "other": {}}, "failures": [],
                  "runs": [{"seconds": s} for s in secs]}
        (out / key / "regime_map.json").write_text(json.dumps(report))
        entries.append({"version": version, "repeat": int(key[-1]), "key": key, "commit": version[:3], "wall_s": wall,
                        "loadavg": [1.0, 1.0, 1.0]})
    meta = {"plan": "conf/bench/cell_speed.yaml", "launches": entries, "note": "alone",
            "provenance": {"machine": {"cpu": "AMD EPYC"}, "cpus": 2, "torch": "2.13.0", "date_utc": "2026-12-07"}}
    (out / "times.json").write_text(json.dumps(meta))
    table = wall_table(*load(out, "c"))
    assert table.set_index("version").wall_median.to_dict() == {"before": 410.0, "after": 200.0}
    text = render(out, {"cell": "c", "versions": {"before": "x", "after": "y"}, "success": {"speedup_min": 2.0}})
    assert "before / after: **2.05x** (plan: >= 2.0x: met)" in text
    assert "| before | bef | 2 | 400 / 410 / 420 | 805 |" in text
    assert "after: ATen AVX2 (pinned), products pcbench detgemm, fingerprint fafter, warm start wafter" in text
    assert "| after1 | 190 | 2 | 0 | 1.0 | 1.20 [0.90, inf] | 1.00 [0.80, 1.25] |" in text
    judged = render(out, {"cell": "c", "versions": {"before": "x", "after": "y"},
                          "success": {"speedup_min": 2.0, "same_picture": ["before", "after"]}})
    assert ("- Same picture, before1 vs after1: pc_vs_grpo 1.20 [0.90, inf] vs 1.20 [0.90, inf]: each inside the "
            "other's interval; aa 1.00 [0.80, 1.25] vs 1.00 [0.80, 1.25]: each inside the other's interval (plan: met).") in judged


def test_same_picture_needs_each_estimate_inside_the_others_interval():
    from pcbench.reports.cell_speed import same_picture

    old = {"pc_vs_grpo": {"ratio": 0.59, "low": 0.59, "high": 2.67}, "aa": {"ratio": 1.0, "low": 0.67, "high": 4.0}}
    close = {"pc_vs_grpo": {"ratio": 1.1, "low": 0.5, "high": None, "high_inf": True},
             "aa": {"ratio": 0.8, "low": 0.5, "high": 2.0}}
    assert same_picture(old, close) == {"pc_vs_grpo": True, "aa": True}
    # 3.0 lies outside the old interval: a different picture, even though the old 0.59 lies in the new one
    far = {**close, "pc_vs_grpo": {"ratio": 3.0, "low": 0.4, "high": 5.0}}
    assert same_picture(old, far)["pc_vs_grpo"] is False
    assert same_picture(old, {"aa": {"ratio": None}}) == {"pc_vs_grpo": None, "aa": None}
