"""What a map report records about the commands that produced it (pcbench/bench/regime_map.run_provenance)."""

import json

from pcbench.bench.regime_map import run_provenance


def _meta(command, commit="c2"):
    return {"command": command, "commit": commit, "machine": {"capability": "AVX2"}}


def test_a_second_part_keeps_the_first_parts_record(tmp_path):
    previous = tmp_path / "map.json"
    previous.write_text(json.dumps({"provenance": {**_meta("regime_map --part 1", "c1"), "warmstart_digests": ["a"]}}))
    out = run_provenance(_meta("regime_map --part 2"), ["a", "b"], previous)
    assert out["command"] == "regime_map --part 2" and out["warmstart_digests"] == ["a", "b"]
    assert [e["command"] for e in out["earlier"]] == ["regime_map --part 1"] and out["earlier"][0]["commit"] == "c1"
    # rerunning part 2 later keeps part 1 once and does not list part 2 as its own predecessor
    previous.write_text(json.dumps({"provenance": out}))
    again = run_provenance(_meta("regime_map --part 2", "c3"), ["a", "b"], previous)
    assert [e["command"] for e in again["earlier"]] == ["regime_map --part 1"]


def test_a_rescore_keeps_the_recorded_provenance_and_adds_its_own(tmp_path):
    previous = tmp_path / "map.json"
    recorded = {**_meta("regime_map --part 1", "c1"), "warmstart_digests": ["a"]}
    previous.write_text(json.dumps({"provenance": recorded}))
    out = run_provenance(_meta("regime_map --score-only"), [], previous)
    assert {k: v for k, v in out.items() if k != "rescored"} == recorded
    assert out["rescored"]["command"] == "regime_map --score-only"
    assert run_provenance(_meta("x"), [], tmp_path / "absent.json") == _meta("x")
