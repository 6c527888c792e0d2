"""pcbench: rollout allocation for group-based RL post-training (GRPO, DAPO, Pilot-Commit)."""

from pcbench.numerics import pin as _pin

# Before any torch operation: the embedded path's floats must not depend on the CPU (pcbench/numerics.py).
_pin()

__version__ = "0.1.0"
