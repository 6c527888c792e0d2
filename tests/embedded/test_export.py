"""An embedded checkpoint as a Hugging Face folder, and the embedded task as verl parquet
(model=embedded-verl data=embedded-verl): what verl loads must be what the embedded backend trains."""

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pcbench.backends.embedded.export import (encode_like_embedded, export_checkpoint, hf_tokenizer, read_export_info,
                                              round_trip_mismatches)
from pcbench import detmm
from pcbench.backends.embedded.model import build_model
from pcbench.backends.embedded.task import SyntheticTask
from pcbench.backends.embedded.tokenizer import CharTokenizer
from pcbench.backends.verl.entry import make_local_assets
from pcbench.backends.verl.from_embedded import compose_embedded, list_override, make_data, task_texts
from pcbench.config import ConfigError, check_config, register_configs
from pcbench.data.synthetic import TRAIN, VAL
from pcbench.reward import verl_compute_score

REPO = Path(__file__).resolve().parents[2]
SMALL_MODEL = OmegaConf.create(dict(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=2, num_kv_heads=1,
                                    max_position=64, init_seed=0))



def test_exported_tokenizer_encodes_and_decodes_every_prompt_and_answer_of_the_task_as_the_embedded_one(tmp_path):
    """Loaded back from the folder with AutoTokenizer (what verl and vLLM do), over the default task
    (RL pool, validation, SFT demonstrations, probe and OOD prompts, each with its boxed answer),
    including the chat template verl tokenizes prompts through: [bos] + the prompt's ids."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    tok = CharTokenizer()
    texts = task_texts(SyntheticTask.for_run(compose_embedded([])))
    assert len(texts) > 20_000
    path = export_checkpoint(build_model(SMALL_MODEL, tok, seed=0), tok, tmp_path / "m", {}, check_texts=texts[:50])
    hf = AutoTokenizer.from_pretrained(path)
    assert isinstance(hf, PreTrainedTokenizerFast)
    assert round_trip_mismatches(hf, tok, texts) == []
    assert hf.decode(tok.encode("47+35=\\boxed{28}") + [tok.eos_id, tok.pad_id], skip_special_tokens=True) == \
        "47+35=\\boxed{28}"
    # what verl's agent loop asks of a qwen2 tokenizer; the newline is the one token the model has no row for
    assert len(hf.encode("\n", add_special_tokens=False)) == 1 and hf.convert_tokens_to_ids("<|im_end|>") == tok.eos_id
    assert len(hf) == tok.vocab_size + 1 and hf.eos_token_id == tok.eos_id and hf.pad_token_id == tok.pad_id
    for encode in (tok.encode, lambda t: encode_like_embedded(hf, t)):  # both refuse what they cannot encode
        for text in ("x+1=", "1\n2"):
            with pytest.raises(ValueError, match="tokenizer's vocabulary"):
                encode(text)


def test_exported_folder_loads_in_transformers_with_the_same_logits(tmp_path):
    from transformers import AutoModelForCausalLM

    tok = CharTokenizer()
    model = build_model(SMALL_MODEL, tok, seed=3).eval()
    path = export_checkpoint(model, tok, tmp_path / "m", {"warmstart": "k"})
    assert read_export_info(path) == {"warmstart": "k"}
    assert (path / "model.safetensors").exists() and not list(tmp_path.glob("m.tmp*"))
    hf_cfg = json.loads((path / "config.json").read_text())
    assert hf_cfg["model_type"] == "qwen2" and hf_cfg["vocab_size"] == tok.vocab_size
    assert hf_cfg["hidden_size"] // hf_cfg["num_attention_heads"] == 32  # vLLM's CPU attention needs >= 32
    loaded = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    x = torch.tensor([[tok.bos_id] + tok.encode("123+456=\\boxed{975}")])
    with torch.no_grad():
        # torch's own products (what transformers, verl and vLLM compute with): equal to rounding
        torch.testing.assert_close(loaded(input_ids=x).logits, model(input_ids=x).logits, rtol=1e-5, atol=1e-5)
        # the embedded model's products: the same weights give the same floats
        assert torch.equal(detmm.install_unless_native(loaded)(input_ids=x).logits, model(input_ids=x).logits)


def test_a_tokenizer_that_disagrees_is_never_exported(tmp_path, monkeypatch):
    import pcbench.backends.embedded.export as export

    tok = CharTokenizer()
    broken = export.hf_tokenizer(tok)
    broken.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # no <bos>
    monkeypatch.setattr(export, "hf_tokenizer", lambda _: broken)
    with pytest.raises(ValueError, match="differs from the embedded one on 1 texts"):
        export.export_checkpoint(build_model(SMALL_MODEL, tok, 0), tok, tmp_path / "m", {}, check_texts=["1+2="])
    assert list(tmp_path.iterdir()) == []


def _verl_cfg(tmp_path, *overrides):
    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["backend=verl", "model=embedded-verl", "data=embedded-verl",
                                                       f"paths.cache={tmp_path}", *overrides])
    check_config(cfg)
    return cfg


def test_parquet_holds_the_embedded_task_in_pool_order_with_its_reward(tmp_path):
    """Same problems, same order (row i = prompt id i, the PromptStream's ids on both backends),
    validation problems x data.val_samples, the gold answer scores 1 through verl's reward entry."""
    small = ["data.train_size=300", "data.val_size=40", "data.val_samples=3"]
    cfg = _verl_cfg(tmp_path, list_override("data.embedded", small))
    make_data(cfg.data.root, cfg)
    task = SyntheticTask.for_run(compose_embedded(small))
    train = pd.read_parquet(cfg.data.train_files)
    val = pd.read_parquet(cfg.data.val_files[0])
    assert [m[0]["content"] for m in train["prompt"]] == [p.prompt for p in task.train]
    assert [e["index"] for e in train["extra_info"]] == list(range(300))
    assert [r["ground_truth"] for r in train["reward_model"]] == [p.answer for p in task.train]
    assert len(val) == 3 * 40 and [m[0]["content"] for m in val["prompt"][:40]] == [p.prompt for p in task.val]
    assert set(val["data_source"]) == {VAL} and set(train["data_source"]) == {TRAIN}
    p = task.val[0]
    assert verl_compute_score(VAL, p.solution, p.answer)["acc"] is True
    assert verl_compute_score(VAL, "\\boxed{" + p.answer + "1}", p.answer)["acc"] is False
    make_data(cfg.data.root, cfg)  # up to date: nothing rewritten
    other = _verl_cfg(tmp_path, list_override("data.embedded", ["data.train_size=301"]))
    with pytest.raises(ConfigError, match="holds task .* not the embedded task of this config"):
        make_data(other.data.root, other)


def test_a_model_folder_of_another_warm_start_is_refused_before_any_training(tmp_path):
    cfg = _verl_cfg(tmp_path)
    export_checkpoint(build_model(SMALL_MODEL, CharTokenizer(), 0), CharTokenizer(), cfg.model.path,
                      {"warmstart": "000000000000", "overrides": ["model.hidden_size=64"]})
    with pytest.raises(ConfigError, match="holds warmstart 000000000000 from overrides .* delete it to rebuild"):
        make_local_assets(cfg)
    assert not list(Path(tmp_path).glob("warmstart-*.pt"))


def test_bad_embedded_overrides_fail_in_one_line(tmp_path):
    with pytest.raises(ConfigError) as e:
        compose_embedded(["model.hiden_size=64"])
    assert "\n" not in str(e.value) and "model.hiden_size" in str(e.value)
    with pytest.raises(ConfigError, match="drop the backend override"):
        compose_embedded(["backend=verl"])


def test_a_trained_runs_checkpoint_exports_with_its_own_weights(tmp_path):
    """`python -m pcbench.backends.verl.from_embedded --run RUN --out DIR`: the weights of the run's
    last checkpoint (not its warm start) in a folder transformers loads with the same logits; a
    folder without a checkpoint, or an --out that exists, is one line and exit 2, nothing written."""
    import os
    import subprocess
    import sys

    from transformers import AutoModelForCausalLM

    from pcbench.backends.embedded.warmstart import load_or_train
    from tests.embedded.test_end_to_end import TINY

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "pcbench.backends.verl.from_embedded", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=300)

    train = subprocess.run([sys.executable, "-m", "pcbench.run", *TINY, "method=grpo", "train.steps=2",
                            f"paths.results={tmp_path}/results", f"paths.cache={tmp_path}/cache"],
                           capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert train.returncode == 0, train.stderr[-3000:]
    [run] = list((tmp_path / "results" / "e2e").iterdir())
    done = cli("--run", str(run), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    info = read_export_info(tmp_path / "out" / "model")
    assert info["step"] == 2 and info["model"]["hidden_size"] == 64
    cfg = OmegaConf.load(run / "config.yaml")
    tok = CharTokenizer()
    trained = build_model(cfg.model, tok, seed=0)
    trained.load_state_dict(torch.load(run / "checkpoint" / "state.pt", weights_only=False)["model"])
    warm, _ = load_or_train(cfg, SyntheticTask.for_run(cfg), tok, log=lambda *_: None)
    loaded = detmm.install_unless_native(
        AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "model", attn_implementation="eager").eval())
    x = torch.tensor([[tok.bos_id] + tok.encode("12+34=\\boxed{46}")])
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=x).logits, trained.eval()(input_ids=x).logits)
        assert not torch.equal(loaded(input_ids=x).logits, warm.eval()(input_ids=x).logits)  # RL moved it
    for args, says in [(("--run", str(tmp_path), "--out", str(tmp_path / "o2")), "holds no embedded checkpoint"),
                       (("--run", str(run), "--out", str(tmp_path / "out")), "exists; give another --out")]:
        bad = cli(*args)
        assert bad.returncode == 2 and says in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert not (tmp_path / "o2").exists()
