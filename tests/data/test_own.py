"""Your own data file (conf/data/own.yaml, pcbench/data/own.py) through `python -m pcbench.data.prepare`:
the rows verl reads, with the built-in sets' prompt, and one line with exit code 2 for every bad file,
before anything is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from pcbench.data.own import make_data, usable
from pcbench.data.prepare import main
from pcbench.data.specs import PROMPT_TEMPLATE

REPO = Path(__file__).resolve().parents[2]
SUMS = [{"q": f"What is {a}+{b}?", "a": str(a + b)} for a in range(6) for b in range(6)]  # 36 questions


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def prepare(tmp_path, *overrides, capsys=None) -> int:
    return main(["data=own", f"data.root={tmp_path}/out", "data.question=q", "data.answer=a", *overrides])


def test_a_jsonl_with_its_own_columns_becomes_verl_rows(tmp_path, capsys):
    src = jsonl(tmp_path / "sums.jsonl", SUMS + [{"q": "Blank?", "a": ""}, SUMS[0]])
    assert prepare(tmp_path, f"data.source={src}", "data.val_size=6") == 0
    out = capsys.readouterr().out
    assert f"{src}: 38 rows, 36 kept; dropped 1 empty answers, 0 unverifiable answers, 1 repeated questions" in out
    train, val = (pd.read_parquet(tmp_path / "out" / f) for f in ("train.parquet", "val.parquet"))
    assert (len(train), len(val)) == (30, 6)
    assert not set(train["prompt"].map(lambda p: p[-1]["content"])) & set(val["prompt"].map(lambda p: p[-1]["content"]))
    row = train.iloc[0]
    q = row["prompt"][-1]["content"]
    assert q == PROMPT_TEMPLATE.format(question=q.split("\n")[0])  # the built-in sets' template
    gold = next(r["a"] for r in SUMS if r["q"] == q.split("\n")[0])
    assert row["reward_model"] == {"style": "rule", "ground_truth": gold}
    assert row["extra_info"]["reward"] == "math" and row["data_source"] == "own" and row["ability"] == "math"
    assert set(val["data_source"]) == {"own_val"} and set(val["extra_info"].map(lambda i: i["split"])) == {"test"}


def test_the_held_out_rows_do_not_depend_on_row_order(tmp_path):
    a = jsonl(tmp_path / "a.jsonl", SUMS)
    b = jsonl(tmp_path / "b.jsonl", SUMS[::-1])
    for src, out in ((a, "A"), (b, "B")):
        assert main(["data=own", f"data.source={src}", "data.question=q", "data.answer=a", f"data.root={tmp_path}/{out}",
                     "data.val_size=5"]) == 0
    qs = [sorted(pd.read_parquet(tmp_path / o / "val.parquet")["prompt"].map(lambda p: p[-1]["content"])) for o in "AB"]
    assert qs[0] == qs[1] and len(qs[0]) == 5


def test_a_csv_a_transform_and_a_validation_file(tmp_path, monkeypatch):
    pd.DataFrame({"text": [f"Q{i}: {i}*2 ||| {2 * i}" for i in range(20)]}).to_csv(tmp_path / "t.csv", index=False)
    pd.DataFrame({"text": ["Q99: 99*2 ||| 198", "Q98: 98*2 ||| 0196"]}).to_csv(tmp_path / "v.csv", index=False)
    (tmp_path / "mytransform.py").write_text("def split(row):\n    q, a = row['text'].split(' ||| ')\n    return q, a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["data=own", f"data.source={tmp_path}/t.csv", f"data.val_source={tmp_path}/v.csv",
                 "data.transform=mytransform:split", f"data.root={tmp_path}/out"]) == 0
    val = pd.read_parquet(tmp_path / "out" / "val.parquet")
    assert list(val["reward_model"].map(lambda r: r["ground_truth"])) == ["198", "0196"]  # csv read as text
    assert len(pd.read_parquet(tmp_path / "out" / "train.parquet")) == 20


def test_prepare_from_a_users_config_dir(tmp_path):
    jsonl(tmp_path / "sums.jsonl", SUMS)
    (tmp_path / "mine" / "data").mkdir(parents=True)
    (tmp_path / "mine" / "data" / "mymath.yaml").write_text(
        "defaults:\n  - own\n  - _self_\nname: mymath\nsource: sums.jsonl\nquestion: q\nanswer: a\nval_size: 4\n"
        "root: prepared\n")
    out = subprocess.run([sys.executable, "-m", "pcbench.data.prepare", "--config-dir", "mine", "data=mymath"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "wrote prepared/train.parquet (32 rows)" in out.stdout
    assert set(pd.read_parquet(tmp_path / "prepared" / "train.parquet")["data_source"]) == {"mymath"}


@pytest.mark.parametrize("make,overrides,line", [
    (None, ["data.source=nowhere.jsonl"],
     "data.source=nowhere.jsonl: no such file; set data.source=<your .parquet/.jsonl/.json/.csv file>"),
    (lambda p: p.with_suffix(".txt").write_text("x"), ["data.source={d}/sums.txt"],
     "data.source={d}/sums.txt: cannot read .txt; convert it to .parquet, .jsonl, .json or .csv"),
    (lambda p: jsonl(p, SUMS), ["data.source={d}/sums.jsonl", "data.question=question"],
     "{d}/sums.jsonl: no column 'question' (data.question); the file has ['q', 'a']; set data.question=<one of them>"),
    (lambda p: p.write_text(""), ["data.source={d}/sums.jsonl"],
     "{d}/sums.jsonl: no rows; point data.source at a file with one question per row"),
    (lambda p: p.write_text('{"q": "1+1", "a": 2}\n{"q": broken\n'), ["data.source={d}/sums.jsonl"],
     "data.source={d}/sums.jsonl: cannot read it as .jsonl (ValueError: Expected object or value); fix the file or "
     "convert it"),
    (lambda p: jsonl(p, SUMS), ["data.source={d}/sums.jsonl", "data.answer=q"],
     "{d}/sums.jsonl: 36 of 36 answers are empty or unverifiable by reward 'math' (data.answer=q); point data.answer "
     "at the final-answer column (or a data.transform that extracts it)"),
    (lambda p: jsonl(p, [{"q": r["q"], "a": "see the worked solution above"} for r in SUMS[:20]] + SUMS[20:]),
     ["data.source={d}/sums.jsonl"],
     "{d}/sums.jsonl: 20 of 36 answers are empty or unverifiable by reward 'math' (data.answer=a); point data.answer "
     "at the final-answer column (or a data.transform that extracts it)"),
    (lambda p: jsonl(p, SUMS), ["data.source={d}/sums.jsonl", "data.val_size=36"],
     "data.val_size=36 leaves no training rows of 36; lower data.val_size or give data.val_source"),
])
def test_a_bad_file_gets_one_line_and_exit_2_and_nothing_written(tmp_path, capsys, make, overrides, line):
    if make is not None:
        make(tmp_path / "sums.jsonl")
    assert prepare(tmp_path, *[o.format(d=tmp_path) for o in overrides]) == 2
    err = capsys.readouterr().err
    assert err == f"pcbench: data error: {line.format(d=tmp_path)}\n"
    assert not (tmp_path / "out").exists()


def test_answers_the_math_reward_cannot_check():
    for answer in ("42", "\\frac{1}{2}", "x = 3 or x = 5", "(0, 1]", "No solution", "\\sqrt{2} \\cdot \\pi"):
        assert usable(answer, "math"), answer
    for answer in ("", "the answer depends on the weather", "1" * 101):
        assert not usable(answer, "math"), answer
    assert usable("the answer depends on the weather", "my_prose_judge")  # another reward's format is its own


def test_make_data_rewrites_only_when_the_source_or_settings_change(tmp_path, capsys):
    src = jsonl(tmp_path / "sums.jsonl", SUMS)
    cfg = OmegaConf.create({"paths": {"cache": str(tmp_path)}, "data": OmegaConf.load(REPO / "conf/data/own.yaml")})
    cfg.data.update({"source": str(src), "question": "q", "answer": "a", "val_size": 4})
    make_data(cfg.data.root, cfg)
    assert "preparing data=own" in capsys.readouterr().out
    make_data(cfg.data.root, cfg)
    assert capsys.readouterr().out == ""  # same source, same settings: nothing to do
    cfg.data.val_size = 6
    make_data(cfg.data.root, cfg)
    assert "preparing" in capsys.readouterr().out
    assert len(pd.read_parquet(Path(cfg.data.root) / "val.parquet")) == 6
