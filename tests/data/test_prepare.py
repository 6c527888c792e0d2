"""`python -m pcbench.data.prepare` on small local datasets shaped like the real Hugging Face ones."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pcbench.data import MissingDataError, check_data_files, prepare_command
from pcbench.data.prepare import main, prepare
from pcbench.data.specs import PROMPT_TEMPLATE, _deepmath_is_test
from pcbench.reward import verl_compute_score

REPO = Path(__file__).resolve().parents[2]


def read(path):
    return pd.read_parquet(path).to_dict("records")


def deepmath_like(tmp_path, n=400):
    # zwhe99/DeepMath-103K columns
    rows = [{"question": f"What is {i} + {i}?", "final_answer": str(2 * i), "difficulty": 3.0, "topic": "Algebra",
             "r1_solution_1": "...", "r1_solution_2": "...", "r1_solution_3": "..."} for i in range(n)]
    rows.append({"question": "Prove it.", "final_answer": "", "difficulty": 9.0, "topic": "Proof",
                 "r1_solution_1": "", "r1_solution_2": "", "r1_solution_3": ""})  # uncheckable: filtered
    rows.append(dict(rows[0]))  # duplicate question: kept once
    path = tmp_path / "deepmath.parquet"
    pd.DataFrame(rows).to_parquet(path)
    return path


def test_verl_schema_and_boxed_prompt(tmp_path):
    out = prepare("polaris", tmp_path / "out", source=str(_write_jsonl(tmp_path, "polaris.jsonl", [
        {"problem": "Compute 6*7.", "answer": "42", "difficulty": "1/8"},
        {"problem": "Compute 1/2+1/3.", "answer": "\\frac{5}{6}", "difficulty": "3/8"}])))
    rows = read(out)
    assert list(pd.read_parquet(out).columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    r = rows[0]
    assert r["data_source"] == "polaris" and r["ability"] == "math"
    assert list(r["prompt"]) == [{"role": "user", "content": PROMPT_TEMPLATE.format(question="Compute 6*7.")}]
    assert "\\boxed{}" in r["prompt"][0]["content"]
    assert r["reward_model"] == {"style": "rule", "ground_truth": "42"}
    assert r["extra_info"]["index"] == 0 and rows[1]["extra_info"]["index"] == 1
    # the ground truth is what the reward checks a \boxed{} answer against
    assert verl_compute_score("polaris", "so \\boxed{42}", r["reward_model"]["ground_truth"])["acc"]
    assert verl_compute_score("polaris", "\\boxed{5/6}", rows[1]["reward_model"]["ground_truth"])["acc"]


def test_deepmath_filter_and_disjoint_test_split(tmp_path):
    src = deepmath_like(tmp_path)
    train = read(prepare("deepmath", tmp_path / "out", source=str(src)))
    test = read(prepare("deepmath_test", tmp_path / "out", source=str(src)))
    q = lambda rows: {r["prompt"][0]["content"] for r in rows}
    assert len(train) + len(test) == 400 and not q(train) & q(test)  # uncheckable + duplicate dropped
    assert len(test) == sum(_deepmath_is_test(f"What is {i} + {i}?") for i in range(400)) >= 1
    assert {r["extra_info"]["split"] for r in test} == {"test"}


def test_aime_like_sets_are_repeated_32_times(tmp_path):
    src = tmp_path / "aime.parquet"  # HuggingFaceH4/aime_2024 columns
    pd.DataFrame([{"id": i, "problem": f"AIME problem {i}", "solution": "...", "answer": str(100 + i),
                   "url": "u", "year": "2024"} for i in range(3)]).to_parquet(src)
    rows = read(prepare("aime24", tmp_path / "out", source=str(src)))
    assert len(rows) == 3 * 32 and sorted({r["extra_info"]["repeat"] for r in rows}) == list(range(32))


def test_list_answers_and_question_columns(tmp_path):
    # OlympiadBench-style: `question` and a list-valued `final_answer`
    src = _write_jsonl(tmp_path, "ob.jsonl", [{"id": 1, "question": "Find x.", "final_answer": ["$3$"]}])
    assert read(prepare("olympiadbench", tmp_path / "out", source=str(src)))[0]["reward_model"]["ground_truth"] == "$3$"


def test_dapo17k_is_retemplated_and_deduplicated(tmp_path):
    content = ("Solve the following math problem step by step. The last line of your response should be of the "
               "form Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
               "How many primes are below 10?\n\nRemember to put your answer on its own line after \"Answer:\".")
    row = {"data_source": "math_dapo", "prompt": [{"role": "user", "content": content}], "ability": "MATH",
           "reward_model": {"ground_truth": "4", "style": "rule-lighteval/MATH_v2"}, "extra_info": {"index": "a"}}
    src = tmp_path / "dapo.parquet"
    pd.DataFrame([row, row]).to_parquet(src)  # the hub copy repeats each problem many times
    rows = read(prepare("dapo17k", tmp_path / "out", source=str(src)))
    assert len(rows) == 1
    assert rows[0]["prompt"][0]["content"] == PROMPT_TEMPLATE.format(question="How many primes are below 10?")


def test_hub_ids_go_through_datasets_load_dataset(tmp_path, monkeypatch):
    import datasets

    seen = {}

    def fake_load(path, name=None, split=None):
        seen.update(path=path, name=name, split=split)
        return datasets.Dataset.from_list([{"problem": "1+1?", "answer": "2", "subject": "x", "level": 1,
                                            "solution": "", "unique_id": "a"}])

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    rows = read(prepare("math500", tmp_path))
    assert seen == {"path": "HuggingFaceH4/MATH-500", "name": None, "split": "test"} and len(rows) == 1


def test_cli_writes_files_and_reports_unknown_names(tmp_path, capsys):
    src = _write_jsonl(tmp_path, "m.jsonl", [{"question": "2+2?", "answer": "4"}])
    assert main(["minerva", "--out", str(tmp_path / "o"), "--source", str(src)]) == 0
    assert "minerva: wrote" in capsys.readouterr().out and (tmp_path / "o" / "minerva.parquet").exists()
    with pytest.raises(SystemExit):
        main(["nope", "--out", str(tmp_path)])


def test_missing_files_name_the_command_that_prepares_them(tmp_path):
    (tmp_path / "aime24.parquet").write_bytes(b"")
    files = [tmp_path / "deepmath.parquet", tmp_path / "aime24.parquet", tmp_path / "math500.parquet"]
    with pytest.raises(MissingDataError) as e:
        check_data_files(files)
    msg = str(e.value)
    assert "\n" not in msg and f"python -m pcbench.data.prepare deepmath math500 --out {tmp_path}" in msg
    assert prepare_command([tmp_path / "x.parquet"]) == f"python -m pcbench.data.prepare x --out {tmp_path}"


def test_module_entry_point_runs(tmp_path):
    src = _write_jsonl(tmp_path, "a.jsonl", [{"problem": "3*3?", "answer": "9"}])
    out = subprocess.run([sys.executable, "-m", "pcbench.data.prepare", "aime25", "--out", str(tmp_path / "o"),
                          "--source", str(src)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(pd.read_parquet(tmp_path / "o" / "aime25.parquet")) == 32


def _write_jsonl(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ladder_sets_ask_after_worked_examples_and_are_scored_by_the_boxed_reward(tmp_path):
    """data=ladder (model=smollm2-135m): each prompt is the two worked sums as earlier chat turns,
    then the question; the answers are the sums; the shots' own answers pass the reward, and no
    ladder question repeats a shot (the model is not shown the answer it is asked for)."""
    from pcbench.data.specs import LADDER_SHOTS, LADDER_TIERS

    shot_questions = {PROMPT_TEMPLATE.format(question=q) for q, _ in LADDER_SHOTS}
    for name, n in [("ladder", 64)] + [(f"ladder_{t}", 16) for t in LADDER_TIERS]:
        rows = read(prepare(name, tmp_path))
        assert len(rows) == n, name
        for r in rows:
            turns = list(r["prompt"])
            assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
            assert [t["content"] for t in turns[1:4:2]] == [a for _, a in LADDER_SHOTS]
            question = turns[-1]["content"]
            assert question not in shot_questions and "\\boxed{}" in question
            a, b = question.split("?")[0].removeprefix("What is ").split("+")
            assert r["reward_model"]["ground_truth"] == str(int(a) + int(b))
    for q, a in LADDER_SHOTS:
        x, y = q.removeprefix("What is ").rstrip("?").split("+")
        assert verl_compute_score("ladder", a, str(int(x) + int(y)))["acc"]
