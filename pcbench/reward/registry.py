"""Rewards by name: what scores a rollout is chosen per data set (`data.reward`), with no fork.

This module finds and runs a reward by name (in the guard's worker: `run_in_worker`);
pcbench/reward/named.py is the caller's side (`score`: math in-process, the rest in the guard).

A reward is one function (the signature verl's custom rewards have, less `data_source`):

    def score(response: str, ground_truth: str, extra_info: dict) -> bool | dict

`response` is the model's decoded answer text, `ground_truth` the row's
reward_model.ground_truth (the `answer` column, as written by pcbench.data.prepare) and
`extra_info` the row's extra_info (index, split, repeat, reward). Return `acc`, the boolean
the allocators' filters read (right or wrong), or a dict with "acc": bool and optionally
"score": float (default +1 / -1) and "pred": str (the answer read from the response).

A name is an entry point of the `pcbench.rewards` group, declared by any installed package

    [project.entry-points."pcbench.rewards"]
    my_code = "my_pkg.rewards:score"

or "module:function" given directly. pcbench's own `math` (the paper's boxed-answer verifier,
pcbench.reward.math_reward:score_math) is declared the same way in pcbench's pyproject.toml.

Every reward but `math` runs in the process guard's workers (procguard.py), whatever the
calling thread: under a `timeout_s` deadline in the worker's main thread, and killed after
`timeout_s` + the guard's grace when it does not answer. A reward that raises, returns no
`acc` or runs out of time scores wrong (acc False, score -1) and is reported once on stderr.
The guard bounds time and survives crashes; it is not a sandbox: a reward must parse the
response, never eval/exec it (`math` never does).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, Mapping

GROUP = "pcbench.rewards"
BUILTIN = "math"
# used when pcbench's own entry points are not installed (a checkout on PYTHONPATH, no pip install)
FALLBACK = {BUILTIN: "pcbench.reward.math_reward:score_math"}
HOW = f"add your own: a {GROUP!r} entry point or module:function (docs/own-data.md)"


def known() -> dict[str, str]:
    """{name: "module:function"} of every installed reward, pcbench's own first."""
    from importlib.metadata import entry_points

    found = dict(FALLBACK)
    found.update({ep.name: ep.value for ep in entry_points(group=GROUP)})
    return found


def target(name: str) -> str:
    """The "module:function" a reward name stands for; ValueError (one line) when none."""
    name = str(name).strip()
    if ":" in name:
        return name
    table = known()
    if name not in table:
        raise ValueError(f"no reward named {name!r}; choose one of: {', '.join(sorted(table))}; or {HOW}")
    return table[name]


@functools.lru_cache(maxsize=32)
def load(name: str) -> Callable[..., Any]:
    """The scoring function of `name`, imported once per process; ValueError (one line) on failure."""
    spec = target(name)
    module, _, attr = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except Exception as e:  # noqa: BLE001  (any failure of the user's module is the user's to fix)
        first = (str(e).splitlines() or [""])[0]
        raise ValueError(f"reward {name!r} ({spec}): cannot import it ({type(e).__name__}: {first}); "
                         f"put its folder on PYTHONPATH or pip install its package") from None
    if not callable(fn):
        raise ValueError(f"reward {name!r} ({spec}) is not a function; point it at "
                         f"score(response, ground_truth, extra_info)")
    return fn


def problem(name: Any) -> str | None:
    """Why `name` cannot be used as a reward (a config rule's message), None when it can."""
    if not isinstance(name, str) or not name.strip():
        return f"a reward name; choose one of: {', '.join(sorted(known()))}; or {HOW}"
    try:
        load(name)
    except ValueError as e:
        return str(e)
    return None


def as_result(value: Any) -> dict[str, Any]:
    """A reward's return value as {"score", "acc", "pred"} (the keys verl stacks per sample)."""
    if isinstance(value, Mapping):
        if "acc" not in value:
            raise TypeError(f"returned a dict without 'acc' (keys: {sorted(value)})")
        acc = value["acc"]
        score = value.get("score")
        pred = value.get("pred")
    else:
        acc, score, pred = value, None, None
    if not isinstance(acc, bool) and type(acc).__name__ not in ("bool_", "bool"):
        raise TypeError(f"returned acc={acc!r} ({type(acc).__name__}); return True or False")
    acc = bool(acc)
    score = (1.0 if acc else -1.0) if score is None else float(score)
    return {"score": score, "acc": acc, "pred": "" if pred is None else str(pred)}


def wrong(error: str = "") -> dict[str, Any]:
    return {"score": -1.0, "acc": False, "pred": "", "error": error}


def run_in_worker(name: str, response: str, ground_truth: str, extra_info: dict, timeout_s: float) -> dict:
    """One call of reward `name` in a guard worker's main thread, under a `timeout_s` deadline."""
    from .verifier import Deadline, deadline

    try:
        fn = load(name)  # imported before the deadline: a slow import is not the call's fault
        with deadline(timeout_s):
            value = fn(response, ground_truth, extra_info)
        return {**as_result(value), "error": ""}
    except Deadline:
        return wrong(f"took longer than timeout_s={timeout_s:g} s")
    except Exception as e:  # noqa: BLE001  (the user's code: scored wrong, reported by the caller)
        return wrong(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
