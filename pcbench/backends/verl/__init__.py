"""The verl 0.9.1 backend: pcbench's allocators driving verl's V1 trainer (docs/verl.md).

entry.py (backend.entry) -> config.py (pcbench config -> verl config) -> verl's run_ppo ->
trainer.py (trainer mode `pcbench`) -> allocation.py (allocator, ledger, run folder) with
rollout.py (Requests -> verl agent loop) and batch.py (StepBatch -> verl training batch).
Importing this package imports nothing heavy; verl is imported by the modules that need it.
"""
