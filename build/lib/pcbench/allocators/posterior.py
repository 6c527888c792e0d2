"""Per-prompt Beta posteriors over the pass rate, with forgetting, for MoPPS and PC-Bayes.

A prompt's state is its evidence: successes s and failures f (decayed, so not integers)
and the epoch they were last updated; its posterior is Beta(a0 + s, b0 + f). The policy
moves, so old evidence is worth less: once per epoch elapsed the evidence is multiplied by
`decay` (MoPPS's "a <- l a + (1 - l) a0 + s" is the same update written on a). Forgetting
counts epochs, not observations: a prompt is seen about once per epoch, and the pilot and
commit of one round must not decay each other. Keeping evidence apart from the prior lets
the prior be refitted to the whole population (`fit_prior`) without touching any prompt.
"""

from __future__ import annotations

import math

import numpy as np
import torch


class BetaPosterior:
    def __init__(self, a0: float = 1.0, b0: float = 1.0, decay: float = 1.0):
        self.a0, self.b0, self.decay = float(a0), float(b0), float(decay)
        self.evidence: dict[int, tuple[float, float, int]] = {}  # pid -> (s, f, epoch of last update)
        self.latest: dict[int, tuple[int, int]] = {}  # pid -> (successes, failures) of its last observation

    def seen(self, pid: int) -> bool:
        return int(pid) in self.evidence

    def counts(self, pid: int, epoch: int) -> tuple[float, float]:
        """(s, f) of `pid` decayed to `epoch` (not stored)."""
        if int(pid) not in self.evidence:
            return 0.0, 0.0
        s, f, last = self.evidence[int(pid)]
        w = self.decay ** max(int(epoch) - last, 0)
        return w * s, w * f

    def params(self, pid: int, epoch: int) -> tuple[float, float]:
        s, f = self.counts(pid, epoch)
        return self.a0 + s, self.b0 + f

    def observe(self, pid: int, acc: np.ndarray, epoch: int) -> None:
        s, f = self.counts(pid, epoch)
        k = float(np.sum(acc))
        self.evidence[int(pid)] = (s + k, f + (len(acc) - k), int(epoch))
        self.latest[int(pid)] = (int(k), int(len(acc) - k))

    def thompson(self, pids, epoch: int, rng: np.random.Generator) -> np.ndarray:
        """(len(pids),) one draw of p per prompt from its posterior."""
        ab = np.array([self.params(pid, epoch) for pid in pids], dtype=float).reshape(-1, 2)
        return rng.beta(ab[:, 0], ab[:, 1])

    def fit_prior(self, floor: float = 0.1, ceil: float = 20.0, points: int = 25) -> None:
        """Empirical Bayes: set (a0, b0) to the beta-binomial maximum-likelihood fit to every
        prompt's latest observation, on a log grid in [floor, ceil]. The training set's pass
        rates are far from uniform (many prompts at p = 0 or 1), and a uniform prior would call
        a prompt that failed 4 of 4 pilots 'likely in the band'; the population knows better.
        Latest raw counts, not the decayed evidence: decayed counts are not binomial draws
        (they look under-dispersed and would inflate the fit), and the latest is the most
        current picture of the population under the moving policy."""
        if len(self.latest) < 2:
            return
        sf = torch.tensor(list(self.latest.values()), dtype=torch.float64)  # (P, 2)
        sf, weight = torch.unique(sf, dim=0, return_counts=True)  # few distinct (s, f): keeps a fit ~ms
        grid = torch.logspace(math.log10(floor), math.log10(ceil), points, dtype=torch.float64)
        a, b = torch.meshgrid(grid, grid, indexing="ij")  # (G, G)
        a, b = a[..., None], b[..., None]  # (G, G, 1) against (P,)
        s, f = sf[:, 0], sf[:, 1]
        ll = (torch.lgamma(a + s) + torch.lgamma(b + f) - torch.lgamma(a + b + s + f)
              - torch.lgamma(a) - torch.lgamma(b) + torch.lgamma(a + b)) @ weight.double()  # (G, G)
        i, j = divmod(int(torch.argmax(ll)), points)
        self.a0, self.b0 = float(grid[i]), float(grid[j])

    def state_dict(self) -> dict:
        return {"a0": self.a0, "b0": self.b0, "decay": self.decay,
                "evidence": sorted((pid, s, f, e) for pid, (s, f, e) in self.evidence.items()),
                "latest": sorted((pid, s, f) for pid, (s, f) in self.latest.items())}

    def load_state_dict(self, state: dict) -> None:
        self.a0, self.b0, self.decay = float(state["a0"]), float(state["b0"]), float(state["decay"])
        self.evidence = {int(pid): (float(s), float(f), int(e)) for pid, s, f, e in state["evidence"]}
        self.latest = {int(pid): (int(s), int(f)) for pid, s, f in state["latest"]}


def expected_variance(a: float, b: float) -> float:
    """E[p(1-p)] under Beta(a, b) = ab / ((a+b)(a+b+1)): the expected within-group Bernoulli
    variance, i.e. how much GRPO signal a group of this prompt is expected to carry."""
    return a * b / ((a + b) * (a + b + 1.0))


def beta_cdf(x: float, a: float, b: float) -> float:
    """Regularised incomplete beta I_x(a, b) = P(p <= x) for p ~ Beta(a, b), by the continued
    fraction (Numerical Recipes' betacf). Exact for any a, b > 0, including the U-shaped
    priors (a, b < 1) the population fit gives; no scipy in this environment."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b


def _beta_cf(a: float, b: float, x: float, iters: int = 500, eps: float = 1e-13) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, iters + 1):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def band_mass(a: float, b: float, lower: float, upper: float) -> float:
    """P(lower <= p <= 1 - upper) under Beta(a, b): how sure the history is that the prompt
    sits in Pilot-Commit's band (the share of it a pilot would keep, were p known)."""
    return max(0.0, beta_cdf(1.0 - upper, a, b) - beta_cdf(lower, a, b))
