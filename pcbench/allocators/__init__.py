"""Allocators, registered by name. Importing this package imports every module in it, so a new
file here that calls `register_allocator` is all it takes; one outside the package is named by
`method.module=` and imported by `get_allocator_cls` (README, "Writing your own allocator")."""

import importlib
import pkgutil

from pcbench.allocators.base import (ALLOCATORS, UNCOUNTED_PROBE, AllocationError, AllocContext, Allocator,
                                     Group, MissingCapability, Request, Rollouts, RolloutBackend, StepBatch,
                                     build_allocator, get_allocator_cls, register_allocator)

for _module in pkgutil.iter_modules(__path__):  # registration: each module decorates its classes
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["ALLOCATORS", "UNCOUNTED_PROBE", "AllocationError", "AllocContext", "Allocator", "Group",
           "MissingCapability", "Request", "Rollouts", "RolloutBackend", "StepBatch", "build_allocator",
           "get_allocator_cls", "register_allocator"]
