"""verl custom reward function, with DAPO's soft overlong penalty.

Point verl at it with::

    reward.custom_reward_function.path=pcbench/reward/verl_entry.py
    reward.custom_reward_function.name=verl_compute_score
    # optional, merged into every call's kwargs by verl:
    +reward.custom_reward_function.reward_kwargs.timeout_s=1.0
    +reward.custom_reward_function.reward_kwargs.max_response_length=8192
    +reward.custom_reward_function.reward_kwargs.overlong_buffer_len=4096
    +reward.custom_reward_function.reward_kwargs.overlong_penalty_factor=1.0

verl loads this file by path, so imports are absolute: ``pcbench`` must be importable
in the reward workers (``pip install -e .`` or PYTHONPATH).

Overlong penalty: applied when the response length is known, i.e. ``extra_info`` (or a
kwarg) carries ``response_length`` in tokens, and all three of ``max_response_length``,
``overlong_buffer_len`` (> 0) and ``overlong_penalty_factor`` are given, each read from
``extra_info`` first, then from the kwargs. The penalty is added to ``score``; ``acc``
stays pure correctness, since DAPO's group filter must not see length. Do not also turn
on verl's DAPO reward manager ``overlong_buffer``: the penalty would be applied twice.
The returned keys are always the same three, as verl stacks them across samples.
"""

from __future__ import annotations

from typing import Any, Mapping

from pcbench.reward import named, registry

_PENALTY_KEYS = ("max_response_length", "overlong_buffer_len", "overlong_penalty_factor")


def overlong_penalty(
    response_length: int, max_response_length: int, buffer_len: int, penalty_factor: float
) -> float:
    """DAPO's soft overlong punishment, in reward units (<= 0).

    0 while ``response_length <= max_response_length - buffer_len``, then linear down to
    ``-penalty_factor`` at ``max_response_length``. Like DAPO it is not clamped beyond
    the maximum (a response cannot be longer than the maximum anyway).
    """
    if buffer_len <= 0:
        raise ValueError(f"buffer_len must be > 0 (got {buffer_len}); to disable the penalty, do not call it")
    if max_response_length < buffer_len:
        raise ValueError(
            f"max_response_length ({max_response_length}) must be >= buffer_len ({buffer_len})"
        )
    expected = max_response_length - buffer_len
    return min(0.0, -(response_length - expected) / buffer_len * penalty_factor)


def _lookup(key: str, extra_info: Mapping[str, Any], kwargs: Mapping[str, Any]) -> Any:
    value = extra_info.get(key)
    return kwargs.get(key) if value is None else value


def _penalty_from(extra_info: Mapping[str, Any], kwargs: Mapping[str, Any]) -> float:
    length = _lookup("response_length", extra_info, kwargs)
    config = [_lookup(key, extra_info, kwargs) for key in _PENALTY_KEYS]
    if length is None or any(value is None for value in config):
        return 0.0
    max_len, buffer_len, factor = int(config[0]), int(config[1]), float(config[2])
    if buffer_len <= 0:
        return 0.0  # a zero buffer is verl's way of saying "no overlong buffer"
    return overlong_penalty(int(length), max_len, buffer_len, factor)


def verl_compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's custom reward signature -> ``{"score": float, "acc": bool, "pred": str}``.

    The reward that scores the row is named by its ``extra_info["reward"]`` (written by
    pcbench.data.prepare from ``data.reward``), else by a ``reward`` kwarg, else ``math``
    (pcbench/reward/registry.py: every reward but ``math`` runs in the process guard).
    ``data_source`` is accepted for the signature only. Unknown kwargs (verl passes e.g.
    ``reward_router_address``) are ignored.
    """
    info = extra_info if isinstance(extra_info, Mapping) else {}
    name = str(info.get("reward") or kwargs.get("reward") or registry.BUILTIN)
    result = named.score(name, solution_str, ground_truth, info, timeout_s=float(kwargs.get("timeout_s", 1.0)))
    score = result["score"] + _penalty_from(info, kwargs)
    return {"score": float(score), "acc": bool(result["acc"]), "pred": result["pred"] or ""}
