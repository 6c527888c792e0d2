"""What only the embedded backend can check at composition: its deterministic matmul builds and
runs here (pcbench/detmm.py), and its synthetic task can be drawn.

The task is generated from `data.*` in milliseconds, so drawing it here turns sizes the tiers
cannot hold (more distinct problems than exist) into a one-line config error instead of a
failure after the run folder and the warm start exist.
"""

from __future__ import annotations

import json

from omegaconf import OmegaConf

from pcbench.config import ConfigError

_DRAWN: set[str] = set()  # data configs already drawn once in this process (a sweep checks many jobs)


def check_backend_config(cfg) -> None:
    from pcbench import detmm
    from pcbench.backends.embedded.task import SyntheticTask

    if detmm.deterministic() and (why := detmm.available()):  # a C compiler, AVX2 + FMA (pcbench/detmm.py)
        raise ConfigError(why)

    key = json.dumps([OmegaConf.to_container(cfg.data, resolve=True),
                      (cfg.model.get("warmstart") or {}).get("stop_tier")], sort_keys=True)
    if key in _DRAWN:
        return
    try:
        SyntheticTask.for_run(cfg)
        _DRAWN.add(key)
    except (ValueError, TypeError) as e:  # sizes the tiers cannot hold
        raise ConfigError(f"data={cfg.data.name}: {e} (data.train_size, data.val_size, data.sft_size draw "
                          f"distinct problems from their tiers)") from None
    except (KeyError, AttributeError) as e:  # a key deleted with ~data.<key>
        first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
        raise ConfigError(f"data={cfg.data.name}: {first}; the embedded task needs it (see conf/data/synthetic.yaml)") \
            from None
