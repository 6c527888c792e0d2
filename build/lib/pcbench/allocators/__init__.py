"""Allocators, registered by name. Importing this package registers the built-in ones."""

from pcbench.allocators.base import (ALLOCATORS, AllocationError, AllocContext, Allocator, Group,
                                     Request, Rollouts, RolloutBackend, StepBatch, build_allocator,
                                     get_allocator_cls, register_allocator)
from pcbench.allocators import dapo, grpo, pilot_commit  # noqa: F401  (registration)
from pcbench.allocators import speed_rl  # noqa: F401
from pcbench.allocators import greso  # noqa: F401
from pcbench.allocators import pods  # noqa: F401
from pcbench.allocators import mopps  # noqa: F401
from pcbench.allocators import pilot_commit_bayes  # noqa: F401
from pcbench.allocators import oracle  # noqa: F401

__all__ = ["ALLOCATORS", "AllocationError", "AllocContext", "Allocator", "Group", "Request", "Rollouts",
           "RolloutBackend", "StepBatch", "build_allocator", "get_allocator_cls", "register_allocator"]
