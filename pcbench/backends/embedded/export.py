"""An embedded checkpoint as a Hugging Face model folder, for vLLM and verl's FSDP actor.

The embedded policy already is a transformers `Qwen2ForCausalLM`; what a HF folder adds is a
tokenizer other programs load. `hf_tokenizer` builds one with the embedded `CharTokenizer`'s ids
(one token per character, `\\boxed{` one token, the three specials), so a prompt tokenizes to the
same ids on both backends. Its chat template writes `<bos>` and the user turn's text and nothing
else: the embedded prompt is `[bos] + encode("47+35=")`, and verl tokenizes every prompt through
the chat template. `export_checkpoint` checks the tokenizer *as loaded back from the folder* (what
verl and vLLM get) on the texts it is given. The weights stay fp32 (the embedded backend's dtype).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from pcbench.backends.embedded.tokenizer import BOXED, SPECIALS, CharTokenizer

# bos, then every message's text: the embedded prompt layout (no role markers, no generation prefix)
CHAT_TEMPLATE = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
# verl's agent loop picks its chat-boundary handling by config.json's model_type; for "qwen2" it
# requires a token named <|im_end|> and a newline that encodes to one token. So the end-of-sequence
# token keeps its id (2) under Qwen's name, and the tokenizer has one token more than the model has
# rows: the newline (byte-level "\u010a"), which no text of the task contains and the model, whose
# logits cover the embedded vocabulary only, never samples.
HF_EOS = "<|im_end|>"
NEWLINE = "\u010a"
EXPORT_INFO = "pcbench_export.json"  # what the folder was exported from (warm-start key, settings)


def hf_tokenizer(tok: CharTokenizer):
    """-> a PreTrainedTokenizerFast (transformers' Qwen2Tokenizer: what AutoTokenizer builds for a
    qwen2 folder whatever tokenizer_config.json names, so verl and vLLM load exactly this) that
    encodes and decodes as `tok` does. Byte-level BPE without merges: each character is one token
    with the embedded id (a space is byte-level "\u0120"), `\\boxed{` an added token matched first."""
    from tokenizers import AddedToken
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    pad, bos, _ = SPECIALS
    names = {BOXED: BOXED, " ": "\u0120", SPECIALS[2]: HF_EOS}
    vocab = {names.get(t, t): i for t, i in tok.index.items()}
    vocab[NEWLINE] = len(vocab)  # beyond the model's rows: never in the task, never sampled (see HF_EOS)
    hf = Qwen2Tokenizer(vocab=vocab, merges=[], unk_token=pad, bos_token=bos, eos_token=HF_EOS, pad_token=pad,
                        clean_up_tokenization_spaces=False, padding_side="left")
    hf.add_tokens([AddedToken(BOXED, special=False, normalized=False)])
    hf.chat_template = CHAT_TEMPLATE
    return hf


def encode_like_embedded(hf_tok, text: str) -> list[int]:
    """The HF tokenizer's ids for `text`; ValueError where the embedded one would raise (a byte-level
    BPE without an unknown token drops a character it has no token for)."""
    ids = hf_tok(text, add_special_tokens=False)["input_ids"]
    if len(ids) != len(text) - text.count(BOXED) * (len(BOXED) - 1) or max(ids, default=0) >= len(hf_tok) - 1:
        raise ValueError(f"{text!r} has a character outside the embedded tokenizer's vocabulary")
    return ids


def round_trip_mismatches(hf_tok, tok: CharTokenizer, texts: Iterable[str]) -> list[str]:
    """Texts on which the two tokenizers disagree: ids of the text, its decoding, and (for a
    prompt) the chat-template rendering verl tokenizes. Empty when they agree on all."""
    bad = []
    for text in texts:
        ids = tok.encode(text)
        if (encode_like_embedded(hf_tok, text) != ids
                or hf_tok.decode(ids + [tok.eos_id], skip_special_tokens=True) != tok.decode(ids + [tok.eos_id])
                or hf_tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                              tokenize=True, return_dict=False) != [tok.bos_id] + ids):
            bad.append(text)
    return bad


def export_checkpoint(model, tok: CharTokenizer, path: str | Path, info: dict, check_texts: Iterable[str] = ()) -> Path:
    """Write `model` (an embedded Qwen2ForCausalLM) + tokenizer as a HF folder at `path`, atomically
    (complete or absent: a crash leaves no half folder under the real name). `info` goes into
    pcbench_export.json (where the weights came from). ValueError, and nothing at `path`, when the
    tokenizer loaded back with AutoTokenizer differs from `tok` on any of `check_texts`."""
    import shutil

    import torch
    from transformers import AutoTokenizer

    path = Path(path)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model = model.to(torch.float32)
    model.generation_config.do_sample = True  # vLLM reads defaults from here; verl passes its own
    model.save_pretrained(tmp, safe_serialization=True)
    hf_tokenizer(tok).save_pretrained(tmp)
    bad = round_trip_mismatches(AutoTokenizer.from_pretrained(tmp), tok, check_texts)
    if bad:
        shutil.rmtree(tmp)
        raise ValueError(f"the exported tokenizer differs from the embedded one on {len(bad)} texts, e.g. {bad[:3]}")
    (tmp / EXPORT_INFO).write_text(json.dumps(info, indent=1, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp.replace(path)
    return path


def read_export_info(path: str | Path) -> dict | None:
    f = Path(path) / EXPORT_INFO
    return json.loads(f.read_text()) if f.exists() else None
