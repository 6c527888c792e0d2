"""Turn a Hugging Face math dataset into verl's RL parquet schema.

    python -m pcbench.data.prepare deepmath aime24 aime25 amc23 math500 minerva olympiadbench deepmath_test --out data/verl
    python -m pcbench.data.prepare polaris --out data/verl --source /datasets/polaris.parquet

Each NAME (see pcbench/data/specs.py) is read from its Hugging Face id with
`datasets.load_dataset`, or from `--source` (a .parquet/.jsonl/.json/.csv file, a
`save_to_disk` folder, or another hub id), and written to OUT/NAME.parquet with the columns
verl's RLHFDataset and reward loop read:

    data_source  str            the set name (validation metrics are grouped by it)
    prompt       [{role, content}]  one user turn: the question + "put your final answer within \\boxed{}"
                                    (after the spec's worked examples as user / assistant turns, if any)
    ability      "math"
    reward_model {style: "rule", ground_truth: str}
    extra_info   {index: int, split: str, repeat: int}

Your own file, named by a data config instead of a NAME (conf/data/own.yaml, docs/own-data.md;
Hydra overrides and --config-dir as `python -m pcbench.run` takes them):

    python -m pcbench.data.prepare data=own data.source=my_math.jsonl data.question=q data.answer=a
    python -m pcbench.data.prepare --config-dir mine data=mymath

Validation sets marked `repeat` (AIME24/25, AMC23: 32) are written that many times, so one
sample per row at val_kwargs.n=1 gives the paper's mean over 32 samples.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from pcbench.data.rows import chat_prompt, to_verl_rows  # noqa: F401  (chat_prompt: re-exported)
from pcbench.data.specs import SPECS, DatasetSpec, get_spec


def load_frame(spec: DatasetSpec, source: str | None = None) -> pd.DataFrame:
    """The raw table of `spec` from a local file/folder, or from the hub via `datasets`
    (a generated set, e.g. `arith`, is made here unless `source` is given)."""
    if source is None and spec.generate is not None:
        return spec.generate()
    src = source or spec.hf_id
    path = Path(src).expanduser()
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".json"):
            return pd.read_json(path, lines=suffix == ".jsonl")
        if suffix == ".csv":
            return pd.read_csv(path)
        raise ValueError(f"{path}: unsupported file type {suffix!r} (use .parquet, .jsonl, .json or .csv)")
    import datasets  # only for hub ids and save_to_disk folders: it is slow to import

    if path.is_dir():
        ds = datasets.load_from_disk(str(path))
        if isinstance(ds, datasets.DatasetDict):
            ds = ds[spec.split]
    else:
        ds = datasets.load_dataset(src, spec.hf_config, split=spec.split)
    return ds.to_pandas()


def _first_column(frame: pd.DataFrame, candidates: tuple[str, ...], what: str, name: str) -> str:
    for col in candidates:
        if col in frame.columns:
            return col
    raise ValueError(f"{name}: no {what} column among {list(candidates)}; the source has {list(frame.columns)}")


def _as_answer(value) -> str:
    # OlympiadBench-style sets keep a list of final answers: the first is the canonical one.
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) == 1:
        value = list(value)[0] if len(value) else ""
    return str(value).strip()


def question_answer_pairs(spec: DatasetSpec, frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(question, answer) per source row, filtered by spec.keep and deduplicated on the question."""
    if spec.extract is not None:
        pairs = [spec.extract(row) for row in frame.to_dict("records")]
    else:
        q = _first_column(frame, spec.question_columns, "question", spec.name)
        a = _first_column(frame, spec.answer_columns, "answer", spec.name)
        pairs = [(str(x).strip(), _as_answer(y)) for x, y in zip(frame[q], frame[a])]
    seen, out = set(), []
    for question, answer in pairs:
        if not question or question in seen or (spec.keep is not None and not spec.keep(question, answer)):
            continue
        seen.add(question)
        out.append((question, answer))
    return out


def prepare(name: str, out_dir: str | Path, source: str | None = None) -> Path:
    spec = get_spec(name)
    pairs = question_answer_pairs(spec, load_frame(spec, source))
    if not pairs:
        raise ValueError(f"{name}: no rows left after filtering; check --source")
    out = Path(out_dir) / f"{name}.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".parquet.tmp")
    to_verl_rows(spec, pairs).to_parquet(tmp, index=False)
    tmp.replace(out)  # a crash never leaves a half-written file under the real name
    return out


def config_mode(argv: list[str]) -> bool:
    """Overrides (key=value) or a config folder: the data config's own file, not built-in NAMEs."""
    return any("=" in a or a in ("--config-dir", "-cd", "--config-name", "-cn") for a in argv)


def prepare_from_config(argv: list[str]) -> int:
    """Compose the data config as a run would and write its parquet (pcbench/data/own.py)."""
    from pcbench.data.own import DataFileError, write
    from pcbench.errors import ConfigError
    from pcbench.preflight import compose_args
    from pcbench.rules import VERL_RULES

    try:
        cfg = compose_args(argv)
        if cfg.data.get("source") is None:
            raise ConfigError(f"data={cfg.data.name} names no data.source file; prepare its sets by name "
                              f"(python -m pcbench.data.prepare NAME --out DIR) or use data=own data.source=FILE")
        for rule in VERL_RULES:  # the data config's own keys; the model and backend do not matter here
            if rule.key.startswith("data."):
                rule.check(cfg)
        write(cfg.data)
    except (ConfigError, DataFileError) as e:
        print(f"pcbench: {'data' if isinstance(e, DataFileError) else 'config'} error: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if config_mode(argv):
        return prepare_from_config(argv)
    ap = argparse.ArgumentParser(prog="python -m pcbench.data.prepare", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="+", metavar="NAME",
                    help=f"one or more of: {', '.join(SPECS)} (or data=own data.source=FILE ...: your own file)")
    ap.add_argument("--out", required=True, help="output folder (the data config's data.root)")
    ap.add_argument("--source", help="local file/folder or hub id to read instead of the default (one NAME only)")
    args = ap.parse_args(argv)
    if args.source and len(args.names) > 1:
        ap.error("--source applies to a single NAME")
    for name in args.names:
        if name not in SPECS:
            ap.error(f"unknown dataset {name!r}; choose from: {', '.join(SPECS)}; or your own file: "
                     f"data=own data.source=FILE data.question=COLUMN data.answer=COLUMN")
    for name in args.names:
        path = prepare(name, args.out, args.source)
        print(f"{name}: wrote {path} ({len(pd.read_parquet(path, columns=['data_source']))} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
