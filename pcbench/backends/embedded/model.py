"""The tiny policy: a real transformers Qwen2ForCausalLM built from a config (no weights fetched)."""

from __future__ import annotations

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from pcbench import detmm
from pcbench.backends.embedded.tokenizer import CharTokenizer


def build_model(model_cfg, tok: CharTokenizer, seed: int) -> Qwen2ForCausalLM:
    config = Qwen2Config(
        vocab_size=tok.vocab_size,
        hidden_size=int(model_cfg.hidden_size),
        intermediate_size=int(model_cfg.intermediate_size),
        num_hidden_layers=int(model_cfg.num_layers),
        num_attention_heads=int(model_cfg.num_heads),
        num_key_value_heads=int(model_cfg.num_kv_heads),
        max_position_embeddings=int(model_cfg.max_position),
        tie_word_embeddings=True,
        pad_token_id=tok.pad_id, bos_token_id=tok.bos_id, eos_token_id=tok.eos_id,
        attn_implementation="eager",
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    # its matrix products round alike on every AVX2 CPU, not as the CPU vendor's MKL path does
    # (pcbench/detmm.py); PCBENCH_NUMERICS=native keeps torch's
    return detmm.install_unless_native(model)


def num_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
