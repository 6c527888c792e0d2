"""Where each dataset comes from and how its rows map to (question, answer).

Column names are those of the public Hugging Face datasets; where sets disagree (`problem`
vs `question`, `answer` vs `final_answer`) a spec lists candidates, first match wins.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

# The instruction Qwen2.5-Math was tuned with; the verifier reads the last \boxed{}.
PROMPT_TEMPLATE = "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."

QUESTION_COLUMNS = ("problem", "question", "Problem", "Question")
ANSWER_COLUMNS = ("answer", "final_answer", "Answer", "ground_truth")


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    hf_id: str
    split: str
    role: str  # "train" | "val"
    hf_config: Optional[str] = None
    repeat: int = 1  # validation rows are written `repeat` times (AIME/AMC: 32 samples per problem)
    question_columns: tuple[str, ...] = QUESTION_COLUMNS
    answer_columns: tuple[str, ...] = ANSWER_COLUMNS
    # (question, answer) -> keep?  e.g. DeepMath's held-out test split
    keep: Optional[Callable[[str, str], bool]] = field(default=None, compare=False)
    # raw row -> (question, answer), for sets whose rows are not plain columns (DAPO-Math-17k)
    extract: Optional[Callable[[dict], tuple[str, str]]] = field(default=None, compare=False)
    # () -> raw table, for sets generated here instead of downloaded (hf_id is then a label)
    generate: Optional[Callable[[], "pd.DataFrame"]] = field(default=None, compare=False)
    # worked (question, answer) pairs written as earlier user / assistant turns before each
    # question: the answer format for a pretrained model that was never trained to box its answers
    shots: tuple[tuple[str, str], ...] = ()


def _deepmath_is_test(question: str) -> bool:
    # A stable 1-in-200 hash split (~515 of 103K): independent of row order and of the seed.
    return int(hashlib.sha1(question.strip().encode()).hexdigest(), 16) % 200 == 0


def _checkable(answer: str) -> bool:
    # "filtered" DeepMath: drop answers the rule-based verifier cannot compare (empty, prose).
    return 0 < len(answer) <= 100


_DAPO_HEAD = re.compile(r"^Solve the following math problem step by step\..*?\n\n", re.S)
_DAPO_TAIL = re.compile(r"\n\nRemember to put your answer on its own line after \"Answer:\"\.?\s*$")


def _dapo_extract(row: dict) -> tuple[str, str]:
    """DAPO-Math-17k rows are already verl-shaped with DAPO's `Answer:` template: strip it."""
    content = row["prompt"][0]["content"]
    question = _DAPO_TAIL.sub("", _DAPO_HEAD.sub("", content, count=1)).strip()
    return question, str(row["reward_model"]["ground_truth"])


ARITH_PHRASES = ("What is {a}+{b}?", "What is {a} plus {b}?", "Compute {a}+{b}.", "Add {a} and {b}.")


def _arith(split: str):
    """Generated one-digit sums in four phrasings (400 questions: 256 train / 32 test, disjoint):
    the tiny verl set (conf/data/tiny-verl.yaml) that runs the distributed path offline. The
    answers take 19 values, so the tiny model's short warm start (pcbench/backends/verl/tiny.py)
    is right on a fair share of rollouts and groups mix right and wrong answers."""
    def make():
        import numpy as np
        import pandas as pd

        items = [(t.format(a=a, b=b), str(a + b)) for t in ARITH_PHRASES for a in range(10) for b in range(10)]
        order = np.random.default_rng(4321).permutation(len(items))
        rows = order[32:288] if split == "train" else order[:32]
        return pd.DataFrame({"problem": [items[i][0] for i in rows], "answer": [items[i][1] for i in rows]})
    return make


LADDER_TIERS = ("add11", "add21", "add22", "add33", "add44")  # the embedded ladder, easiest first
# Two worked sums before each ladder question. Asked the bare question (with the boxed-answer
# instruction), SmolLM2-135M-Instruct answers in prose and never boxes (0 of 80 validation answers
# rewarded, before and after a GRPO step); after these turns it answers "a + b = c, so the answer
# is \\boxed{c}." (greedy: 4 of 8 sums of up to 3 digits right). Neither sum is in the ladder's sets.
LADDER_SHOTS = (("What is 2+5?", "2 + 5 = 7, so the answer is \\boxed{7}."),
                ("What is 31+14?", "31 + 14 = 45, so the answer is \\boxed{45}."))


def _ladder(split: str, tiers: tuple[str, ...], size: int):
    """The embedded task's ladder (pcbench/backends/embedded/task.py) as plain questions for a
    pretrained model ("What is 47+35?", the answer written normally): `size` problems per tier,
    drawn from a fixed seed per split (train 64 mixed over the tiers; validation one set per tier)."""
    def make():
        import numpy as np
        import pandas as pd

        from pcbench.backends.embedded.task import sample_problems

        rng = np.random.default_rng({"train": 1234, "test": 4321}[split])
        probs = sample_problems(size, {t: 1.0 for t in tiers}, rng)
        return pd.DataFrame({"problem": [f"What is {p.prompt[:-1]}?" for p in probs],
                             "answer": [p.answer for p in probs]})
    return make


SPECS: dict[str, DatasetSpec] = {s.name: s for s in [
    DatasetSpec("deepmath", "zwhe99/DeepMath-103K", "train", "train",
                answer_columns=("final_answer",), keep=lambda q, a: _checkable(a) and not _deepmath_is_test(q)),
    DatasetSpec("deepmath_test", "zwhe99/DeepMath-103K", "train", "val",
                answer_columns=("final_answer",), keep=lambda q, a: _checkable(a) and _deepmath_is_test(q)),
    DatasetSpec("polaris", "POLARIS-Project/Polaris-Dataset-53K", "train", "train"),
    DatasetSpec("dapo17k", "BytedTsinghua-SIA/DAPO-Math-17k", "train", "train", extract=_dapo_extract),
    DatasetSpec("aime24", "HuggingFaceH4/aime_2024", "train", "val", repeat=32),
    DatasetSpec("aime25", "math-ai/aime25", "test", "val", repeat=32),
    DatasetSpec("amc23", "math-ai/amc23", "test", "val", repeat=32),
    DatasetSpec("math500", "HuggingFaceH4/MATH-500", "test", "val"),
    DatasetSpec("minerva", "math-ai/minervamath", "test", "val"),
    DatasetSpec("olympiadbench", "math-ai/olympiadbench", "test", "val"),
    DatasetSpec("arith", "generated", "train", "train", generate=_arith("train")),
    DatasetSpec("arith_test", "generated", "test", "val", generate=_arith("test")),
    DatasetSpec("ladder", "generated", "train", "train", generate=_ladder("train", LADDER_TIERS, 64),
                shots=LADDER_SHOTS),
    *[DatasetSpec(f"ladder_{t}", "generated", "test", "val", generate=_ladder("test", (t,), 16), shots=LADDER_SHOTS)
      for t in LADDER_TIERS],
]}


def get_spec(name: str) -> DatasetSpec:
    if name not in SPECS:
        raise KeyError(f"unknown dataset {name!r}; choose from: {', '.join(SPECS)}")
    return SPECS[name]
