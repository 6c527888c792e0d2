"""Run folders: identity from the config, resume-or-refuse, crash-safe files."""

import json

import pytest
from omegaconf import OmegaConf

from pcbench.rundir import RunDir, RunFolderError, Summary, run_id


def cfg(tmp_path, **kw):
    base = {"experiment": "t", "seed": 0, "resume": "auto", "method": {"name": "grpo", "n": 16},
            "model": {"name": "m"}, "data": {"name": "d"}, "backend": {"name": "embedded"},
            "paths": {"results": str(tmp_path)}, "logging": {"progress": True}}
    base.update(kw)
    return OmegaConf.create(base)


def test_same_config_same_folder_and_logging_keys_do_not_change_identity(tmp_path):
    a = cfg(tmp_path)
    b = cfg(tmp_path, logging={"progress": False})
    assert run_id(a) == run_id(b) and run_id(a).startswith("grpo-m-d-s0-")
    assert run_id(a) != run_id(cfg(tmp_path, seed=1))


def test_unfinished_resumes_finished_refuses(tmp_path):
    c = cfg(tmp_path)
    r = RunDir.prepare(c)
    assert not r.resumed and (r.path / "config.yaml").exists()
    assert RunDir.prepare(c).resumed
    r.write_summary(Summary("finished", r.path.name, "embedded", "grpo", 0, 0, 0, None, 0.0))
    with pytest.raises(RunFolderError, match="finished run"):
        RunDir.prepare(c)


def test_resume_never_refuses_an_existing_folder(tmp_path):
    RunDir.prepare(cfg(tmp_path))
    with pytest.raises(RunFolderError, match="resume=never"):
        RunDir.prepare(cfg(tmp_path, resume="never"))


def test_a_different_config_in_the_folder_is_refused_not_merged(tmp_path):
    c = cfg(tmp_path)
    r = RunDir.prepare(c)
    tampered = OmegaConf.to_container(c)
    tampered["method"]["n"] = 8
    (r.path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(tampered)))
    before = (r.path / "config.yaml").read_text()
    with pytest.raises(RunFolderError, match="different config"):
        RunDir.prepare(c)
    assert (r.path / "config.yaml").read_text() == before


def test_metrics_survive_a_torn_last_line_and_truncate_to_checkpoint(tmp_path):
    r = RunDir.prepare(cfg(tmp_path))
    for s in range(5):
        r.append_metrics({"step": s, "cumulative_rollouts": 10 * s})
    with open(r.metrics_path, "a") as f:
        f.write('{"step": 5, "cumul')  # a crash mid-write
    assert [row["step"] for row in r.read_metrics()] == [0, 1, 2, 3, 4]
    assert [row["step"] for row in r.truncate_metrics(2)] == [0, 1, 2]
    assert [json.loads(line)["step"] for line in r.metrics_path.read_text().splitlines()] == [0, 1, 2]


def test_the_run_folder_doc_lists_every_key_outside_the_identity():
    from pathlib import Path

    from pcbench.rundir import NON_IDENTITY_KEYS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "run_folder.md").read_text()
    intro = doc[:doc.index("## Its life")]
    assert all(f"`{key}`" in intro for key in NON_IDENTITY_KEYS), "update docs/run_folder.md's identity keys"


def test_atomic_writes_are_readable_by_others_as_open_would_make_them(tmp_path):
    """Run folders and the bench's reports are shared and committed: mkstemp's 0600 must not stick."""
    import os
    import stat

    from pcbench.rundir import atomic_write_json, atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.md", "x\n")
        atomic_write_json(tmp_path / "b.json", {"a": 1})
    finally:
        os.umask(old)
    for name in ("a.md", "b.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644
