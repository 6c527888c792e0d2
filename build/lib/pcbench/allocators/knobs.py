"""Free-form allocator knobs read from `method.extra`, checked once like typed fields.

`MethodConfig` holds the knobs GRPO/DAPO/Pilot-Commit share; the neighbours' own knobs
(PODS's oversampling, GRESO's skip schedule, a posterior's decay, ...) live in
`method.extra` so adding an allocator never widens the shared schema. A misspelt key in
`extra` would otherwise be ignored silently, so `read_knobs` refuses unknown keys.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Mapping


def read_knobs(cfg: Any, name: str, defaults: Mapping[str, Any]) -> SimpleNamespace:
    """-> namespace of `defaults` overridden by `cfg.extra`; ValueError on an unknown key.

    A default of None means "derived by the allocator" (e.g. from cfg.n); the caller fills it.
    """
    extra = dict(getattr(cfg, "extra", None) or {})
    unknown = sorted(set(extra) - set(defaults))
    if unknown:
        raise ValueError(f"method.extra has unknown key(s) {unknown} for {name}; "
                         f"known keys: {', '.join(sorted(defaults))}")
    values = {}
    for key, default in defaults.items():
        value = extra.get(key, default)
        # keep the default's type so a YAML "1" stays a float where a float is expected
        values[key] = type(default)(value) if default is not None and value is not None else value
    return SimpleNamespace(**values)
