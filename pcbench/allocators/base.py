"""The allocator interface every backend drives.

An allocator decides, for one training step, which prompts get how many rollouts, and
which rollouts form the training groups. It never sees tokens: a backend hands it
`Rollouts` whose `payload` is opaque (token ids, verl DataProto rows, ...) and whose
`acc` is the verifier's boolean per rollout. The trainer calls `next_batch` then
`after_update`; it never branches on a method name. A subclass implements `allocate`; the
base class's `next_batch` wraps it with what every allocator shares (the backend's declared
capabilities checked, the trained rollouts counted once).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Protocol, Sequence

import numpy as np

from pcbench.ledger import RolloutLedger
from pcbench.stream import PromptStream


class AllocationError(RuntimeError):
    """A step could not be filled within the allowed number of sampling rounds.

    `stop_reason` ("round_bound", or "pool_exhausted" when a whole epoch of active prompts could
    not fill a batch) is what the run folder records (pcbench.runs.execute -> stopped.json): the
    allocator starved on its data, a result the analysis scores as censored, not a crash it drops.
    """

    def __init__(self, message: str, stop_reason: str = "round_bound"):
        super().__init__(message)
        self.stop_reason = stop_reason


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


def learning_signal(accs) -> float:
    """Sum over groups of p(1 - p), p a group's mean acc: the Bernoulli reward variance a GRPO
    group normalises by, zero for all-correct and all-wrong groups. A proxy for how much a
    step's batch can teach (the regime map's predicted speedup divides it by the step's cost)."""
    return float(sum(float(np.mean(a)) * (1.0 - float(np.mean(a))) for a in accs if len(a)))


@dataclass
class StepBatch:
    groups: list[Group]
    stats: dict[str, float] = field(default_factory=dict)  # allocator counters, logged as alloc/*

    def __post_init__(self):
        # Every allocator's trained groups, split by reward variance, counted here once so both
        # backends log them for every method (the regime card reads them): all-correct and
        # all-wrong groups carry zero GRPO advantage (zero_variance_groups = their sum).
        groups, right, wrong = regime_counts(g.acc for g in self.groups)
        self.stats = {**self.stats, "alloc/groups": groups, "alloc/groups_all_correct": right,
                      "alloc/groups_all_wrong": wrong, "alloc/zero_variance_groups": right + wrong,
                      "alloc/groups_mixed": groups - right - wrong,
                      "alloc/signal": learning_signal(g.acc for g in self.groups)}

    @property
    def rollouts(self) -> int:
        """Rollouts that train this step (every part of every group)."""
        return sum(g.size for g in self.groups)


# What an allocator may ask of a backend beyond counted generation. A backend declares the ones
# it has as a class attribute `capabilities`; an allocator lists what it needs in `requires`.
UNCOUNTED_PROBE = "uncounted_probe"  # generate() may be called outside AllocContext (not in the
# ledger): in-process, no side effect but the backend's own RNG, nothing queued for training
CAPABILITIES = {UNCOUNTED_PROBE: "generate rollouts the ledger does not count"}


class RolloutBackend(Protocol):
    """What an allocator's ctx.backend is. Optional class attribute: `capabilities`, a frozenset
    of CAPABILITIES keys (none when absent; verl's backend declares none)."""

    def generate(self, requests: Sequence[Request]) -> list[Rollouts]:
        """One generation call for all requests (same order), policy at its current weights."""


def capabilities_of(backend: Any) -> frozenset[str]:
    return frozenset(getattr(backend, "capabilities", ()))


class MissingCapability(RuntimeError):
    """An allocator needs something its backend does not declare (checked before any rollout)."""


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
        self.ledger.sampling_round()
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
    """Subclasses are registered by `register_allocator(name)`, take (method_cfg, train_batch,
    seed) and implement `allocate`; `requires` lists the backend capabilities they need."""

    name: ClassVar[str]
    requires: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "next_batch" in vars(cls):  # the shared bookkeeping would be skipped (README, "your own allocator")
            raise TypeError(f"{cls.__name__}: implement allocate(ctx), not next_batch (the base class's "
                            f"next_batch counts the trained rollouts and checks the backend)")

    def __init__(self, cfg: Any, train_batch: int, seed: int):
        self.cfg = cfg
        self.train_batch = int(train_batch)
        self.rng = np.random.default_rng([int(seed), 7])

    @classmethod
    def validate(cls, cfg: Any, train_batch: int) -> None:
        """Raise ValueError with a one-line fix for impossible settings (called at composition)."""

    def next_batch(self, ctx: AllocContext) -> StepBatch:
        """One step: refuse a backend without `requires` before any draw, allocate, and count the
        trained rollouts in the ledger (the one place, for every allocator)."""
        check_backend(type(self), ctx.backend)
        batch = self.allocate(ctx)
        ctx.ledger.trained(batch.rollouts)
        # epochs through the pool so far: prompts drawn (evicted ones left the pool, not the count) / pool size
        batch.stats["alloc/pool_epochs"] = ctx.stream.epochs_drawn
        return batch

    @abstractmethod
    def allocate(self, ctx: AllocContext) -> StepBatch:
        """Generate what this step needs (through ctx.generate) and return exactly train_batch
        groups; discards go to ctx.ledger.discarded, trained rollouts are counted by next_batch."""

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


def import_module_of(name: str, module: str) -> None:
    """Import `module` (method.module: an allocator outside pcbench/allocators); ValueError, one
    line, when it cannot be imported or does not register `name`."""
    try:
        importlib.import_module(module)
    except Exception as e:  # noqa: BLE001  (any failure of the user's module is the user's to fix)
        first = (str(e).splitlines() or [""])[0]
        raise ValueError(f"method.module={module!r}: cannot import it ({type(e).__name__}: {first}); "
                         f"put its folder on PYTHONPATH or pip install it") from None
    if name not in ALLOCATORS:
        raise ValueError(f"method.module={module!r} registers no allocator {name!r} (method.name); decorate "
                         f"its class with @register_allocator({name!r})")


ENTRY_POINT_GROUP = "pcbench.allocators"  # another package's allocators: `name = "its_pkg.module:Class"`


def load_entry_point(name: str) -> bool:
    """Register the allocator an installed package declares under `name` in the pcbench.allocators
    entry-point group (importing its module, or registering the class it points at); False if none.
    No fork of pcbench needed: `pip install` the package, then method.name=<name>."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        return False
    ep = found[0]
    where = f"entry point {name} = {ep.value!r} ({ENTRY_POINT_GROUP}" + (f", package {ep.dist.name})" if ep.dist else ")")
    try:
        obj = ep.load()
    except Exception as e:  # noqa: BLE001  (any failure of the user's module is the user's to fix)
        first = (str(e).splitlines() or [""])[0]
        raise ValueError(f"{where}: cannot import it ({type(e).__name__}: {first}); fix or reinstall that package") from None
    if name not in ALLOCATORS:
        if not (isinstance(obj, type) and issubclass(obj, Allocator)):
            raise ValueError(f"{where} registers no allocator {name!r}; point it at an Allocator subclass "
                             f"(module:Class) or decorate the class with @register_allocator({name!r})")
        register_allocator(name)(obj)
    return True


def entry_point_names() -> list[str]:
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def get_allocator_cls(name: str, module: str = "") -> type[Allocator]:
    if module:
        import_module_of(name, module)
    if name not in ALLOCATORS and not load_entry_point(name):
        known = sorted(set(ALLOCATORS) | set(entry_point_names()))
        raise ValueError(f"unknown method {name!r}; choose one of: {', '.join(known)}; or add your own "
                         f"(method.module=your_pkg.your_alloc, or the {ENTRY_POINT_GROUP!r} entry-point group)")
    return ALLOCATORS[name]


def check_backend(cls: type[Allocator], backend: Any) -> None:
    missing = cls.requires - capabilities_of(backend)
    if missing:
        need = "; ".join(f"{c} ({CAPABILITIES.get(c, c)})" for c in sorted(missing))
        raise MissingCapability(f"{cls.name}: needs a backend with {need}; {type(backend).__name__} does not "
                                f"declare it (class attribute `capabilities`), so nothing was generated")


def build_allocator(cfg: Any, train_batch: int, seed: int) -> Allocator:
    cls = get_allocator_cls(cfg.name, getattr(cfg, "module", "") or "")
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
