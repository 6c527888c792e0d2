"""Every config composes, and every impossible setting fails at composition with one line."""

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pcbench.config import ConfigError, check_config, register_configs

CONF = str(Path(__file__).resolve().parents[2] / "conf")
register_configs()


def cfg_of(*overrides):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("method", ["grpo", "dapo", "pilot_commit"])
def test_embedded_methods_compose_with_paper_ratios(method):
    cfg = cfg_of(f"method={method}")
    check_config(cfg)
    m = cfg.method
    assert m.name == method and m.n == cfg.rollout.n == 32
    if method != "grpo":
        assert m.gen_batch_size == 3 * cfg.train.batch_size  # 3x candidate pool
    if method == "pilot_commit":
        assert (m.n_pilot, m.n_commit, m.lower, m.upper, m.staleness) == (8, 24, 0.125, 0.25, 4)


def test_pilot_split_follows_rollout_n():
    cfg = cfg_of("method=pilot_commit", "rollout.n=64")
    assert (cfg.method.n_pilot, cfg.method.n_commit) == (16, 48)


@pytest.mark.parametrize("overrides,needle", [
    (["method=pilot_commit", "method.n_pilot=32"], "method.n_pilot=32 must be in [1, method.n=32)"),
    (["method=pilot_commit", "method.n_commit=5"], "set n_commit = n - n_pilot"),
    (["method=pilot_commit", "method.lower=0.9"], "keeps nothing"),
    (["method=pilot_commit", "method.upper=-0.1"], "method.upper=-0.1: must be a number in [0, 1]"),
    (["method=dapo", "method.gen_batch_size=4"], "method.gen_batch_size=4 < train batch 16"),
    (["method=pilot_commit", "method.staleness=-1"], "staleness"),
    (["train.mini_batch_size=3"], "train.mini_batch_size=3: must be an integer >= 1 that divides train.batch_size=16"),
    (["train.steps=0"], "train.steps=0"),
    (["train.top_p=1.5"], "top_p"),
    (["resume=sometimes"], "resume=auto"),
    (["method=grpo", "rollout.n=1"], "at least 2 rollouts"),
    (["+verl.trainer.nnodes=2"], "verl.* settings only apply to backend=verl"),
    (["data.val_samples=0"], "data.val_samples=0: must be an integer >= 1"),
    (["data.reverse=backwards"], "data.reverse='backwards'"),
    (["data.ood_size=-1"], "data.ood_size=-1: must be an integer >= 0"),
    (["data.ood_samples=0"], "data.ood_samples=0: must be an integer >= 1"),
])
def test_impossible_settings_fail_in_one_line(overrides, needle):
    with pytest.raises(ConfigError) as e:
        check_config(cfg_of(*overrides))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_misspelt_key_is_rejected_at_composition():
    with pytest.raises(Exception, match="n_pilots"):
        cfg_of("method=pilot_commit", "method.n_pilots=8")


def test_cli_reports_config_errors_in_one_line_before_any_work(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pcbench.run", "method=pilot_commit", "method.n_commit=3",
                           f"paths.results={tmp_path}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "pcbench: config error: method.n_pilot + method.n_commit = 11 != method.n=32; set n_commit = n - n_pilot"]
    assert [p.name for p in tmp_path.iterdir()] in ([], [".hydra"])  # no run folder, only Hydra's log dir


def test_cli_unknown_method_lists_choices(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pcbench.run", "method=gpro", f"paths.results={tmp_path}"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Available options in 'method'" in proc.stderr
    assert "grpo" in proc.stderr and "pilot_commit" in proc.stderr


def test_resolved_config_keeps_identity_keys():
    c = OmegaConf.to_container(cfg_of("method=dapo", "seed=3"), resolve=True)
    assert c["method"]["name"] == "dapo" and c["seed"] == 3 and c["model"]["name"] and c["data"]["name"]


def test_dry_run_prints_the_config_and_writes_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pcbench.run", "method=pilot_commit", "dry_run=true",
                           f"paths.results={tmp_path}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "n_pilot: 8" in proc.stdout and "# run folder: " in proc.stdout and "# on start: create it" in proc.stdout
    assert not (tmp_path / "embedded").exists()


@pytest.mark.parametrize("overrides,needle", [
    (["model.nnodes=1", "model.n_gpus_per_node=1", "model.tensor_parallel=1", "model.offload=false"],
     "GB per GPU of FSDP training state on 1 GPUs"),
    (["model.tensor_parallel=1", "model.gpu_memory_gb=24"], "GB per GPU for vLLM weights at tensor_parallel=1"),
    (["model.tensor_parallel=3"], "must divide the 64 GPUs"),  # 14B: the paper's 8 x 8
])
def test_gpu_layouts_that_cannot_hold_the_model_fail_at_composition(overrides, needle):
    from pcbench.backends.verl.config import check_backend_config
    cfg = cfg_of("backend=verl", "model=qwen3-14b", "data=polaris", "method=grpo", *overrides)
    with pytest.raises(ConfigError, match="model=qwen3-14b|tensor_parallel") as e:
        check_backend_config(cfg)
    assert needle in str(e.value)


def test_every_gpu_layout_passes_the_capacity_check():
    from pcbench.backends.verl.config import check_gpu_capacity
    sized = [p.stem for p in sorted(Path(CONF, "model").glob("*.yaml")) if "params_b:" in p.read_text()]
    assert len(sized) >= 5  # every paper model (tests/config/test_experiments.py composes every model file)
    for model in sized:
        check_gpu_capacity(cfg_of("backend=verl", f"model={model}", "data=deepmath").model)


def _imported_modules(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text())
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            found |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module:  # `from pcbench import config` names pcbench.config
            found |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
    return found


def test_rules_module_does_not_import_config():
    """config imports rules and never the reverse (issue 21). Walks the whole syntax tree, so a
    lazy import inside a rule's function, which would bring the circle back, fails here too."""
    pkg = Path(__file__).resolve().parents[2] / "pcbench"
    assert "pcbench.rules" in _imported_modules(pkg / "config.py")
    for name in ("rules.py", "errors.py"):
        assert "pcbench.config" not in _imported_modules(pkg / name), name


VERL_MODELS = {"qwen2.5-math-1.5b": "deepmath", "qwen2.5-math-7b": "deepmath", "qwen3-4b-base": "polaris",
               "qwen3-8b": "polaris", "qwen3-14b": "polaris", "smollm2-135m": "ladder", "tiny-verl": "tiny-verl",
               "embedded-verl": "embedded-verl"}


def test_every_verl_model_is_listed():
    models = {p.stem for p in Path(CONF, "model").glob("*.yaml")}
    verl = {m for m in models if cfg_of(f"model={m}").model.get("backend") == "verl"}
    assert verl == set(VERL_MODELS)


@pytest.mark.parametrize("model", sorted(VERL_MODELS))
def test_model_picks_its_backend_and_data(model):
    """`model=X` alone runs on the model's backend with its paper data (no backend= / data= needed)."""
    cfg = cfg_of(f"model={model}", "method=pilot_commit")
    check_config(cfg)
    assert (cfg.backend.name, cfg.data.name) == ("verl", cfg_of(f"data={VERL_MODELS[model]}", "backend=verl").data.name)
    # the same run as the explicit spelling: same composed config
    explicit = cfg_of("backend=verl", f"model={model}", f"data={VERL_MODELS[model]}", "method=pilot_commit")
    assert OmegaConf.to_container(cfg) == OmegaConf.to_container(explicit)


def test_given_data_wins_and_contradicting_backend_is_an_error():
    assert cfg_of("model=qwen3-8b", "data=deepmath").data.name == "deepmath"
    with pytest.raises(ConfigError, match="model=qwen2.5-math-1.5b runs on backend=verl, not backend=embedded; "
                                          "add backend=verl"):
        check_config(cfg_of("backend=embedded", "model=qwen2.5-math-1.5b"))
    assert cfg_of().backend.name == "embedded"  # the default stays the embedded CPU path


def test_the_request_command_line_dry_runs(tmp_path):
    """The issue's command as written: three methods on the verl backend, from the model alone."""
    proc = subprocess.run([sys.executable, "-m", "pcbench.run", "-m", "method=grpo,dapo,pilot_commit",
                           "model=qwen2.5-math-1.5b", "dry_run=true", f"paths.results={tmp_path}"],
                          cwd=Path(CONF).parent, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    heads = [ln for ln in proc.stdout.splitlines() if ln.startswith("# pcbench dry run")]
    assert [h.split(": ", 1)[1] for h in heads] == [
        f"backend=verl method={m} model=qwen2.5-math-1.5b data=deepmath" for m in ("grpo", "dapo", "pilot_commit")]
