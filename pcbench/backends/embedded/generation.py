"""The embedded RolloutBackend: answers allocator Requests with sampled, scored rollouts.

One `generate` call = one batched sampling pass over every requested rollout, which is how
Pilot-Commit's pipelined commits and pilots share a generation call.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch

from pcbench.allocators.base import UNCOUNTED_PROBE, Request, Rollouts
from pcbench.backends.embedded.sampler import sample
from pcbench.backends.embedded.task import Problem
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.reward import RewardStats
from pcbench.reward.memo import ScoreMemo


class EmbeddedRollouts:
    # in-process: a probe only advances the sampling generator, nothing is queued for training
    capabilities = frozenset({UNCOUNTED_PROBE})

    def __init__(self, model, tok: CharTokenizer, problems: dict[int, Problem], *, max_new_tokens: int,
                 temperature: float, top_p: float, generator: torch.Generator):
        self.model, self.tok, self.problems = model, tok, problems
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        self.generator = generator
        self.reward_stats = RewardStats()
        self.scores = ScoreMemo(self.reward_stats)  # a group's rollouts repeat their text
        self.prompt_ids = {pid: [tok.bos_id] + tok.encode(p.prompt) for pid, p in problems.items()}
        self.reset_counters()

    def reset_counters(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self.calls = 0

    def generate(self, requests: Sequence[Request]) -> list[Rollouts]:
        t0 = time.perf_counter()
        prompts = [self.prompt_ids[r.prompt_id] for r in requests for _ in range(r.k)]
        self.model.eval()
        responses = sample(self.model, prompts, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                           top_p=self.top_p, eos_id=self.tok.eos_id, pad_id=self.tok.pad_id,
                           generator=self.generator)
        self.seconds += time.perf_counter() - t0
        self.tokens += sum(map(len, responses))
        self.calls += 1
        out, i = [], 0
        for r in requests:
            resp = responses[i:i + r.k]
            i += r.k
            answer = self.problems[r.prompt_id].answer
            acc = np.array([float(self.scores.score(self.tok.decode(x), answer).acc) for x in resp])
            out.append(Rollouts(r.prompt_id, acc, resp, r.kind))
        return out
