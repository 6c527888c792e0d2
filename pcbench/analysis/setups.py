"""The setup a run is compared in, derived from its config.yaml, and `--where` selection.

Two runs are comparable (same target, speedups between them) only if everything that defines
their setup is equal: the whole config minus pcbench.analysis.run_frames.NOT_SETUP (the method and its
knobs, the seed, bookkeeping). A results folder holding a probe run next to a benchmark, or
two data mixes under one data name, thus gives separate rows, never one pooled comparison.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

import yaml

MISSING = "<unset>"


def setup_of(cfg: dict, not_setup: tuple[str, ...]) -> dict[str, Any]:
    """{dotted key: value} of every leaf of cfg that defines the setup."""
    flat: dict[str, Any] = {}

    def walk(node: dict, prefix: str) -> None:
        for k, v in node.items():
            key = f"{prefix}{k}"
            if key in not_setup:
                continue
            if isinstance(v, dict) and v:
                walk(v, key + ".")
            else:
                flat[key] = v
    walk(cfg, "")
    return flat


def setup_hash(flat: dict) -> str:
    return hashlib.sha256(json.dumps(flat, sort_keys=True, default=str).encode()).hexdigest()[:8]


def parse_where(items: list[str] | None) -> list[tuple[str, Any]]:
    """["data.train_size=1000", ...] -> [(key, value)]; the value is read as YAML (1000 -> int)."""
    out = []
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--where {item!r}: use KEY=VALUE with a config.yaml key, e.g. --where data.train_size=1000")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        out.append((key.strip(), value))
    return out


def _dig(cfg: dict, key: str):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def matches(cfg: dict, setup: str, where: list[tuple[str, Any]]) -> bool:
    """True when every (key, value) of `where` holds for this config ("setup" is the setup hash)."""
    for key, want in where:
        have = setup if key == "setup" else _dig(cfg, key)
        if not (have == want or str(have) == str(want)):
            return False
    return True


def show(value) -> str:
    return json.dumps(value, separators=(",", ":")) if isinstance(value, (list, dict)) else str(value)


def label_setups(records: list[dict], max_keys: int = 3) -> tuple[dict[str, str], list[str]]:
    """Labels for the setups of each (model, data) that holds several: {setup hash: "k=v, ..."}.

    records: runs rows carrying "model", "data", "setup" and "_setup" (the setup_of dict).
    A label lists the keys whose values differ between those setups (the first max_keys,
    then "+N more, setup <hash>"). -> (labels, one warning per (model, data) split).
    """
    groups: dict[tuple, dict[str, dict]] = defaultdict(dict)
    counts: dict[str, int] = defaultdict(int)
    for rec in records:
        groups[(rec["model"], rec["data"])][rec["setup"]] = rec["_setup"]
        counts[rec["setup"]] += 1
    labels, warnings = {}, []
    for (model, data), setups in sorted(groups.items()):
        if len(setups) < 2:
            continue
        keys = sorted(k for k in set().union(*setups.values())
                      if len({show(s.get(k, MISSING)) for s in setups.values()}) > 1)
        mine = {}
        for h, flat in sorted(setups.items()):
            parts = [f"{k}={show(flat.get(k, MISSING))}" for k in keys[:max_keys]]
            if len(keys) > max_keys:
                parts.append(f"+{len(keys) - max_keys} more, setup {h}")
            mine[h] = ", ".join(parts)
        if len(set(mine.values())) < len(mine):  # values that print alike (1 vs 1.0): add the hash
            mine = {h: f"{label}, setup {h}" for h, label in mine.items()}
        labels.update(mine)
        first = sorted(setups.items())[0][1]
        pick = f"{keys[0]}={show(first.get(keys[0], MISSING))}" if keys else f"setup={sorted(setups)[0]}"
        listed = "; ".join(f"[{mine[h]}] ({counts[h]} runs)" for h in sorted(setups))
        warnings.append(f"{model}/{data}: runs of {len(setups)} different setups, scored as separate rows each "
                        f"with its own target: {listed}; keep one with --where {pick} (or pass one folder)")
    return labels, warnings
