"""In-process Hugging Face transformers backend (CPU or GPU, no server).

No grammar-constrained decoding here: schema requests get the schema appended to the last
user message as an instruction, and the reply goes through ``parse_reply`` (repair +
validation) and the shared retries like every other backend. torch and transformers are
imported when the backend is built, so importing atomicrag stays cheap.

``model`` is an HF id, a local folder, a ``.gguf`` file (needs the ``gguf`` package;
transformers dequantises it), or the offline alias ``smollm2``.
"""
from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.retry import RawReply, SyncBackend

SCHEMA_HINT = "\n\nReply with JSON only (no prose, no code fence) that matches this JSON schema:\n{schema}"


class TransformersBackend(SyncBackend):
    continues_replies = True  # the chat template continues a final assistant message

    def __init__(
        self,
        model: str,
        *,
        device: str = "auto",
        max_retries: int = 3,
        schema_hint: bool = True,
        cache_dir: str | Path = "cache",
        model_name: str | None = None,
    ) -> None:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = model_name or model
        self.max_retries = max_retries
        self.schema_hint = schema_hint
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        source, kwargs = _source(model, cache_dir)
        dtype = torch.float32 if device == "cpu" else (
            torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
        self.tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        # transformers renamed torch_dtype to dtype (4.56); pass the name this version knows.
        dtype_kw = "dtype" if _version_at_least(transformers.__version__, (4, 56)) else "torch_dtype"
        self.lm = AutoModelForCausalLM.from_pretrained(source, **{dtype_kw: dtype}, **kwargs)
        self.lm.to(device).train(False)  # inference mode (dropout off)
        self._torch = torch
        self._lock = threading.Lock()  # one generate() at a time: the model is not re-entrant

    def _messages(self, request: ChatRequest) -> list[dict[str, str]]:
        msgs = [dict(m) for m in request.messages]
        if request.schema is not None and self.schema_hint:
            hint = SCHEMA_HINT.format(schema=json.dumps(request.schema))
            users = [i for i, m in enumerate(msgs) if m.get("role") == "user"]
            if users:
                msgs[users[-1]]["content"] = str(msgs[users[-1]].get("content", "")) + hint
            else:
                msgs.append({"role": "user", "content": hint.strip()})
        return msgs

    def _generate(self, request: ChatRequest, attempt: int) -> RawReply:
        torch = self._torch
        tok = self.tokenizer
        prompt = tok.apply_chat_template(self._messages(request), tokenize=False,
                                         add_generation_prompt=not request.continue_reply,
                                         continue_final_message=request.continue_reply)
        enc = tok(prompt, return_tensors="pt", add_special_tokens=False)
        # Only ids and mask: some tokenizers add token_type_ids, which causal LMs reject.
        inputs = {k: enc[k].to(self.device) for k in ("input_ids", "attention_mask") if k in enc}
        n_prompt = int(inputs["input_ids"].shape[1])
        sample = request.temperature > 0
        # max_tokens None = no cap (what the released code sends): the rest of the model's window
        limit = request.max_tokens
        if limit is None:
            window = int(getattr(self.lm.config, "max_position_embeddings", 0) or tok.model_max_length)
            limit = max(1, window - n_prompt)
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": limit,
            "do_sample": sample,
            "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        }
        if request.frequency_penalty:  # transformers' multiplicative form of the same guard
            gen_kwargs["repetition_penalty"] = 1.0 + request.frequency_penalty
        if sample:
            gen_kwargs["temperature"] = request.temperature
        else:  # silence "temperature is set but do_sample=False" from generation configs
            gen_kwargs.update(temperature=None, top_p=None, top_k=None)
        with self._lock, torch.inference_mode():
            if sample and request.seed is not None:
                torch.manual_seed(request.seed)
            out = self.lm.generate(**inputs, **gen_kwargs)
        new = out[0, n_prompt:]
        text = tok.decode(new, skip_special_tokens=True)
        return RawReply(
            text=text,
            prompt_tokens=n_prompt,
            completion_tokens=int(new.shape[0]),
            finish_reason="length" if int(new.shape[0]) >= limit else "stop",
            model=self.model,
        )

    def close(self) -> None:
        # Drop the weights so GPU memory is returned before the next backend is built.
        self.lm = None
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()


def _version_at_least(version: str, minimum: tuple[int, int]) -> bool:
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]]
    return tuple(parts) >= minimum


def _source(model: str, cache_dir: str | Path) -> tuple[str, dict[str, Any]]:
    """(from_pretrained source, extra kwargs) for an id, folder, .gguf file, or offline alias."""
    from atomicrag.core.offline_models import ALIASES, resolve_model_path

    path: Path | None = None
    if model.lower() in ALIASES or model.lower().endswith(".gguf"):
        path = resolve_model_path(model, cache_dir)
    if path is not None and path.suffix == ".gguf":
        try:
            import gguf  # noqa: F401  transformers needs it to read GGUF files
        except ImportError as exc:
            raise ImportError("loading a .gguf with transformers needs `pip install gguf`") from exc
        return str(path.parent), {"gguf_file": path.name}
    return model, {}
