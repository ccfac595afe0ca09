"""Convert a GGUF chat model into a Hugging Face folder that vLLM's CPU build can serve.

Run as a *script* by the vLLM server's interpreter (it has transformers, torch and gguf; the
project's environment need not):  ``<server_python> gguf_to_hf.py MODEL.gguf OUT_DIR``.
It imports nothing from atomicrag. Why convert: vLLM loads GGUF only through CUDA dequant
kernels, so on CPU it needs plain bf16 safetensors.

transformers dequantises the GGUF into a model that still carries the GGUF quantisation
config; saving that would make vLLM look for GGUF kernels again, so the weights are copied
into a clean model built from the same config without ``quantization_config``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.bfloat16)
    print(f"[convert] loaded {name} in {time.perf_counter() - t0:.0f} s", flush=True)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.dtype = torch.bfloat16
    clean = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = clean.load_state_dict(loaded.state_dict(), strict=False)
    # Tied output embeddings appear as "missing" lm_head.weight; anything else is a real gap.
    real_missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if real_missing or unexpected:
        raise SystemExit(f"weights do not match the config: missing {real_missing[:5]}, "
                         f"unexpected {list(unexpected)[:5]}")
    if getattr(loaded, "generation_config", None) is not None:
        clean.generation_config = loaded.generation_config
    out.mkdir(parents=True, exist_ok=True)
    clean.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    if not (out / "tokenizer_config.json").is_file():
        raise SystemExit(f"tokenizer was not written to {out}")
    print(f"[convert] wrote {out} in {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: gguf_to_hf.py MODEL.gguf OUT_DIR")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
