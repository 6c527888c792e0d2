"""pcbench.rl (verl's core_algos underneath) against a from-scratch reference on the same inputs."""

import numpy as np
import torch

from pcbench import rl


def ref_grpo(scores, index):
    out = torch.empty_like(scores)
    for g in np.unique(index):
        m = torch.as_tensor(index == g)
        s = scores[m]
        mean, std = (s.mean(), s.std()) if len(s) > 1 else (torch.tensor(0.0), torch.tensor(1.0))
        out[m] = (s - mean) / (std + 1e-6)
    return out


def ref_loss(old, new, adv, mask, lo=0.2, hi=0.28, c=10.0):
    ratio = torch.exp((new - old).clamp(-20, 20))
    l1, l2 = -adv * ratio, -adv * ratio.clamp(1 - lo, 1 + hi)
    clipped = torch.maximum(l1, l2)
    dual = torch.minimum(-adv * c, clipped)
    per_tok = torch.where(adv < 0, dual, clipped)
    return (per_tok * mask).sum() / mask.sum()  # token-mean over the mini-batch


def test_grpo_advantage_matches_reference_with_groups_of_different_sizes():
    g = torch.Generator().manual_seed(0)
    index = np.array([0] * 4 + [1] * 16 + [2] * 3 + [3] * 1)  # PC groups (4+12) next to others
    scores = (torch.rand(len(index), generator=g) > 0.5).float() * 2 - 1
    mask = torch.ones(len(index), 5)
    mask[3, 2:] = 0
    adv = rl.grpo_advantages(scores, index, mask)
    expect = ref_grpo(scores, index)[:, None] * mask
    torch.testing.assert_close(adv, expect)
    assert torch.allclose(adv[index == 3], scores[index == 3][0])  # size-1 group: raw score (verl caveat)


def test_all_equal_group_gets_zero_advantage():
    adv = rl.grpo_advantages(torch.ones(8), np.zeros(8, dtype=int), torch.ones(8, 3))
    assert torch.count_nonzero(adv) == 0


def test_policy_loss_matches_reference_clip_higher_dual_clip_token_mean():
    g = torch.Generator().manual_seed(1)
    N, T = 12, 7
    old = -torch.rand(N, T, generator=g) * 3
    new = old + torch.randn(N, T, generator=g) * 0.6  # ratios well outside [0.8, 1.28]
    adv = torch.randn(N, 1, generator=g).expand(N, T) * 2
    mask = (torch.rand(N, T, generator=g) > 0.2).float()
    cfg = rl.actor_config(0.2, 0.28, 10.0, "token-mean", 16)
    loss, metrics = rl.policy_loss(old, new, adv, mask, cfg)
    torch.testing.assert_close(loss, ref_loss(old, new, adv, mask))
    assert 0 < metrics["actor/pg_clipfrac"] < 1


def test_clip_higher_is_asymmetric():
    cfg = rl.actor_config(0.2, 0.28, 10.0, "token-mean", 16)
    one = torch.ones(1, 1)
    up, _ = rl.policy_loss(torch.zeros(1, 1), torch.log(torch.tensor([[2.0]])), one, one, cfg)
    down, _ = rl.policy_loss(torch.zeros(1, 1), torch.log(torch.tensor([[0.5]])), one, one, cfg)
    assert abs(float(up) + 1.28) < 1e-6  # positive advantage: ratio capped at 1 + 0.28
    assert abs(float(down) + 0.5) < 1e-6  # pessimistic min keeps the unclipped ratio below 1 - 0.2
