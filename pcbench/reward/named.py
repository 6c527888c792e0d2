"""Score a response with the reward a row names (pcbench/reward/registry.py), the caller's side.

`math`, pcbench's own, runs in-process (it guards its own math-verify stage); every other reward
runs in the process guard's workers (procguard.py), under its deadline, whatever the thread.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Mapping

from pcbench.reward import registry

_reported: set[str] = set()
_reported_lock = threading.Lock()


def _report_once(name: str, error: str) -> None:
    """A failing reward says so on stderr once per message, not once per rollout."""
    with _reported_lock:
        if (name, error) in _reported:
            return
        _reported.add((name, error))
    print(f"pcbench: reward {name!r}: {error}; the rollout scores wrong (acc=False)", file=sys.stderr, flush=True)


def score(name: str, response: str, ground_truth: str, extra_info: Mapping[str, Any] | None = None,
          *, timeout_s: float = 1.0, guard=None) -> dict[str, Any]:
    """{"score", "acc", "pred"} of reward `name` on one response (the module docstring's bounds)."""
    info = dict(extra_info) if isinstance(extra_info, Mapping) else {}
    if name == registry.BUILTIN and registry.target(name) == registry.FALLBACK[registry.BUILTIN]:
        from pcbench.reward.math_reward import score_math  # in-process: it guards its own math-verify stage

        return score_math(response, ground_truth, info, timeout_s=timeout_s)
    from pcbench.reward.procguard import default_guard

    request = {"name": name, "response": str(response), "ground_truth": str(ground_truth),
               "extra_info": _jsonable(info), "timeout_s": float(timeout_s)}
    reply = (guard or default_guard()).call(request, timeout_s)
    if reply is None:
        reply = registry.wrong(f"gave no answer within timeout_s={timeout_s:g} s + the guard's grace (worker killed)")
    error = reply.pop("error", "")
    if error:
        _report_once(name, error)
    return reply


def try_once(name: str, response: str = "\\boxed{1}", ground_truth: str = "1") -> str | None:
    """The error of one guarded call of reward `name` on a sample (the preflight's check), None if it answers."""
    if name == registry.BUILTIN and registry.target(name) == registry.FALLBACK[registry.BUILTIN]:
        return None  # pcbench's own, tested in tests/reward
    from pcbench.reward.procguard import default_guard

    request = {"name": name, "response": response, "ground_truth": ground_truth, "extra_info": {}, "timeout_s": 5.0}
    reply = default_guard().call(request, 5.0)
    return "no answer within 5 s" if reply is None else (reply.get("error") or None)


def _jsonable(info: dict) -> dict:
    """extra_info as JSON for the worker (numpy scalars from parquet become plain numbers)."""
    return json.loads(json.dumps(info, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
