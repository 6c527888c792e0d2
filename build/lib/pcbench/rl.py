"""Shared RL math: verl's own core_algos, so the embedded and verl paths run one implementation.

GRPO advantage (group mean/std over every rollout of a prompt; groups may differ in size),
the PPO clipped loss with clip-higher and dual clip, token-mean aggregation. No KL term.
"""

from __future__ import annotations

import functools

import numpy as np
import torch


@functools.lru_cache(maxsize=None)
def _core():
    from verl.trainer.ppo import core_algos  # ~4 s import: only when training starts
    return core_algos


@functools.lru_cache(maxsize=16)
def actor_config(clip_low: float, clip_high: float, clip_c: float, loss_agg_mode: str, rollout_n: int):
    """verl's ActorConfig carrying the clip settings its policy loss reads."""
    from verl.workers.config import ActorConfig
    return ActorConfig(strategy="fsdp", clip_ratio=clip_low, clip_ratio_low=clip_low, clip_ratio_high=clip_high,
                       clip_ratio_c=clip_c, loss_agg_mode=loss_agg_mode, ppo_mini_batch_size=1,
                       ppo_micro_batch_size_per_gpu=1, use_dynamic_bsz=False, rollout_n=rollout_n)


def outcome_rewards(scores: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Scores (N,) placed on each response's last valid token -> (N, T)."""
    last = response_mask.sum(-1).long() - 1  # (N,)
    out = torch.zeros_like(response_mask, dtype=torch.float32)
    out[torch.arange(len(scores)), last.clamp(min=0)] = scores.float()
    return out


def grpo_advantages(scores: torch.Tensor, index: np.ndarray, response_mask: torch.Tensor) -> torch.Tensor:
    """(N,) scores, (N,) group ids, (N, T) mask -> (N, T) advantages, (score - mean) / (std + 1e-6)."""
    adv, _ = _core().compute_grpo_outcome_advantage(
        token_level_rewards=outcome_rewards(scores, response_mask), response_mask=response_mask.float(),
        index=np.asarray(index), epsilon=1e-6, norm_adv_by_std_in_grpo=True)
    return adv


def policy_loss(old_log_prob, log_prob, advantages, response_mask, cfg) -> tuple[torch.Tensor, dict]:
    """All (N, T). Clipped surrogate with clip-higher and dual clip, aggregated as cfg.loss_agg_mode."""
    return _core().compute_policy_loss_vanilla(
        old_log_prob=old_log_prob, log_prob=log_prob, advantages=advantages,
        response_mask=response_mask.float(), loss_agg_mode=cfg.loss_agg_mode, config=cfg)
