"""The verl 0.9.1 backend: pcbench's allocators driving verl's V1 trainer (docs/verl.md).

entry.py (backend.entry) -> config.py (pcbench config -> verl config; platform.py: gpu or the
CPU platform) -> watchdog.py (supervised child) -> launch.py -> verl's run_ppo -> trainer.py
(trainer mode `pcbench`) -> allocation.py (allocator, ledger, run folder) with rollout.py
(Requests -> verl agent loop) and batch.py (StepBatch -> verl training batch). On CPU,
cpu_platform.py / cpu_vllm.py run inside verl's and vLLM's processes; tiny.py builds
model=tiny-verl.
Importing this package imports nothing heavy; verl is imported by the modules that need it.
"""
