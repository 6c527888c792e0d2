"""pcbench entry point: compose the config, check it, hand it to the chosen backend.

    python -m pcbench.run -m method=grpo,dapo,pilot_commit          # embedded CPU default
    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit

Every setting is checked here, before any model is built; a mistake ends the run with one
line on stderr naming the key and the fix (exit code 2).
"""

from __future__ import annotations

import importlib
import sys

import hydra
from omegaconf import DictConfig

from pcbench.config import ConfigError, check_config, register_configs

register_configs()


def resolve_entry(spec: str):
    module, _, fn = spec.partition(":")
    return getattr(importlib.import_module(module), fn)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig):
    try:
        check_config(cfg)
        entry = resolve_entry(cfg.backend.entry)
    except ConfigError as e:
        print(f"pcbench: config error: {e}", file=sys.stderr)
        sys.exit(2)
    return entry(cfg)


if __name__ == "__main__":
    main()
