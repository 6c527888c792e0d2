"""backend=verl configs: every model x data x method composes, passes pcbench's checks and verl's own
schema (validate_config and the dataclass conversions verl applies), and maps docs/method.md#shared-training-setup."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pcbench.allocators import get_allocator_cls
from pcbench.backends.verl import vendor
from pcbench.backends.verl.config import build_verl_config, check_backend_config
from pcbench.config import ConfigError, check_config
from tests.verl.doubles import compose_pcbench as compose_cfg

CONF = Path(__file__).resolve().parents[2] / "conf"
MODELS = sorted(p.stem for p in (CONF / "model").glob("qwen*.yaml"))
DATA = ["deepmath", "polaris", "dapo17k"]
METHODS = sorted(p.stem for p in (CONF / "method").glob("*.yaml"))
PAPER_METHODS = ["grpo", "dapo", "pilot_commit"]


def verl_schema_check(verl):
    """What verl does with a config before and while building workers, minus the GPU parts."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    assert not need_reference_policy(verl) and not need_critic(verl)  # no KL, GRPO: actor + rollout only
    validate_config(config=verl, use_reference_policy=False, use_critic=False)  # converts actor -> FSDPActorConfig
    rollout = omega_conf_to_dataclass(verl.actor_rollout_ref.rollout)
    algo = omega_conf_to_dataclass(verl.algorithm)
    omega_conf_to_dataclass(verl.actor_rollout_ref.rollout.checkpoint_engine)
    omega_conf_to_dataclass(verl.actor_rollout_ref.actor.optim)
    return rollout, algo


def _composes(model, data, method, schema=False):
    cfg = compose_cfg("backend=verl", f"model={model}", f"data={data}", f"method={method}")
    check_config(cfg)
    verl = build_verl_config(cfg, run_dir="/tmp/run", run_name="x")
    if schema:
        rollout, algo = verl_schema_check(verl)
        assert rollout.n == cfg.method.n and algo.adv_estimator == "grpo"
    assert verl.pcbench.method.name == method and verl.trainer.v1.trainer_mode == "pcbench"
    assert verl.data.train_files.endswith(f"/{data}.parquet")


def test_every_model_data_paper_method_composes_and_passes_verl_schema():
    # verl's own checks depend on model and method (GPUs, batch, n), not on the data files
    for model in MODELS:
        for data in DATA:
            for method in PAPER_METHODS:
                _composes(model, data, method, schema=data == DATA[0])


def test_neighbour_methods_compose_at_both_group_sizes():
    # the other registered methods (SPEED-RL, GRESO, PODS, ...) at both group sizes (n = 128 and 64)
    # (a method needing a capability verl's backend lacks, the oracle, is refused: tests/config/test_rules.py)
    others = [m for m in METHODS if m not in PAPER_METHODS and not get_allocator_cls(m).requires]
    for i, method in enumerate(others):
        for j, model in enumerate(["qwen2.5-math-1.5b", "qwen3-14b"]):
            _composes(model, DATA[(i + j) % len(DATA)], method)


def test_paper_setup_lands_in_verl_keys(paper_cfg):
    v = build_verl_config(paper_cfg("pilot_commit"), run_dir=None)
    a, r = v.actor_rollout_ref.actor, v.actor_rollout_ref.rollout
    assert (a.clip_ratio_low, a.clip_ratio_high, a.clip_ratio_c) == (0.2, 0.28, 10.0)
    assert a.loss_agg_mode == "token-mean" and a.entropy_coeff == 0 and not a.use_kl_loss
    assert not v.algorithm.use_kl_in_reward and not v.algorithm.filter_groups.enable
    assert (a.optim.lr, a.optim.lr_warmup_steps, a.optim.weight_decay, a.grad_clip) == (1e-6, 10, 0.1, 1.0)
    assert (v.data.train_batch_size, a.ppo_mini_batch_size) == (128, 32)
    assert (r.temperature, r.top_p, r.n) == (1.0, 1.0, 128)
    assert (r.val_kwargs.temperature, r.val_kwargs.top_p, r.val_kwargs.n, r.val_kwargs.do_sample) == (1.0, 0.7, 1, True)
    assert (v.trainer.test_freq, v.trainer.total_training_steps, v.trainer.nnodes, v.trainer.n_gpus_per_node) == (5, 1000, 2, 8)
    assert (v.data.max_prompt_length, v.data.max_response_length) == (2048, 8192)
    ob = v.reward.reward_kwargs.overlong_buffer_cfg
    assert (ob.enable, ob.len, ob.penalty_factor, v.reward.reward_manager.name) == (True, 4096, 1.0, "dapo")
    assert v.reward.custom_reward_function.path.endswith("pcbench/reward/verl_entry.py")
    assert v.data.train_files.startswith("/") and all(f.startswith("/") for f in v.data.val_files)
    assert v.actor_rollout_ref.model.path == "Qwen/Qwen2.5-Math-1.5B"  # a hub id stays a hub id
    m = v.pcbench.method
    assert (m.n_pilot, m.n_commit, m.gen_batch_size) == (32, 96, 384)
    # the steady-state cost per step (docs/method.md#cost-per-step), from the composed settings
    assert m.gen_batch_size * m.n_pilot + v.data.train_batch_size * m.n_commit == 24_576


def test_4b_plus_models_use_the_4x8_short_response_setup():
    for model, nodes in (("qwen3-4b-base", 4), ("qwen3-8b", 4), ("qwen3-14b", 8)):  # 14B: the paper's 64 GPUs
        v = build_verl_config(compose_cfg("backend=verl", f"model={model}", "data=polaris", "method=pilot_commit"), None)
        assert (v.trainer.nnodes, v.data.max_response_length, v.actor_rollout_ref.rollout.n) == (nodes, 4096, 64)
        assert not v.reward.reward_kwargs.overlong_buffer_cfg.enable
        assert (v.pcbench.method.n_pilot, v.pcbench.method.n_commit) == (16, 48)


def test_any_verl_key_is_overridable_from_the_pcbench_command_line(paper_cfg):
    cfg = paper_cfg("grpo", "verl.actor_rollout_ref.rollout.gpu_memory_utilization=0.8", "model.tensor_parallel=2",
                    "verl.trainer.logger=[console,wandb]")
    v = build_verl_config(cfg, None)
    assert v.actor_rollout_ref.rollout.gpu_memory_utilization == 0.8
    assert v.actor_rollout_ref.rollout.tensor_model_parallel_size == 2
    assert list(v.trainer.logger) == ["console", "wandb"]


def test_mirrored_keys_must_be_set_on_the_pcbench_side(paper_cfg):
    with pytest.raises(ConfigError, match="set train.batch_size instead"):
        check_backend_config(paper_cfg("grpo", "verl.data.train_batch_size=64"))
    with pytest.raises(ConfigError, match="method=dapo"):
        check_backend_config(paper_cfg("grpo", "verl.algorithm.filter_groups.enable=true"))


def test_embedded_model_is_refused_by_the_verl_backend():
    cfg = compose_cfg("backend=verl", "data=deepmath")  # model=tiny (backend: embedded)
    with pytest.raises(ConfigError, match="model=qwen2.5-math-1.5b"):
        check_backend_config(cfg)


def test_every_verl_model_says_backend_verl():
    for model in MODELS:
        assert compose_cfg("backend=verl", f"model={model}").model.backend == "verl"


def test_vendored_verl_config_is_verl_0_9_1s_own():
    """conf/verl/ppo_trainer.yaml == a fresh composition of verl's ppo_trainer (re-rooted)."""
    import verl

    assert verl.__version__ == "0.9.1"
    assert vendor.VENDORED.read_text() == vendor.compose_verl_yaml(), \
        "verl's config changed: run `python -m pcbench.backends.verl.vendor` and review the diff"


def test_reroot_keeps_relative_and_prefixes_absolute_interpolations():
    text = "a: ${data.x}\nb: ${oc.select:trainer.n, 8}\nc: ${.y}\nd: ${oc.select:p.q,${oc.select:r.s,null}}\n"
    assert vendor.reroot(text) == ("a: ${verl.data.x}\nb: ${oc.select:verl.trainer.n, 8}\nc: ${.y}\n"
                                   "d: ${oc.select:verl.p.q,${oc.select:verl.r.s,null}}\n")
    with pytest.raises(ValueError, match="oc.env"):
        vendor.reroot("x: ${oc.env:HOME}")


def test_resolved_config_round_trips_through_verl_main_shape(paper_cfg, tmp_path):
    """The written verl_config.yaml loads back as a plain config (what verl's main reads)."""
    v = build_verl_config(paper_cfg("pilot_commit"), run_dir=str(tmp_path), run_name="r")
    path = tmp_path / "verl_config.yaml"
    path.write_text(OmegaConf.to_yaml(v))
    back = OmegaConf.load(path)
    assert back == v and back.trainer.default_local_dir == str(tmp_path.resolve() / "checkpoint")
    env = back.ray_kwargs.ray_init.runtime_env.env_vars
    assert env.VERL_USE_EXTERNAL_MODULES == "pcbench.backends.verl.trainer"
