"""Backends generate rollouts for the allocators and train on the groups they return."""
