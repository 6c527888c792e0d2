"""How many keys of each config schema have a rejected case in tests/config/test_rules.py.

    python tests/config/rule_coverage.py

A key counts as covered when the table holds a setting of it that check_config (or Hydra's
typed composition) refuses. UNCHECKED lists the keys with no invalid value and why.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# keys every value of which is valid, with the reason (none today)
UNCHECKED: dict[str, str] = {}
WHOLE = ("method.extra", "model.override_config", "data.warmstart_reserve")  # mappings checked as one key


def dataclass_keys(cls, prefix: str = "") -> list[str]:
    out = []
    for f in dataclasses.fields(cls):
        key = prefix + f.name
        typ = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(typ) and key not in WHOLE:
            out += dataclass_keys(typ, key + ".")
        elif f.name not in ("model", "data", "backend", "verl") or prefix:
            out.append(key)
    return out


def yaml_keys(path: Path, top: str) -> list[str]:
    """Keys under `top` in a config group file (`# @package _global_` files nest them under top)."""
    data = yaml.safe_load(path.read_text())
    node = data.get(top, data) if "defaults" in data or top in data else data
    return [k for k in _leaves(node, top + ".") if not k.startswith(f"{top}.defaults")]


def _leaves(node, prefix):
    out = []
    for k, v in node.items():
        key = prefix + str(k)
        if isinstance(v, dict) and key not in WHOLE and not (key.startswith("data.") and key.count(".") == 1
                                                            and k in ("tiers", "sft_tiers", "val_sets", "ood_sets")):
            out += _leaves(v, key + ".")
        else:
            out.append(key)
    return out


def schemas() -> dict[str, list[str]]:
    from pcbench.config import RootConfig

    conf = ROOT / "conf"
    verl_models = sorted({k for p in conf.glob("model/*.yaml") if p.stem != "tiny" for k in yaml_keys(p, "model")})
    verl_data = sorted({k for p in conf.glob("data/*.yaml") if not p.stem.startswith("synthetic") for k in yaml_keys(p, "data")})
    return {
        "RootConfig (pcbench/config.py)": dataclass_keys(RootConfig),
        "backend=embedded": yaml_keys(conf / "backend/embedded.yaml", "backend"),
        "backend=verl (backend.*)": yaml_keys(conf / "backend/verl.yaml", "backend"),
        "model=tiny": [*yaml_keys(conf / "model/tiny.yaml", "model"),
                       *yaml_keys(conf / "model/warmstart/prelude.yaml", "model.warmstart")],
        "data=synthetic": yaml_keys(conf / "data/synthetic.yaml", "data"),
        "verl models (model/*.yaml)": verl_models,
        "verl data (data/*.yaml)": verl_data,
        "experiments (exp/*.yaml)": sorted({k for p in conf.glob("exp/*.yaml") for k in exp_keys(p)}),
    }


def exp_keys(path: Path) -> list[str]:
    """Keys an experiment file sets (`# @package _global_`: dotted from the root), less its defaults."""
    data = {k: v for k, v in (yaml.safe_load(path.read_text()) or {}).items() if k != "defaults"}
    return _leaves(data, "")


def coverage(tested: set[str]) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """{schema: (covered, missing, unchecked)} for the keys `tested` has rejected cases of."""
    out = {}
    for name, keys in schemas().items():
        out[name] = ([k for k in keys if k in tested], [k for k in keys if k not in tested and k not in UNCHECKED],
                     [k for k in keys if k in UNCHECKED])
    return out


def tested_keys() -> set[str]:
    """Keys of tests/config/test_rules.py's tables (loaded by path: tests/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("test_rules", Path(__file__).with_name("test_rules.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {key for key, _, _ in module.REJECTED + module.TYPE_REJECTED}


if __name__ == "__main__":
    for name, (covered, missing, unchecked) in coverage(tested_keys()).items():
        total = len(covered) + len(missing) + len(unchecked)
        print(f"{name}: {len(covered)}/{total} keys have a rejected case"
              + (f"; missing: {', '.join(missing)}" if missing else "")
              + (f"; no invalid value: {', '.join(unchecked)}" if unchecked else ""))
