"""Allocators, registered by name. Importing this package registers the built-in ones."""

from pcbench.allocators.base import (ALLOCATORS, AllocationError, AllocContext, Allocator, Group,
                                     Request, Rollouts, RolloutBackend, StepBatch, build_allocator,
                                     get_allocator_cls, register_allocator)
from pcbench.allocators import dapo, grpo, pilot_commit  # noqa: F401  (registration)

__all__ = ["ALLOCATORS", "AllocationError", "AllocContext", "Allocator", "Group", "Request", "Rollouts",
           "RolloutBackend", "StepBatch", "build_allocator", "get_allocator_cls", "register_allocator"]
