"""Every rejected setting, as a user types it, and the one line it gets (pcbench/rules.py & co).

The table is the contract: key, overrides, the exact message. `rule_coverage.py` counts how
many keys of each schema have a row here (python tests/config/rule_coverage.py prints it).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from pcbench.config import ConfigError, check_config, register_configs

ROOT = Path(__file__).resolve().parents[2]
CONF = str(ROOT / "conf")
FILE = str(ROOT / "pyproject.toml")  # an existing file where a folder is expected
VERL = ["backend=verl", "model=qwen2.5-math-1.5b", "data=deepmath"]
OWN = ["backend=verl", "model=qwen2.5-math-1.5b", "data=own"]  # your own file (conf/data/own.yaml)
register_configs()

# (key, overrides, message): check_config refuses with exactly this one line
REJECTED = [
    ('experiment', ['experiment='],
     "experiment='': must be a non-empty folder name; it names results/<experiment>/"),
    ('seed', ['seed=-1'],
     'seed=-1: must be an integer >= 0; seeds are non-negative (numpy refuses negative seeds)'),
    ('resume', ['resume=sometimes'],
     "resume='sometimes': must be one of auto, never; use resume=auto (continue an unfinished run) or resume=never"),
    ('rollout.n', ['rollout.n=1'],
     'rollout.n=1: must be an integer >= 2; a GRPO group needs at least 2 rollouts (paper: 16 and more)'),
    ('method.name', ['method.name=nope'],
     "unknown method 'nope'; choose one of: dapo, greso, grpo, mopps, oracle, pilot_commit, pilot_commit_bayes, pods, "
     "speed_rl; or add your own (method.module=your_pkg.your_alloc, or the 'pcbench.allocators' entry-point group)"),
    ('method.name', ['method=oracle', *VERL],
     'method=oracle needs a backend with uncounted_probe, which backend=verl does not declare; use backend=embedded'),
    ('method.module', ['method.module=1bad'],
     "method.module='1bad': must be empty or a dotted module path; e.g. method.module=my_pkg.my_alloc (it registers method.name)"),
    ('method.module', ['method.name=my_alloc', 'method.module=no_such_pcbench_module'],
     "method.module='no_such_pcbench_module': cannot import it (ModuleNotFoundError: No module named "
     "'no_such_pcbench_module'); put its folder on PYTHONPATH or pip install it"),
    ('method.module', ['method.name=my_alloc', 'method.module=json'],
     "method.module='json' registers no allocator 'my_alloc' (method.name); decorate its class with "
     "@register_allocator('my_alloc')"),
    ('method.n', ['method.n=1'],
     'method.n=1: must be an integer >= 2; a GRPO group needs at least 2 rollouts; set rollout.n'),
    ('method.gen_batch_size', ['method=dapo', 'method.gen_batch_size=-1'],
     'method.gen_batch_size=-1: must be an integer >= 0; it is the candidate pool per round (paper: 3 x train.batch_size)'),
    ('method.gen_batch_size', ['method=dapo', 'method.gen_batch_size=4'],
     'method.gen_batch_size=4 < train batch 16; set method.gen_batch_size >= the train batch (the paper uses 3x)'),
    ('method.max_rounds', ['method=dapo', 'method.max_rounds=0'],
     'method.max_rounds=0: must be an integer >= 1; the sampling rounds a step may take before it fails (DAPO: 10)'),
    ('method.n_pilot', ['method=pilot_commit', 'method.n_pilot=-1'],
     'method.n_pilot=-1: must be an integer >= 0; pilot rollouts per candidate (paper: n / 4)'),
    ('method.n_pilot', ['method=pilot_commit', 'rollout.n=16', 'method.n_pilot=16'],
     'method.n_pilot=16 must be in [1, method.n=16); the paper pilots 1/4 of n'),
    ('method.n_commit', ['method=pilot_commit', 'method.n_commit=-1'],
     'method.n_commit=-1: must be an integer >= 0; commit rollouts per kept prompt (paper: n - n_pilot)'),
    ('method.n_commit', ['method=pilot_commit', 'rollout.n=16', 'method.n_commit=5'],
     'method.n_pilot + method.n_commit = 9 != method.n=16; set n_commit = n - n_pilot'),
    ('method.lower', ['method=pilot_commit', 'method.lower=1.5'],
     'method.lower=1.5: must be a number in [0, 1]; Pilot-Commit keeps lower <= p <= 1 - upper (paper: 0.125)'),
    ('method.lower', ['method=pilot_commit', 'method.lower=0.9'],
     'band lower=0.9, upper=0.25 keeps nothing: need 0 <= lower <= 1 - upper <= 1 (paper: lower=0.125, upper=0.25)'),
    ('method.upper', ['method=pilot_commit', 'method.upper=-0.1'],
     'method.upper=-0.1: must be a number in [0, 1]; Pilot-Commit keeps lower <= p <= 1 - upper (paper: 0.25)'),
    ('method.staleness', ['method=pilot_commit', 'method.staleness=-1'],
     'method.staleness=-1: must be an integer >= 0; steps a buffered prompt may wait (paper: 4)'),
    ('method.buffer_sampling', ['method=pilot_commit', 'method.buffer_sampling=fifo'],
     "method.buffer_sampling='fifo': must be one of max_variance, random"),
    ('method.extra', ['method=mopps', 'method.extra.decay=0'],
     'method.extra a0=1.0, b0=1.0, decay=0.0, target=0.5: need a0, b0 > 0, 0 < decay <= 1 (1 = never forget), 0 < target < 1'),
    ('method.extra', ['method=pods', '+method.extra.n_gen=3'],
     "method.extra has unknown key(s) ['n_gen'] for pods; known keys: n_generate"),
    ('train.batch_size', ['train.batch_size=0'],
     'train.batch_size=0: must be an integer >= 1; prompts per update (paper: 128)'),
    ('train.mini_batch_size', ['train.mini_batch_size=3'],
     'train.mini_batch_size=3: must be an integer >= 1 that divides train.batch_size=16; pick a mini-batch that divides the batch (paper: 128 / 32)'),
    ('train.steps', ['train.steps=0'],
     'train.steps=0: must be an integer >= 1'),
    ('train.lr', ['train.lr=-1'],
     'train.lr=-1.0: must be a number > 0; e.g. train.lr=2e-4 (embedded) or 1e-6 (paper)'),
    ('train.lr', ['train.lr=0'],
     'train.lr=0.0: must be a number > 0; e.g. train.lr=2e-4 (embedded) or 1e-6 (paper)'),
    ('train.warmup_steps', ['train.warmup_steps=-1'],
     'train.warmup_steps=-1: must be an integer >= 0; linear warm-up steps (0 = none)'),
    ('train.weight_decay', ['train.weight_decay=-0.1'],
     'train.weight_decay=-0.1: must be a number >= 0'),
    ('train.grad_clip', ['train.grad_clip=0'],
     'train.grad_clip=0.0: must be a number > 0; the gradient-norm clip (paper: 1.0)'),
    ('train.clip_ratio_low', ['train.clip_ratio_low=1'],
     'train.clip_ratio_low=1.0: must be a number in [0, 1); the PPO ratio floor is 1 - clip_ratio_low (paper: 0.2)'),
    ('train.clip_ratio_high', ['train.clip_ratio_high=-0.1'],
     'train.clip_ratio_high=-0.1: must be a number >= 0; clip-higher (paper: 0.28)'),
    ('train.clip_ratio_c', ['train.clip_ratio_c=1'],
     "train.clip_ratio_c=1.0: must be a number > 1; dual-clip bound, > 1 (verl's assertion; paper: 10)"),
    ('train.entropy_coeff', ['train.entropy_coeff=nan'],
     'train.entropy_coeff=nan: must be a finite number'),
    ('train.loss_agg_mode', ['train.loss_agg_mode=mean'],
     "train.loss_agg_mode='mean': must be one of token-mean, token-sum, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm; verl's aggregation modes (paper: token-mean)"),
    ('train.temperature', ['train.temperature=0'],
     'train.temperature=0.0: must be a number > 0'),
    ('train.top_p', ['train.top_p=1.5'],
     'train.top_p=1.5: must be a number in (0, 1]'),
    ('train.top_p', ['train.top_p=0'],
     'train.top_p=0.0: must be a number in (0, 1]'),
    ('train.eval_every', ['train.eval_every=0'],
     'train.eval_every=0: must be an integer >= 1; steps between evaluations'),
    ('train.val_temperature', ['train.val_temperature=-1'],
     'train.val_temperature=-1.0: must be a number > 0'),
    ('train.val_top_p', ['train.val_top_p=0'],
     'train.val_top_p=0.0: must be a number in (0, 1]'),
    ('train.checkpoint_every', ['train.checkpoint_every=0'],
     'train.checkpoint_every=0: must be an integer >= 1; steps between checkpoints'),
    ('train.threads', ['train.threads=-1'],
     "train.threads=-1: must be an integer >= 0; torch threads per run (0 = torch's default)"),
    ('logging.wandb_project', ['logging.wandb_project='],
     "logging.wandb_project='': must be a non-empty string"),
    ('logging.wandb_mode', ['logging.wandb_mode=cloud'],
     "logging.wandb_mode='cloud': must be one of online, offline, disabled"),
    ('paths.results', [f"paths.results={FILE}"],
     f"paths.results={FILE!r}: must be a folder (not a file)"),
    ('paths.cache', [f"paths.cache={FILE}"],
     f"paths.cache={FILE!r}: must be a folder (not a file)"),
    ('backend.name', ['backend.name=cuda'],
     'model=tiny-qwen2 runs on backend=embedded, not backend=cuda; add backend=embedded (or pick a cuda model)'),
    ('backend.entry', ['backend.entry='],
     "backend.entry='': must be a non-empty string"),
    ('backend.device', ['backend.device=cuda'],
     "backend.device='cuda': must be cpu; the embedded backend runs on CPU; use backend=verl for GPUs"),
    ('model.name', ['model.name='],
     "model.name='': must be a non-empty string; it names the run folder"),
    ('data.name', ['data.name='],
     "data.name='': must be a non-empty string; it names the run folder"),
    ('model.backend', ['backend=embedded', 'model=qwen2.5-math-1.5b'],
     'model=qwen2.5-math-1.5b runs on backend=verl, not backend=embedded; add backend=verl (or pick a embedded model)'),
    ('data.backend', ['data=deepmath'],
     'data=deepmath runs on backend=verl, not backend=embedded; add backend=verl (or pick a embedded data)'),
    ('verl', ['+verl.trainer.nnodes=2'],
     'verl.* settings only apply to backend=verl (this run uses backend=embedded); drop the verl.* overrides or add backend=verl'),
    ('model.hidden_size', ['model.hidden_size=0'],
     'model.hidden_size=0: must be an integer >= 1'),
    ('model.intermediate_size', ['model.intermediate_size=0'],
     'model.intermediate_size=0: must be an integer >= 1'),
    ('model.num_layers', ['model.num_layers=0'],
     'model.num_layers=0: must be an integer >= 1'),
    ('model.num_heads', ['model.num_heads=3'],
     'model.num_heads=3: must be an integer >= 1 that divides model.hidden_size=128; e.g. model.num_heads=4'),
    ('model.num_heads', ['model.num_heads=0'],
     'model.num_heads=0: must be an integer >= 1 that divides model.hidden_size=128; e.g. model.num_heads=4'),
    ('model.num_heads', ['model.hidden_size=132'],
     'model.num_heads=4: must be such that head_dim = hidden_size / num_heads is even (it is 33): the rotary embedding rotates pairs; change model.num_heads or model.hidden_size'),
    ('model.num_kv_heads', ['model.num_kv_heads=3'],
     'model.num_kv_heads=3: must be an integer >= 1 that divides model.num_heads=4; grouped-query attention'),
    ('model.max_position', ['model.max_position=0'],
     'model.max_position=0: must be an integer >= 1'),
    ('model.init_seed', ['model.init_seed=-1'],
     'model.init_seed=-1: must be an integer >= 0'),
    ('model.warmstart.steps', ['model.warmstart.steps=-1'],
     'model.warmstart.steps=-1: must be an integer >= 0; SFT steps before RL (0 = none)'),
    ('model.warmstart.batch_size', ['data.sft_size=4000', 'model.warmstart.batch_size=5000'],
     'model.warmstart.batch_size=5000: must be an integer in [1, data.sft_size=4000]; each SFT batch draws without replacement'),
    ('model.warmstart.lr', ['model.warmstart.lr=0'],
     'model.warmstart.lr=0: must be a number > 0'),
    ('model.warmstart.seed', ['model.warmstart.seed=-1'],
     'model.warmstart.seed=-1: must be an integer >= 0'),
    ('model.warmstart.stop_tier', ['model.warmstart.stop_tier=add99'],
     "model.warmstart.stop_tier='add99': must be null or a tier (add11, …); the warm start stops once its probe prompts of that tier pass at model.warmstart.stop_pass_rate"),
    ('data.never_share', ['data.never_share=1.0'],
     "data.never_share=1.0: must be null (the tiers as written) or a share in [0, 1); the share of the RL pool (and validation mix) drawn from data.never_tier"),
    ('data.never_tier', ['data.never_share=0.2', 'data.never_tier=add99'],
     "data.never_tier='add99': must be a tier (add11, …) when data.never_share is set; the tier no method solves in the horizon, e.g. add44 (ladder) or add55 (continuum)"),
    ('data.val_mode', ['data.val_mode=greedy'],
     "data.val_mode='greedy': must be one of sampled, exact; exact: the gold response's probability, one forward pass"),
    ('data.warmstart_reserve', ['data.warmstart_reserve.val_size=-1'],
     "data.warmstart_reserve={…'val_size': -1…}: must be a mapping of tiers, val_size, ood_size, ood_sets, train_size (sizes >= 0, tiers over add11, …); keep conf/data/synthetic.yaml's: editing it changes the warm start"),
    ('model.warmstart.stop_pass_rate', ['model.warmstart.stop_pass_rate=1.5'],
     'model.warmstart.stop_pass_rate=1.5: must be a number in (0, 1]'),
    ('model.warmstart.check_every', ['model.warmstart.check_every=0'],
     'model.warmstart.check_every=0: must be an integer >= 1; SFT steps between two competence probes'),
    ('model.warmstart.stop_measure', ['model.warmstart.stop_measure=greedy'],
     "model.warmstart.stop_measure='greedy': must be one of exact, sampled"),
    ('model.warmstart.probe_prompts', ['model.warmstart.probe_prompts=0'],
     'model.warmstart.probe_prompts=0: must be an integer >= 1; prompts of model.warmstart.stop_tier the competence probe reads'),
    ('model.warmstart.prelude.steps', ['model.warmstart.prelude.steps=-5'],
     'model.warmstart.prelude.steps=-5: must be an integer >= 0; SFT steps before the mixed SFT on the tiers to be solved (0 = none)'),
    ('model.warmstart.prelude.tiers', ['model.warmstart.prelude.tiers=[add55]'],
     "model.warmstart.prelude.tiers=['add55']: must be a non-empty list of warm-start tiers (data.sft_tiers: add11, add21, add22, add32, add33, add43); the prelude trains on their demonstrations only"),
    ('model.warmstart.prelude.lr', ['model.warmstart.prelude.lr=0'],
     'model.warmstart.prelude.lr=0: must be a number > 0'),
    ('model.warmstart.prelude.batch_size', ['model.warmstart.prelude.batch_size=0'],
     'model.warmstart.prelude.batch_size=0: must be an integer in [1, data.sft_size=8000]; each batch draws without replacement'),
    ('model.warmstart.consolidate.steps', ['model.warmstart.consolidate.steps=-5'],
     'model.warmstart.consolidate.steps=-5: must be an integer >= 0; SFT steps after the stop on the tiers to be solved (0 = none)'),
    ('model.warmstart.consolidate.tiers', ['model.warmstart.consolidate.tiers=[add55]'],
     "model.warmstart.consolidate.tiers=['add55']: must be a non-empty list of warm-start tiers (data.sft_tiers: add11, add21, add22, add32, add33, add43); consolidation trains on their demonstrations only"),
    ('model.warmstart.consolidate.lr', ['model.warmstart.consolidate.lr=0'],
     'model.warmstart.consolidate.lr=0: must be a number > 0'),
    ('model.warmstart.consolidate.batch_size', ['model.warmstart.consolidate.batch_size=0'],
     'model.warmstart.consolidate.batch_size=0: must be an integer in [1, data.sft_size=8000]; each batch draws without replacement'),
    ('model.warmstart.top_up.steps', ['model.warmstart.top_up.steps=-1'],
     'model.warmstart.top_up.steps=-1: must be an integer >= 0; mixed SFT steps after consolidation, at most, back to the stop\'s level (0 = none)'),
    ('model.warmstart.top_up.lr', ['model.warmstart.top_up.lr=0'],
     'model.warmstart.top_up.lr=0: must be a number > 0'),
    ('data.seed', ['data.seed=-1'],
     'data.seed=-1: must be an integer >= 0'),
    ('data.train_size', ['data.train_size=5'],
     'data.train_size=5: must be an integer >= one candidate pool (16 = max(train.batch_size, method.gen_batch_size)); raise data.train_size or lower train.batch_size'),
    ('data.train_size', ['method=dapo', 'data.train_size=40'],
     'data.train_size=40: must be an integer >= one candidate pool (48 = max(train.batch_size, method.gen_batch_size)); raise data.train_size or lower train.batch_size'),
    ('data.train_size', ['data.train_size=100000000'],
     "data.train_size=100000000: must be at most the …distinct problems data.tiers can give (…); lower it or add tiers"),
    ('data.sft_size', ['data.sft_size=100000000'],
     "data.sft_size=100000000: must be at most the …distinct problems data.sft_tiers can give (…); lower it or add tiers"),
    # keys of the embedded task's redesign (issue 11): skipped where the config has no such key
    ('data.ood_size', ['data.ood_size=-1'],
     "data.ood_size=-1: must be an integer >= 0; prompts per out-of-distribution set (0 = none)"),
    ('data.ood_samples', ['data.ood_samples=0'],
     "data.ood_samples=0: must be an integer >= 1; samples per out-of-distribution problem"),
    ('data.ood_sets', ['data.ood_sets.add21=[mul99]'],
     "data.ood_sets={'add21': ['mul99']…}: must be a mapping set: [tiers] over add11, …"),
    ('data.reverse', ['data.reverse=maybe'], "data.reverse='maybe': must be true, false or both; true writes the "
     "answer least-significant digit first, both reverses the operands too"),
    ('data.val_samples', ['data.val_samples=0'], "data.val_samples=0: must be an integer >= 1; samples per validation problem"),
    ('data.val_size', ['data.val_size=0'],
     'data.val_size=0: must be an integer >= 1; prompts per validation set (val/acc of an empty set is nan)'),
    ('data.sft_size', ['data.sft_size=0'],
     'data.sft_size=0: must be an integer >= 1; warm-start demonstrations'),
    ('data.max_response_tokens', ['data.max_response_tokens=0'],
     'data.max_response_tokens=0: must be an integer >= 1; tokens a rollout may generate (default 10)'),
    ('data.tiers', ['~data.tiers'],
     "data=synthetic-arith: Key 'tiers' is not in struct; the embedded task needs it (see conf/data/synthetic.yaml)"),
    ('data.tiers', ['+data.tiers.add99=0.5'],
     "data.tiers={…'add99': 0.5}: must be a non-empty mapping tier: weight >= 0 (sum > 0) over add11, …"),
    ('data.tiers', ['+data.tiers.add42c5=0.5'],  # the finer ladder has no carry tiers: add42c5 is not a tier
     "data.tiers={…'add42c5': 0.5}: must be a non-empty mapping tier: weight >= 0 (sum > 0) over add11, …"),
    ('data.tiers', ['data=synthetic_skills', '+data.tiers.sub55=0.5'],  # the sub skill's ladder stops at sub44
     "data.tiers={…'sub55': 0.5}: must be a non-empty mapping tier: weight >= 0 (sum > 0) over add11, …"),
    ('data.tiers', ['data.tiers.add22=-1'],
     "data.tiers={…'add22': -1…}: must be a non-empty mapping tier: weight >= 0 (sum > 0) over add11, …"),
    ('data.sft_tiers', ['data.sft_tiers.add21=-1'],
     "data.sft_tiers={…'add21': -1…}: must be a non-empty mapping tier: weight >= 0 (sum > 0) over add11, …"),
    ('model.path', [*VERL, 'model.path='],
     "model.path='': must be a non-empty string; a Hugging Face id or a local model folder"),
    ('model.params_b', [*VERL, 'model.params_b=0'],
     'model.params_b=0: must be a number > 0; parameters in billions, for the memory check'),
    ('model.gpu_memory_gb', [*VERL, 'model.gpu_memory_gb=0'],
     'model.gpu_memory_gb=0: must be a number > 0'),
    ('model.nnodes', [*VERL, 'model.nnodes=0'],
     'model.nnodes=0: must be an integer >= 1'),
    ('model.n_gpus_per_node', [*VERL, 'model.n_gpus_per_node=0'],
     'model.n_gpus_per_node=0: must be an integer >= 1'),
    ('model.tensor_parallel', [*VERL, 'model.tensor_parallel=0'],
     'model.tensor_parallel=0: must be an integer >= 1'),
    ('model.tensor_parallel', [*VERL, 'model.tensor_parallel=3'],
     'model.tensor_parallel=3 must divide the 16 GPUs and be <= model.n_gpus_per_node=8'),
    ('model.sequence_parallel', [*VERL, 'model.sequence_parallel=0'],
     'model.sequence_parallel=0: must be an integer >= 1; Ulysses sequence parallel size (1 = off)'),
    ('model.offload', [*VERL, 'model.offload=maybe'],
     "model.offload='maybe': must be true or false"),
    ('model.max_prompt_length', [*VERL, 'model.max_prompt_length=0'],
     'model.max_prompt_length=0: must be an integer >= 1'),
    ('model.max_response_length', [*VERL, 'model.max_response_length=0'],
     'model.max_response_length=0: must be an integer >= 1'),
    ('model.overlong_enable', [*VERL, 'model.overlong_enable=maybe'],
     "model.overlong_enable='maybe': must be true or false"),
    ('model.overlong_buffer', [*VERL, 'model.overlong_buffer=8192'],
     'model.overlong_buffer=8192: must be an integer in [0, model.max_response_length=8192)'),
    ('model.overlong_penalty', [*VERL, 'model.overlong_penalty=-1'],
     'model.overlong_penalty=-1: must be a number >= 0'),
    ('model.gpu_memory_utilization', [*VERL, 'model.gpu_memory_utilization=1'],
     "model.gpu_memory_utilization=1: must be a number in (0, 1); vLLM's share of each GPU"),
    ('model.max_num_batched_tokens', [*VERL, 'model.max_num_batched_tokens=0'],
     'model.max_num_batched_tokens=0: must be an integer >= 1'),
    ('model.max_token_len_per_gpu', [*VERL, 'model.max_token_len_per_gpu=1000'],
     'model.max_token_len_per_gpu=1000: must be an integer >= max_prompt_length + max_response_length = 10240; one sequence must fit the dynamic-batch token budget'),
    ('data.train_files', [*VERL, 'data.train_files='],
     "data.train_files='': must be a parquet file"),
    ('data.val_files', [*VERL, 'data.val_files=[]'],
     'data.val_files=[]: must be a non-empty list of parquet files; validation needs at least one set'),
    ('backend.poll_interval_s', [*VERL, 'backend.poll_interval_s=0'],
     'backend.poll_interval_s=0: must be a number > 0'),
    ('backend.ray_port', [*VERL, 'backend.ray_port=80'],
     "backend.ray_port=80: must be an integer port in [1024, 65535]; the Ray head's port on the first node of a multi-node job (default 6379)"),
    ('backend.ray_join_timeout_s', [*VERL, 'backend.ray_join_timeout_s=0'],
     'backend.ray_join_timeout_s=0: must be a number > 0; seconds a multi-node job waits for the head / every worker to join Ray before one clear error'),
    ('backend.max_retries', [*VERL, 'backend.max_retries=-1'],
     'backend.max_retries=-1: must be an integer >= 0'),
    ('backend.ray_num_cpus', [*VERL, 'backend.ray_num_cpus=0'],
     'backend.ray_num_cpus=0: must be null (all CPUs) or an integer >= 1'),
    ('backend.reward_path', [*VERL, 'backend.reward_path='],
     "backend.reward_path='': must be a non-empty string"),
    # keys of the verl CPU platform (issue 10): skipped where the config has no such key
    ('backend.platform', [*VERL, 'backend.platform=tpu'],
     "backend.platform='tpu': must be one of auto, cpu, gpu; auto picks cpu when torch sees no CUDA device"),
    ('backend.watchdog_s', [*VERL, 'backend.watchdog_s=-1'],
     "backend.watchdog_s=-1: must be a number >= 0; seconds without a heartbeat before the entry stops verl (0: never)"),
    ('model.make', ['backend=verl', 'model=tiny-verl', 'data=tiny-verl', 'model.make=tiny'],
     "model.make='tiny': must be null or module:function; the function that builds model.path when it is missing"),
    ('model.embedded', ['backend=verl', 'model=embedded-verl', 'data=embedded-verl', 'model.embedded=[hidden]'],
     "model.embedded=['hidden']: must be a list of key=value overrides of the embedded config; the warm start "
     "model=embedded-verl exports, e.g. [model.warmstart.stop_pass_rate=0.3]"),
    ('data.embedded', ['backend=verl', 'model=embedded-verl', 'data=embedded-verl', 'data.embedded=5'],
     "data.embedded=5: must be a list of key=value overrides of the embedded config; the task data=embedded-verl "
     "writes, e.g. [data.train_size=500]"),
    ('data.make', ['backend=verl', 'model=embedded-verl', 'data=embedded-verl', 'data.make=write'],
     "data.make='write': must be null or module:function; the function that builds the parquet files in data.root"),
    ('verl', [*VERL, 'verl.data.train_batch_size=64'],
     "verl.data.train_batch_size=64 differs from train.batch_size=128; set train.batch_size instead (pcbench's allocator reads it)"),
    ('model.override_config', [*VERL, 'model.override_config=5'],
     'model.override_config=5: must be a mapping of Hugging Face config keys; e.g. model.override_config.max_position_embeddings=10240'),
    ('data.root', [*VERL, 'data.root='],
     "data.root='': must be a non-empty string; the folder holding the parquet files"),
    ('data.source', [*OWN, 'data.source='],
     "data.source='': must be a non-empty string; your .parquet/.jsonl/.json/.csv file, e.g. data.source=my_math.jsonl"),
    ('data.question', [*OWN, 'data.question='],
     "data.question='': must be a non-empty string; the column holding the question, e.g. data.question=problem"),
    ('data.answer', [*OWN, 'data.answer='],
     "data.answer='': must be a non-empty string; the column holding the final answer, e.g. data.answer=answer"),
    ('data.transform', [*OWN, 'data.transform=my_module'],
     "data.transform='my_module': must be null or module:function; a function mapping one raw row (a dict) to "
     "(question, answer)"),
    ('data.reward', [*OWN, 'data.reward=nope'],
     "data.reward='nope': must be a reward pcbench can load (no reward named 'nope'; choose one of: math; or add your "
     "own: a 'pcbench.rewards' entry point or module:function (docs/own-data.md))"),
    ('data.val_source', [*OWN, 'data.val_source='],
     "data.val_source='': must be null or a file with the same columns; null holds out data.val_size rows of data.source"),
    ('data.val_size', [*OWN, 'data.val_size=0'],
     "data.val_size=0: must be an integer >= 1; rows of data.source held out for validation when data.val_source is null"),
]

# typed keys whose wrong type Hydra/OmegaConf refuse while composing (pcbench.run prints it as one line)
TYPE_REJECTED = [
    ("dry_run", ["dry_run=maybe"], "Error merging override dry_run=maybe; Value 'maybe' is not a valid bool (type str)"),
    ("logging.progress", ["logging.progress=maybe"],
     "Error merging override logging.progress=maybe; Value 'maybe' is not a valid bool (type str)"),
    ("logging.wandb", ["logging.wandb=maybe"],
     "Error merging override logging.wandb=maybe; Value 'maybe' is not a valid bool (type str)"),
]


def cfg_of(*overrides):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("key,overrides,message", REJECTED, ids=[f"{k}:{o[-1]}" for k, o, _ in REJECTED])
def test_rejected_setting_gets_one_line(key, overrides, message):
    cfg = cfg_of(*overrides)
    with pytest.raises(ConfigError) as e:
        check_config(cfg)
    assert fits(str(e.value), message)
    assert "\n" not in str(e.value)


def fits(line: str, expected: str) -> bool:
    """The whole line, where "…" stands for what depends on the task's default tiers."""
    return re.fullmatch(".*".join(map(re.escape, expected.split("…"))), line) is not None


@pytest.mark.parametrize("key,overrides,message", TYPE_REJECTED, ids=[k for k, _, _ in TYPE_REJECTED])
def test_wrong_type_is_refused_while_composing(key, overrides, message):
    from pcbench.run import one_line

    with pytest.raises(Exception) as e:
        cfg_of(*overrides)
    assert one_line(e.value) == message


def test_defaults_of_every_group_pass():
    for overrides in ([], ["method=dapo"], ["method=pilot_commit"], ["method=pilot_commit_bayes"], ["method=greso"],
                      ["method=mopps"], ["method=oracle"], ["method=pods"], ["method=speed_rl"], VERL,
                      ["backend=verl", "model=qwen3-8b", "data=polaris"], ["data=synthetic_skills"],
                      ["data=synthetic_continuum", "+data.tiers.add42=0.2", "+data.tiers.add53=0.1"]):
        check_config(cfg_of(*overrides))


def test_verl_local_model_with_a_head_dim_vllm_refuses(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 64, "num_attention_heads": 4,
                                                     "num_key_value_heads": 2}))
    with pytest.raises(ConfigError) as e:
        check_config(cfg_of(*VERL, f"model.path={tmp_path}"))
    assert str(e.value) == (f"model.path={str(tmp_path)!r}: must be a model with head_dim >= 32 for vLLM's attention "
                            f"(its config.json gives 16); fix the model's config.json (or model.override_config) "
                            f"or pick another model")
    check_config(cfg_of(*VERL, f"model.path={tmp_path}", "+model.override_config.num_attention_heads=2"))


def test_every_schema_key_has_a_rejected_case():
    sys.path.insert(0, str(Path(__file__).parent))
    from rule_coverage import coverage

    tested = {key for key, _, _ in REJECTED + TYPE_REJECTED}
    for schema, (covered, missing, unchecked) in coverage(tested).items():
        assert not missing, f"{schema}: keys without a rejected case in REJECTED: {missing}"


@pytest.mark.parametrize("argv,line", [
    (["train.lr=-1"], "pcbench: config error: train.lr=-1.0: must be a number > 0; e.g. train.lr=2e-4 (embedded) or "
                      "1e-6 (paper)"),
    (["dry_run=maybe"], "pcbench: config error: Error merging override dry_run=maybe; Value 'maybe' is not a valid "
                        "bool (type str)"),
    (["-m", "method=grpo,dapo", "method.max_rounds=1,0"],
     "pcbench: config error: method.max_rounds=0: must be an integer >= 1; the sampling rounds a step may take before "
     "it fails (DAPO: 10) (sweep job 1 of 4: method=grpo method.max_rounds=0; no job was started)"),
])
def test_cli_refuses_before_anything_is_written(tmp_path, argv, line):
    """No run folder, no Hydra log folder, no warm-start cache: the check runs before Hydra starts."""
    proc = subprocess.run([sys.executable, "-m", "pcbench.run", *argv, f"paths.results={tmp_path / 'results'}",
                           f"paths.cache={tmp_path / 'cache'}"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [line]
    assert list(tmp_path.iterdir()) == []


def test_sweep_is_expanded_like_hydra_before_any_job():
    from pcbench.run import sweep_jobs

    jobs = sweep_jobs(["-m", "method=grpo,dapo", "seed=range(0,2)", "hydra/launcher=local", "train.steps=3"])
    assert sorted(map(tuple, jobs)) == sorted((f"method={m}", f"seed={s}", "train.steps=3")
                                              for m in ("grpo", "dapo") for s in (0, 1))
    methods = {job[0] for job in sweep_jobs(["--multirun", "method=glob(pilot*)"])}
    assert methods == {"method=pilot_commit", "method=pilot_commit_bayes"}
    assert sweep_jobs(["train.lr=1e-3"]) == [["train.lr=1e-3"]]  # a single run is one job
    assert sweep_jobs(["--cfg", "job"]) == []  # Hydra's own commands are left to Hydra
