"""The value every setting a user can type may take, as tables of rules checked at composition.

`check_config` (pcbench/config.py) runs `check_rules(cfg)` before any run folder, warm start
or Ray cluster exists; config imports this module, never the reverse (ConfigError lives in
pcbench/errors.py). A rule names one dotted key, what a valid value is and how to fix it;
a broken rule raises ConfigError with one line `key=value: must be ...; fix`. Rules of keys
a config does not have are skipped, so a backend's model/data groups carry their own table
(RULES_BY_BACKEND). tests/config/test_rules.py holds a rejected case per key, and
`python tests/config/rule_coverage.py` counts the keys of each schema that have one (its
test fails when a key is added without a rule and a case).

Cross-field rules (heads divide hidden, a data set holds one candidate pool) sit on the key
that a user would change and read the others from the whole config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from omegaconf import DictConfig, ListConfig, OmegaConf

from pcbench.errors import ConfigError  # not pcbench.config: config imports this module
from pcbench.reward.registry import problem as reward_problem

_ABSENT = object()


@dataclass(frozen=True)
class Rule:
    key: str
    ok: Callable[[Any, DictConfig], bool]  # (value, whole config) -> valid?
    need: str | Callable[[DictConfig], str]  # what a valid value is: "an integer >= 1"
    fix: str = ""

    def check(self, cfg: DictConfig) -> None:
        value = OmegaConf.select(cfg, self.key, default=_ABSENT)
        if value is _ABSENT:
            return
        try:
            good = self.ok(value, cfg)
        except (TypeError, ValueError, ZeroDivisionError):
            good = False
        if not good:
            need = self.need(cfg) if callable(self.need) else self.need
            shown = OmegaConf.to_container(value) if isinstance(value, (DictConfig, ListConfig)) else value
            raise ConfigError(f"{self.key}={shown!r}: must be {need}" + (f"; {self.fix}" if self.fix else ""))


# -- value predicates ---------------------------------------------------------------------------
def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def int_ge(key: str, lo: int, fix: str = "") -> Rule:
    return Rule(key, lambda v, c: is_int(v) and v >= lo, f"an integer >= {lo}", fix)


def num(key: str, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
        hi_open: bool = False, fix: str = "") -> Rule:
    """A finite number in [lo, hi] (either end open or absent)."""
    def ok(v, c):
        return is_num(v) and (lo is None or (v > lo if lo_open else v >= lo)) and \
            (hi is None or (v < hi if hi_open else v <= hi))
    if lo is not None and hi is not None:
        need = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    elif lo is not None:
        need = f"a number {'>' if lo_open else '>='} {lo:g}"
    else:
        need = "a finite number"
    return Rule(key, ok, need, fix)


def one_of(key: str, *choices, fix: str = "") -> Rule:
    need = "one of " + ", ".join(map(str, choices)) if len(choices) > 1 else str(choices[0])
    return Rule(key, lambda v, c: v in choices, need, fix)


def boolean(key: str) -> Rule:
    return Rule(key, lambda v, c: isinstance(v, bool), "true or false")


def text(key: str, fix: str = "") -> Rule:
    return Rule(key, lambda v, c: isinstance(v, str) and v.strip() != "", "a non-empty string", fix)


def sel(cfg, key, default=None):
    return OmegaConf.select(cfg, key, default=default)


def _folder(v, c) -> bool:
    from pathlib import Path
    return isinstance(v, str) and v.strip() != "" and not Path(v).expanduser().is_file()


# -- the shared schema (pcbench/config.py RootConfig) --------------------------------------------
def _pool(cfg) -> int:
    """Prompts one step may draw at once: the candidate pool (gen_batch_size) or the batch."""
    return max(int(sel(cfg, "train.batch_size", 1)), int(sel(cfg, "method.gen_batch_size", 0) or 0))


ROOT_RULES = [
    Rule("experiment", lambda v, c: isinstance(v, str) and v.strip() != "" and ".." not in v.split("/"),
         "a non-empty folder name", "it names results/<experiment>/"),
    int_ge("seed", 0, "seeds are non-negative (numpy refuses negative seeds)"),
    one_of("resume", "auto", "never", fix="use resume=auto (continue an unfinished run) or resume=never"),
    boolean("dry_run"),
    int_ge("rollout.n", 2, "a GRPO group needs at least 2 rollouts (paper: 16 and more)"),
    text("method.name"),
    Rule("method.module", lambda v, c: isinstance(v, str) and (v == "" or all(p.isidentifier() for p in v.split("."))),
         "empty or a dotted module path", "e.g. method.module=my_pkg.my_alloc (it registers method.name)"),
    int_ge("method.n", 2, "a GRPO group needs at least 2 rollouts; set rollout.n"),
    int_ge("method.gen_batch_size", 0, "it is the candidate pool per round (paper: 3 x train.batch_size)"),
    int_ge("method.max_rounds", 1, "the sampling rounds a step may take before it fails (DAPO: 10)"),
    int_ge("method.n_pilot", 0, "pilot rollouts per candidate (paper: n / 4)"),
    int_ge("method.n_commit", 0, "commit rollouts per kept prompt (paper: n - n_pilot)"),
    num("method.lower", 0.0, 1.0, fix="Pilot-Commit keeps lower <= p <= 1 - upper (paper: 0.125)"),
    num("method.upper", 0.0, 1.0, fix="Pilot-Commit keeps lower <= p <= 1 - upper (paper: 0.25)"),
    int_ge("method.staleness", 0, "steps a buffered prompt may wait (paper: 4)"),
    one_of("method.buffer_sampling", "max_variance", "random"),
    Rule("method.extra", lambda v, c: isinstance(v, DictConfig), "a mapping of knob: value",
         "e.g. +method.extra.n_probe=32; each allocator lists its knobs"),
    int_ge("train.batch_size", 1, "prompts per update (paper: 128)"),
    Rule("train.mini_batch_size",
         lambda v, c: is_int(v) and 1 <= v and int(c.train.batch_size) % v == 0,
         lambda c: f"an integer >= 1 that divides train.batch_size={c.train.batch_size}",
         "pick a mini-batch that divides the batch (paper: 128 / 32)"),
    int_ge("train.steps", 1),
    num("train.lr", 0.0, lo_open=True, fix="e.g. train.lr=2e-4 (embedded) or 1e-6 (paper)"),
    int_ge("train.warmup_steps", 0, "linear warm-up steps (0 = none)"),
    num("train.weight_decay", 0.0),
    num("train.grad_clip", 0.0, lo_open=True, fix="the gradient-norm clip (paper: 1.0)"),
    num("train.clip_ratio_low", 0.0, 1.0, hi_open=True, fix="the PPO ratio floor is 1 - clip_ratio_low (paper: 0.2)"),
    num("train.clip_ratio_high", 0.0, fix="clip-higher (paper: 0.28)"),
    num("train.clip_ratio_c", 1.0, lo_open=True, fix="dual-clip bound, > 1 (verl's assertion; paper: 10)"),
    num("train.entropy_coeff"),
    one_of("train.loss_agg_mode", "token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
           "seq-mean-token-sum-norm", fix="verl's aggregation modes (paper: token-mean)"),
    num("train.temperature", 0.0, lo_open=True),
    num("train.top_p", 0.0, 1.0, lo_open=True),
    int_ge("train.eval_every", 1, "steps between evaluations"),
    num("train.val_temperature", 0.0, lo_open=True),
    num("train.val_top_p", 0.0, 1.0, lo_open=True),
    int_ge("train.checkpoint_every", 1, "steps between checkpoints"),
    int_ge("train.threads", 0, "torch threads per run (0 = torch's default)"),
    boolean("logging.progress"),
    boolean("logging.wandb"),
    text("logging.wandb_project"),
    one_of("logging.wandb_mode", "online", "offline", "disabled"),
    Rule("paths.results", _folder, "a folder (not a file)"),
    Rule("paths.cache", _folder, "a folder (not a file)"),
    text("backend.name"),
    text("backend.entry"),
    text("model.name", "it names the run folder"),
    text("data.name", "it names the run folder"),
]


# -- the embedded backend's model (conf/model/tiny.yaml) and data (conf/data/synthetic.yaml) -----
def _tiers(v, c, allow_zero: bool = True) -> bool:
    from pcbench.backends.embedded.task import TIERS

    weights = OmegaConf.to_container(v) if isinstance(v, DictConfig) else None
    return bool(weights) and all(t in TIERS for t in weights) and all(is_num(w) and w >= 0 for w in weights.values()) \
        and sum(weights.values()) > 0


def _tier_sets(v, c) -> bool:
    from pcbench.backends.embedded.task import TIERS

    sets = OmegaConf.to_container(v) if isinstance(v, DictConfig) else None
    return bool(sets) and all(isinstance(ts, list) and ts and all(t in TIERS for t in ts) for ts in sets.values())


RESERVE_KEYS = ("tiers", "val_size", "ood_size", "ood_sets", "train_size")  # data.warmstart_reserve (task.py)


def _known_tiers():
    from pcbench.backends.embedded.task import TIERS

    return TIERS


def _tier_names() -> str:
    from pcbench.backends.embedded.task import TIERS

    return ", ".join(TIERS)


def _capacity(weights) -> tuple[int, list[str]]:
    """Distinct problems the tiers with weight > 0 can give (an upper bound: the sets share
    them), and those tiers. Sizes above it would make the task's sampler retry ~50 x size times."""
    from pcbench.backends.embedded.task import TIERS

    used = [t for t, w in weights.items() if w > 0]
    return sum((TIERS[t][1][1] - TIERS[t][1][0] + 1) * (TIERS[t][2][1] - TIERS[t][2][0] + 1) for t in used), used


def fits_tiers(size_key: str, tiers_key: str) -> Rule:
    def ok(v, c):  # tiers missing: the embedded backend's check names the key
        return sel(c, tiers_key) is None or v <= _capacity(sel(c, tiers_key))[0]

    def need(c):
        cap, used = _capacity(sel(c, tiers_key))
        return f"at most the {cap:,} distinct problems {tiers_key} can give ({', '.join(used)})"
    return Rule(size_key, ok, need, "lower it or add tiers")


def _head_dim(c) -> int:
    return int(c.model.hidden_size) // int(c.model.num_heads)


def _tier_stage_rules(stage: str, steps_why: str, tiers_why: str) -> list:
    """The four keys of a warm-start stage that trains on some SFT tiers alone (model.warmstart.<stage>)."""
    key = f"model.warmstart.{stage}"
    return [
        int_ge(f"{key}.steps", 0, steps_why),
        Rule(f"{key}.tiers",
             lambda v, c: isinstance(v, ListConfig) and len(v) > 0 and all(t in c.data.sft_tiers for t in v),
             lambda c: f"a non-empty list of warm-start tiers (data.sft_tiers: {', '.join(c.data.sft_tiers)})",
             tiers_why),
        num(f"{key}.lr", 0.0, lo_open=True),
        Rule(f"{key}.batch_size", lambda v, c: is_int(v) and 1 <= v <= int(c.data.sft_size),
             lambda c: f"an integer in [1, data.sft_size={c.data.sft_size}]", "each batch draws without replacement"),
    ]


EMBEDDED_RULES = [
    one_of("backend.device", "cpu", fix="the embedded backend runs on CPU; use backend=verl for GPUs"),
    int_ge("data.seed", 0),
    Rule("data.train_size", lambda v, c: is_int(v) and v >= _pool(c),
         lambda c: f"an integer >= one candidate pool ({_pool(c)} = max(train.batch_size, method.gen_batch_size))",
         "raise data.train_size or lower train.batch_size"),
    int_ge("data.val_size", 1, "prompts per validation set (val/acc of an empty set is nan)"),
    int_ge("data.sft_size", 1, "warm-start demonstrations"),
    int_ge("data.ood_size", 0, "prompts per out-of-distribution set (0 = none)"),
    int_ge("data.val_samples", 1, "samples per validation problem"),
    one_of("data.val_mode", "sampled", "exact", fix="exact: the gold response's probability, one forward pass"),
    int_ge("data.ood_samples", 1, "samples per out-of-distribution problem"),
    int_ge("data.max_response_tokens", 1, "tokens a rollout may generate (default 10)"),
    Rule("data.reverse", lambda v, c: v is True or v is False or v == "both", "true, false or both",
         "true writes the answer least-significant digit first, both reverses the operands too"),
    Rule("data.tiers", _tiers, lambda c: f"a non-empty mapping tier: weight >= 0 (sum > 0) over {_tier_names()}"),
    Rule("data.sft_tiers", _tiers, lambda c: f"a non-empty mapping tier: weight >= 0 (sum > 0) over {_tier_names()}"),
    Rule("data.ood_sets", lambda v, c: v is None or len(v) == 0 or _tier_sets(v, c),
         lambda c: f"a mapping set: [tiers] over {_tier_names()}"),
    Rule("data.never_share", lambda v, c: v is None or (is_num(v) and 0.0 <= v < 1.0),
         "null (the tiers as written) or a share in [0, 1)",
         "the share of the RL pool (and validation mix) drawn from data.never_tier"),
    Rule("data.never_tier", lambda v, c: sel(c, "data.never_share") is None or v in _known_tiers(),
         lambda c: f"a tier ({_tier_names()}) when data.never_share is set",
         "the tier no method solves in the horizon, e.g. add44 (ladder) or add55 (continuum)"),
    Rule("data.warmstart_reserve", lambda v, c: isinstance(v, DictConfig) and set(v) == set(RESERVE_KEYS)
         and _tiers(v.tiers, c) and all(is_int(v[k]) and v[k] >= 0 for k in ("val_size", "ood_size", "train_size"))
         and (not v.ood_sets or _tier_sets(v.ood_sets, c)),
         lambda c: f"a mapping of {', '.join(RESERVE_KEYS)} (sizes >= 0, tiers over {_tier_names()})",
         "keep conf/data/synthetic.yaml's: editing it changes the warm start"),
    fits_tiers("data.train_size", "data.tiers"),
    fits_tiers("data.sft_size", "data.sft_tiers"),
    int_ge("model.hidden_size", 1),
    int_ge("model.intermediate_size", 1),
    int_ge("model.num_layers", 1),
    Rule("model.num_heads", lambda v, c: is_int(v) and v >= 1 and int(c.model.hidden_size) % v == 0,
         lambda c: f"an integer >= 1 that divides model.hidden_size={c.model.hidden_size}", "e.g. model.num_heads=4"),
    Rule("model.num_heads", lambda v, c: _head_dim(c) % 2 == 0,
         lambda c: f"such that head_dim = hidden_size / num_heads is even (it is {_head_dim(c)}): the rotary "
                   f"embedding rotates pairs", "change model.num_heads or model.hidden_size"),
    Rule("model.num_kv_heads", lambda v, c: is_int(v) and v >= 1 and int(c.model.num_heads) % v == 0,
         lambda c: f"an integer >= 1 that divides model.num_heads={c.model.num_heads}", "grouped-query attention"),
    int_ge("model.max_position", 1),
    int_ge("model.init_seed", 0),
    int_ge("model.warmstart.steps", 0, "SFT steps before RL (0 = none)"),
    Rule("model.warmstart.batch_size", lambda v, c: is_int(v) and 1 <= v <= int(c.data.sft_size),
         lambda c: f"an integer in [1, data.sft_size={c.data.sft_size}]", "each SFT batch draws without replacement"),
    num("model.warmstart.lr", 0.0, lo_open=True),
    int_ge("model.warmstart.seed", 0),
    Rule("model.warmstart.stop_tier", lambda v, c: v is None or v in _known_tiers(),
         lambda c: f"null or a tier ({_tier_names()})",
         "the warm start stops once its probe prompts of that tier pass at model.warmstart.stop_pass_rate"),
    num("model.warmstart.stop_pass_rate", 0.0, 1.0, lo_open=True),
    int_ge("model.warmstart.check_every", 1, "SFT steps between two competence probes"),
    one_of("model.warmstart.stop_measure", "exact", "sampled"),
    int_ge("model.warmstart.probe_prompts", 1, "prompts of model.warmstart.stop_tier the competence probe reads"),
    *_tier_stage_rules("prelude", "SFT steps before the mixed SFT on the tiers to be solved (0 = none)",
                       "the prelude trains on their demonstrations only"),
    *_tier_stage_rules("consolidate", "SFT steps after the stop on the tiers to be solved (0 = none)",
                       "consolidation trains on their demonstrations only"),
    int_ge("model.warmstart.top_up.steps", 0, "mixed SFT steps after consolidation, at most, back to the stop's level (0 = none)"),
    num("model.warmstart.top_up.lr", 0.0, lo_open=True),
]


# -- the verl backend's model (conf/model/qwen*.yaml), data (conf/data/*.yaml) and backend keys ---
def _module_function(v, c) -> bool:  # a `make:` builder: null, or module:function
    return v is None or (isinstance(v, str) and ":" in v)


def _overrides(v) -> bool:
    return isinstance(v, ListConfig) and all(isinstance(o, str) and "=" in o for o in v)


def vllm_shape_problem(cfg) -> str | None:
    """What vLLM / the model code would refuse in a local model folder's config.json, or None.

    Hub ids are not fetched here (no network at composition); their shapes are the vendor's.
    vLLM's CPU attention refuses head_dim < 32 (its GPU kernels start at 32 too).
    """
    import json
    from pathlib import Path

    path = Path(str(cfg.model.path)).expanduser() / "config.json"
    if not path.is_file():
        return None
    hf = {**json.loads(path.read_text()), **(OmegaConf.to_container(cfg.model.get("override_config") or {}) or {})}
    hidden, heads = int(hf.get("hidden_size", 0)), int(hf.get("num_attention_heads", 0))
    kv = int(hf.get("num_key_value_heads") or heads)
    if heads < 1 or hidden % heads:
        return f"num_attention_heads={heads} that divides hidden_size={hidden}"
    if kv < 1 or heads % kv:
        return f"num_key_value_heads={kv} that divides num_attention_heads={heads}"
    head_dim = int(hf.get("head_dim") or hidden // heads)
    return None if head_dim >= 32 else f"a model with head_dim >= 32 for vLLM's attention (its config.json gives {head_dim})"


VERL_RULES = [
    text("model.path", "a Hugging Face id or a local model folder"),
    Rule("model.path", lambda v, c: vllm_shape_problem(c) is None, lambda c: vllm_shape_problem(c) or "",
         "fix the model's config.json (or model.override_config) or pick another model"),
    num("model.params_b", 0.0, lo_open=True, fix="parameters in billions, for the memory check"),
    num("model.gpu_memory_gb", 0.0, lo_open=True),
    int_ge("model.nnodes", 1),
    int_ge("model.n_gpus_per_node", 1),
    int_ge("model.tensor_parallel", 1),
    int_ge("model.sequence_parallel", 1, "Ulysses sequence parallel size (1 = off)"),
    boolean("model.offload"),
    int_ge("model.max_prompt_length", 1),
    int_ge("model.max_response_length", 1),
    boolean("model.overlong_enable"),
    Rule("model.overlong_buffer", lambda v, c: is_int(v) and 0 <= v < int(c.model.max_response_length),
         lambda c: f"an integer in [0, model.max_response_length={c.model.max_response_length})"),
    num("model.overlong_penalty", 0.0),
    num("model.gpu_memory_utilization", 0.0, 1.0, lo_open=True, hi_open=True, fix="vLLM's share of each GPU"),
    int_ge("model.max_num_batched_tokens", 1),
    Rule("model.max_token_len_per_gpu",
         lambda v, c: is_int(v) and v >= int(c.model.max_prompt_length) + int(c.model.max_response_length),
         lambda c: f"an integer >= max_prompt_length + max_response_length = "
                   f"{int(c.model.max_prompt_length) + int(c.model.max_response_length)}",
         "one sequence must fit the dynamic-batch token budget"),
    Rule("model.override_config", lambda v, c: isinstance(v, DictConfig), "a mapping of Hugging Face config keys",
         "e.g. model.override_config.max_position_embeddings=10240"),
    text("data.root", "the folder holding the parquet files"),
    Rule("data.train_files", lambda v, c: isinstance(v, str) and v.strip() != "", "a parquet file"),
    Rule("data.val_files", lambda v, c: (isinstance(v, str) and v.strip() != "") or (isinstance(v, ListConfig) and len(v) > 0
                                                                                    and all(isinstance(f, str) and f for f in v)),
         "a non-empty list of parquet files", "validation needs at least one set"),
    num("backend.poll_interval_s", 0.0, lo_open=True),
    int_ge("backend.max_retries", 0),
    Rule("backend.ray_num_cpus", lambda v, c: v is None or (is_int(v) and v >= 1), "null (all CPUs) or an integer >= 1"),
    text("backend.reward_path"),
    one_of("backend.platform", "auto", "cpu", "gpu", fix="auto picks cpu when torch sees no CUDA device"),
    num("backend.watchdog_s", 0.0, fix="seconds without a heartbeat before the entry stops verl (0: never)"),
    Rule("backend.ray_port", lambda v, c: is_int(v) and 1024 <= v <= 65535, "an integer port in [1024, 65535]",
         "the Ray head's port on the first node of a multi-node job (default 6379)"),
    num("backend.ray_join_timeout_s", 0.0, lo_open=True,
        fix="seconds a multi-node job waits for the head / every worker to join Ray before one clear error"),
    Rule("model.make", _module_function, "null or module:function",
         "the function that builds model.path when it is missing"),
    Rule("model.embedded", lambda v, c: _overrides(v), "a list of key=value overrides of the embedded config",
         "the warm start model=embedded-verl exports, e.g. [model.warmstart.stop_pass_rate=0.3]"),
    Rule("data.embedded", lambda v, c: _overrides(v), "a list of key=value overrides of the embedded config",
         "the task data=embedded-verl writes, e.g. [data.train_size=500]"),
    Rule("data.make", _module_function, "null or module:function",
         "the function that builds the parquet files in data.root"),
    # your own data set (conf/data/own.yaml, pcbench/data/own.py); the file itself is read by prepare
    text("data.source", "your .parquet/.jsonl/.json/.csv file, e.g. data.source=my_math.jsonl"),
    text("data.question", "the column holding the question, e.g. data.question=problem"),
    text("data.answer", "the column holding the final answer, e.g. data.answer=answer"),
    Rule("data.transform", _module_function, "null or module:function",
         "a function mapping one raw row (a dict) to (question, answer)"),
    Rule("data.reward", lambda v, c: reward_problem(v) is None,  # imports the reward's module, nothing more
         lambda c: f"a reward pcbench can load ({reward_problem(sel(c, 'data.reward'))})"),
    Rule("data.val_source", lambda v, c: v is None or (isinstance(v, str) and v.strip() != ""),
         "null or a file with the same columns", "null holds out data.val_size rows of data.source"),
    int_ge("data.val_size", 1, "rows of data.source held out for validation when data.val_source is null"),
]

RULES_BY_BACKEND = {"embedded": EMBEDDED_RULES, "verl": VERL_RULES}


def rules_for(cfg: DictConfig) -> list[Rule]:
    return ROOT_RULES + RULES_BY_BACKEND.get(str(sel(cfg, "backend.name", "")), [])


def check_rules(cfg: DictConfig) -> None:
    """Raise ConfigError (one line) for the first setting outside its rule."""
    for rule in rules_for(cfg):
        rule.check(cfg)
