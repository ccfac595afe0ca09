"""Bring-your-own models: adapters from other protocols to atomicrag's LLM and embedder protocols.

No inheritance is required. ``as_llm(obj)`` accepts

- an atomicrag backend: ``chat(list[ChatRequest]) -> list[ChatResult]`` (used as is);
- the other AtomicRAG library's protocol: ``generate(prompt: str) -> str``;
- a LangChain chat model: ``invoke(messages)`` returning a message with ``.content``.

``as_embedder(obj)`` accepts ``encode(texts, is_query=False)`` (atomicrag, sentence-transformers),
``embed_batch(list[str])`` / ``embed_text(str)`` (the other library) and LangChain's
``embed_documents`` / ``embed_query``. Ready-made wrappers: ``OpenAICompatLLM``,
``OpenAICompatEmbedding``, ``SentenceTransformerEmbedding``, ``LangChainLLM``, ``LangChainEmbedding``.
Submodules load on first use, so importing this package stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "as_llm": "dispatch",
    "as_embedder": "dispatch",
    "GenerateLLM": "byo",
    "EmbedderAdapter": "byo",
    "OpenAICompatLLM": "openai_compat",
    "OpenAICompatEmbedding": "openai_compat",
    "SentenceTransformerEmbedding": "sentence_transformers",
    "LangChainLLM": "langchain",
    "LangChainEmbedding": "langchain",
    "as_langchain_retriever": "langchain",
}

__all__ = [
    "EmbedderAdapter",
    "GenerateLLM",
    "LangChainEmbedding",
    "LangChainLLM",
    "OpenAICompatEmbedding",
    "OpenAICompatLLM",
    "SentenceTransformerEmbedding",
    "as_embedder",
    "as_langchain_retriever",
    "as_llm",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"atomicrag.library.adapters.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'atomicrag.library.adapters' has no attribute {name!r}")
