"""pcbench: rollout allocation for group-based RL post-training (GRPO, DAPO, Pilot-Commit)."""

__version__ = "0.1.0"
