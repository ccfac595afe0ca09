"""LLM layer: one batch protocol, several backends, a cache and per-module accounting.

Most code needs only::

    from atomicrag.llm import ChatRequest, build_llm
    llm = build_llm(cfg.llm, cfg.paths, accountant)
    results = llm.chat([ChatRequest(messages=[...], schema={...}, module="sieve")])

Submodules are imported on first use so ``import atomicrag.llm`` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

from atomicrag.llm.protocol import ChatRequest, ChatResult, LLMBackend

_LAZY = {
    "build_llm": "factory",
    "build_backend": "factory",
    "Accountant": "accounting",
    "AccountedLLM": "accounting",
    "CachedLLM": "cache",
    "FakeLLM": "fake",
    "OpenAIClient": "openai_client",
    "TransformersBackend": "transformers_backend",
    "parse_reply": "json_repair",
    "repair_json": "json_repair",
    "ReplyParseError": "json_repair",
    "ServerStartError": "servers",
    "LocalServer": "servers",
    "AttachedServer": "servers",
    "launch_llamacpp": "servers",
    "launch_vllm": "servers",
}

__all__ = [
    "Accountant",
    "AccountedLLM",
    "AttachedServer",
    "CachedLLM",
    "ChatRequest",
    "ChatResult",
    "FakeLLM",
    "LLMBackend",
    "LocalServer",
    "OpenAIClient",
    "ReplyParseError",
    "ServerStartError",
    "TransformersBackend",
    "build_backend",
    "build_llm",
    "launch_llamacpp",
    "launch_vllm",
    "parse_reply",
    "repair_json",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"atomicrag.llm.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'atomicrag.llm' has no attribute {name!r}")
