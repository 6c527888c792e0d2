"""Your own data set as verl parquet, from a data config (conf/data/own.yaml), with no fork.

    python -m pcbench.data.prepare data=own data.source=my_math.jsonl data.question=q data.answer=a

The config names a local file (.parquet, .jsonl, .json or .csv) and its question / answer
columns, or `data.transform`, a module:function that maps one raw row (a dict) to
(question, answer). The rows get the built-in sets' prompt template and schema
(pcbench/data/prepare.py), plus extra_info.reward = data.reward (the reward that scores them,
pcbench/reward/registry.py). Validation is `data.val_source` (same columns), or, when null,
`data.val_size` rows held out of the source by a hash of the question (stable under reordering).

Checked before anything is written, each failure one line naming the file, the column and
the fix (DataFileError; `prepare` exits 2): the file exists and reads, the columns exist, rows
remain, and answers are usable: empty answers, and under the `math` reward prose, answers over
100 characters and answers it cannot match even as their own boxed copy, are dropped and counted; more than half dropped means the
column is wrong, and that fails.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from pcbench.data.files import MissingDataError
from pcbench.data.rows import to_verl_rows
from pcbench.data.specs import DatasetSpec

READABLE = (".parquet", ".jsonl", ".json", ".csv")
INFO = "own_data.json"  # beside the parquet files: what they were made from, so a changed config remakes them


class DataFileError(MissingDataError):
    """A data file that cannot make a data set; the message is one line with the fix.
    (A MissingDataError, so `python -m pcbench.run` reports it as a data error, exit 2.)"""


@dataclass(frozen=True)
class Report:
    """What prepare kept and dropped, said before anything is written."""
    rows: int
    kept: int
    empty: int
    unverifiable: int
    duplicates: int

    def line(self, path: str) -> str:
        return (f"{path}: {self.rows} rows, {self.kept} kept; dropped {self.empty} empty answers, "
                f"{self.unverifiable} unverifiable answers, {self.duplicates} repeated questions")


def read_table(path: str | Path, key: str = "data.source") -> pd.DataFrame:
    """The raw table of a local file; DataFileError naming the file and the fix."""
    p = Path(str(path)).expanduser()
    if not p.is_file():
        raise DataFileError(f"{key}={path}: no such file; set {key}=<your .parquet/.jsonl/.json/.csv file>")
    suffix = p.suffix.lower()
    if suffix not in READABLE:
        raise DataFileError(f"{key}={path}: cannot read {suffix or 'a file without suffix'}; "
                            f"convert it to .parquet, .jsonl, .json or .csv")
    try:
        if suffix == ".parquet":
            return pd.read_parquet(p)
        if suffix == ".csv":
            return pd.read_csv(p, dtype=str, keep_default_na=False)  # "007" and "NA" are answers, not numbers
        return pd.read_json(p, lines=suffix == ".jsonl", dtype=False)
    except Exception as e:  # noqa: BLE001  (any parse failure: the file is the user's to fix)
        first = (str(e).splitlines() or [""])[0]
        raise DataFileError(f"{key}={path}: cannot read it as {suffix} ({type(e).__name__}: {first}); "
                            f"fix the file or convert it") from None


def _transform(spec: str) -> Callable[[dict], tuple[str, str]]:
    module, _, name = str(spec).partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except Exception as e:  # noqa: BLE001
        first = (str(e).splitlines() or [""])[0]
        raise DataFileError(f"data.transform={spec}: cannot import it ({type(e).__name__}: {first}); "
                            f"put its folder on PYTHONPATH, or use data.question / data.answer") from None


def raw_pairs(frame: pd.DataFrame, data, path: str) -> list[tuple[str, str]]:
    """(question, answer) per row, by columns or by data.transform."""
    if len(frame) == 0:
        raise DataFileError(f"{path}: no rows; point data.source at a file with one question per row")
    if data.get("transform"):
        fn = _transform(data.transform)
        try:
            return [tuple(map(str, fn(row))) for row in frame.to_dict("records")]  # type: ignore[misc]
        except Exception as e:  # noqa: BLE001
            raise DataFileError(f"{path}: data.transform={data.transform} failed on a row ({type(e).__name__}: {e}); "
                                f"it must map a row dict to (question, answer)") from None
    for key in ("question", "answer"):
        column = str(data[key])
        if column not in frame.columns:
            raise DataFileError(f"{path}: no column {column!r} (data.{key}); the file has {list(frame.columns)}; "
                                f"set data.{key}=<one of them>")
    return [(_text(q), _text(a)) for q, a in zip(frame[str(data.question)], frame[str(data.answer)])]


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):  # None / NaN: an empty cell
        return ""
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) == 1:  # a list of answers: the first
        value = list(value)[0] if len(value) else ""
    return str(value).strip()


# three words of prose in a row (not LaTeX commands such as \\cdot): a sentence, not a final answer
PROSE = re.compile(r"(?:(?<![\\A-Za-z])[A-Za-z]{2,}\s+){2,}(?<![\\A-Za-z])[A-Za-z]{2,}")
MAX_ANSWER = 100  # DeepMath's "filtered" rule too: longer gold answers are explanations


def usable(answer: str, reward: str) -> bool:
    """Can the reward ever say yes to this answer? For `math`: a short, non-prose answer whose
    own boxed copy it scores right; another reward's answer format is its own business."""
    if not answer:
        return False
    if reward != "math":
        return True
    if len(answer) > MAX_ANSWER or PROSE.search(answer.replace("\\text", "")):
        return False
    from pcbench.reward.math_reward import compute_score

    result = compute_score(f"\\boxed{{{answer}}}", answer, timeout_s=1.0)
    return result.acc and not result.parse_failed


def clean(pairs: list[tuple[str, str]], reward: str, path: str, answer_key: str) -> tuple[list, Report]:
    """Rows with an empty question, an empty or unverifiable answer, or a repeated question dropped."""
    seen, kept, empty, bad, dup = set(), [], 0, 0, 0
    for question, answer in pairs:
        if not question or not answer:
            empty += 1
        elif question in seen:
            dup += 1
        elif not usable(answer, reward):
            bad += 1
        else:
            seen.add(question)
            kept.append((question, answer))
    report = Report(len(pairs), len(kept), empty, bad, dup)
    if not kept or empty + bad > len(pairs) / 2:
        raise DataFileError(f"{path}: {empty + bad} of {len(pairs)} answers are empty or unverifiable by reward "
                            f"{reward!r} ({answer_key}); point data.answer at the final-answer column "
                            f"(or a data.transform that extracts it)")
    return kept, report


def held_out(question: str) -> str:
    return hashlib.sha1(question.encode()).hexdigest()


def split(pairs: list, val_size: int) -> tuple[list, list]:
    """(train, validation): the val_size questions of lowest hash (independent of row order)."""
    if val_size >= len(pairs):
        raise DataFileError(f"data.val_size={val_size} leaves no training rows of {len(pairs)}; lower data.val_size "
                            f"or give data.val_source")
    chosen = set(sorted((held_out(q) for q, _ in pairs))[:val_size])
    return [p for p in pairs if held_out(p[0]) not in chosen], [p for p in pairs if held_out(p[0]) in chosen]


def frames(data) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(train rows, validation rows, report lines) in verl's schema; raises before anything is written."""
    reward = str(data.get("reward") or "math")
    source = str(data.source)
    answer_key = f"data.transform={data.transform}" if data.get("transform") else f"data.answer={data.answer}"
    train, report = clean(raw_pairs(read_table(source), data, source), reward, source, answer_key)
    lines = [report.line(source)]
    if data.get("val_source"):
        val_path = str(data.val_source)
        val, val_report = clean(raw_pairs(read_table(val_path, "data.val_source"), data, val_path), reward,
                                val_path, answer_key)
        lines.append(val_report.line(val_path))
    else:
        train, val = split(train, int(data.val_size))
        lines.append(f"validation: {len(val)} rows held out of {source} (data.val_size)")
    name = str(data.name)
    out = []
    for pairs, role in ((train, "train"), (val, "val")):
        spec = DatasetSpec(name if role == "train" else f"{name}_val", source, "train", role)
        rows = to_verl_rows(spec, pairs)
        rows["extra_info"] = [{**info, "reward": reward} for info in rows["extra_info"]]
        out.append(rows)
    return out[0], out[1], lines


def fingerprint(data) -> dict:
    """What the written files depend on: the settings and each source file's size and time."""
    keys = ("name", "source", "question", "answer", "transform", "reward", "val_source", "val_size")
    out: dict[str, Any] = {k: (None if data.get(k) is None else str(data.get(k))) for k in keys}
    for k in ("source", "val_source"):
        p = Path(str(data.get(k))).expanduser() if data.get(k) else None
        out[f"{k}_stat"] = [p.stat().st_size, p.stat().st_mtime_ns] if p and p.is_file() else None
    return out


def write(data, log=print) -> list[Path]:
    """Write data.train_files and data.val_files[0] (checks first); the paths written."""
    train, val, lines = frames(data)
    for line in lines:
        log(line)
    targets = [Path(str(data.train_files)), Path(str(list(data.val_files)[0]))]
    for frame, path in zip((train, val), targets):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".parquet.tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(path)  # a crash never leaves a half-written file under the real name
        log(f"wrote {path} ({len(frame)} rows)")
    (targets[0].parent / INFO).write_text(json.dumps(fingerprint(data), indent=1))
    return targets


def make_data(root: str | Path, cfg) -> Path:
    """`data.make` of conf/data/own.yaml: (re)write the parquet files when missing or made from
    other settings or another version of the source file."""
    data = cfg.data
    targets = [Path(str(data.train_files)), *(Path(str(f)) for f in data.val_files)]
    info = Path(str(data.train_files)).parent / INFO
    have = json.loads(info.read_text()) if info.is_file() else None
    if all(t.exists() for t in targets) and have == json.loads(json.dumps(fingerprint(data))):
        return Path(root)
    print(f"pcbench: preparing data={data.name} from {data.source} into {root}", flush=True)
    write(data, log=lambda line: print(f"pcbench: {line}", flush=True))
    return Path(root)
