"""The allocator interface every backend drives.

An allocator decides, for one training step, which prompts get how many rollouts, and
which rollouts form the training groups. It never sees tokens: a backend hands it
`Rollouts` whose `payload` is opaque (token ids, verl DataProto rows, ...) and whose
`acc` is the verifier's boolean per rollout. The trainer calls `next_batch` then
`after_update`; it never branches on a method name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Protocol, Sequence

import numpy as np

from pcbench.ledger import RolloutLedger
from pcbench.stream import PromptStream


class AllocationError(RuntimeError):
    """A step could not be filled within the allowed number of sampling rounds."""


@dataclass(frozen=True)
class Request:
    prompt_id: int
    k: int
    kind: str  # "pilot" | "commit" | "plain"


@dataclass
class Rollouts:
    """k rollouts of one prompt. acc: (k,) float array of 0/1; payload: backend-owned, length k."""

    prompt_id: int
    acc: np.ndarray
    payload: Any
    kind: str

    def __len__(self) -> int:
        return len(self.acc)


@dataclass
class Group:
    """One GRPO group: every rollout of one prompt that trains together (pilot + commit for PC)."""

    prompt_id: int
    parts: list[Rollouts]
    staleness: int = 0  # steps between the oldest part's generation and this update

    @property
    def acc(self) -> np.ndarray:
        return np.concatenate([p.acc for p in self.parts])

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.parts)


def regime_counts(accs) -> tuple[int, int, int]:
    """(groups, all correct, all wrong) over per-group acc arrays: the zero-variance split."""
    accs = [np.asarray(a) for a in accs]
    return (len(accs), sum(int(a.size > 0 and bool(a.min() >= 1.0)) for a in accs),
            sum(int(a.size > 0 and bool(a.max() <= 0.0)) for a in accs))


@dataclass
class StepBatch:
    groups: list[Group]
    stats: dict[str, float] = field(default_factory=dict)  # allocator counters, logged as alloc/*

    def __post_init__(self):
        # Every allocator's trained groups, split by reward variance, counted here once so both
        # backends log them for every method (the regime card reads them): all-correct and
        # all-wrong groups carry zero GRPO advantage.
        groups, right, wrong = regime_counts(g.acc for g in self.groups)
        self.stats = {**self.stats, "alloc/groups": groups, "alloc/groups_all_correct": right,
                      "alloc/groups_all_wrong": wrong}


class RolloutBackend(Protocol):
    def generate(self, requests: Sequence[Request]) -> list[Rollouts]:
        """One generation call for all requests (same order), policy at its current weights."""


@dataclass
class AllocContext:
    """What an allocator may touch during one step."""

    stream: PromptStream
    backend: RolloutBackend
    ledger: RolloutLedger
    step: int

    def generate(self, requests: Sequence[Request]) -> list[Rollouts]:
        # The one place rollouts are counted: every request is generated and paid for.
        if not requests:
            return []
        outs = self.backend.generate(list(requests))
        if len(outs) != len(requests):
            raise RuntimeError(f"backend returned {len(outs)} results for {len(requests)} requests")
        for req, out in zip(requests, outs):
            if len(out) != req.k or out.prompt_id != req.prompt_id:
                raise RuntimeError(f"backend answered {req} with {len(out)} rollouts of prompt {out.prompt_id}")
            self.ledger.generated(req.kind, req.k)
            self.ledger.sampled_group(req.kind, req.prompt_id, out.acc)
        return outs


class Allocator(ABC):
    """Subclasses set `name`, take (method_cfg, train_batch, seed) and implement next_batch."""

    name: ClassVar[str]

    def __init__(self, cfg: Any, train_batch: int, seed: int):
        self.cfg = cfg
        self.train_batch = int(train_batch)
        self.rng = np.random.default_rng([int(seed), 7])

    @classmethod
    def validate(cls, cfg: Any, train_batch: int) -> None:
        """Raise ValueError with a one-line fix for impossible settings (called at composition)."""

    @abstractmethod
    def next_batch(self, ctx: AllocContext) -> StepBatch:
        """Generate what this step needs and return exactly train_batch groups."""

    def after_update(self, step: int, ledger: RolloutLedger) -> dict[str, float]:
        """Called once the policy update of `step` is done; returns counters to log."""
        return {}

    def round_limit(self, rounds: int, kept: int) -> None:
        limit = int(self.cfg.max_rounds)
        if rounds > limit:
            raise AllocationError(
                f"{self.name}: only {kept}/{self.train_batch} prompts kept after {limit} sampling rounds; "
                f"the policy may be saturated on this data (raise method.max_rounds, widen the filter, "
                f"or use harder/easier data)")

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]


def require_group_size(cfg: Any) -> None:
    if cfg.n < 2:
        raise ValueError(f"method.n={cfg.n}: a GRPO group needs at least 2 rollouts; set method.n >= 2")


def require_pool(cfg: Any, train_batch: int) -> None:
    if cfg.gen_batch_size < train_batch:
        raise ValueError(f"method.gen_batch_size={cfg.gen_batch_size} < train batch {train_batch}; "
                         f"set method.gen_batch_size >= the train batch (the paper uses 3x)")


ALLOCATORS: dict[str, type[Allocator]] = {}


def register_allocator(name: str) -> Callable[[type[Allocator]], type[Allocator]]:
    def deco(cls: type[Allocator]) -> type[Allocator]:
        if name in ALLOCATORS:
            raise ValueError(f"allocator {name!r} registered twice")
        cls.name = name
        ALLOCATORS[name] = cls
        return cls
    return deco


def get_allocator_cls(name: str) -> type[Allocator]:
    if name not in ALLOCATORS:
        raise ValueError(f"unknown method {name!r}; choose one of: {', '.join(sorted(ALLOCATORS))}")
    return ALLOCATORS[name]


def build_allocator(cfg: Any, train_batch: int, seed: int) -> Allocator:
    cls = get_allocator_cls(cfg.name)
    cls.validate(cfg, train_batch)
    return cls(cfg, train_batch, seed)


def take_or_roll(ctx: AllocContext, k: int, on_epoch_end: Callable[[], None] | None = None) -> list[int]:
    """k candidate prompt ids; at an epoch's end run the method's hook, start the next epoch, retry."""
    ids = ctx.stream.take(k)
    if ids is None:
        if on_epoch_end is not None:
            on_epoch_end()
        ctx.stream.next_epoch(min_needed=k)
        ids = ctx.stream.take(k)
    return ids
