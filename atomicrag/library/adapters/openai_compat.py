"""OpenAI-compatible endpoints (OpenAI, Ollama, a remote vLLM or llama.cpp server) by URL.

``OpenAICompatLLM`` is atomicrag's own async client (bounded concurrency, retries with backoff,
structured output, JSON repair) with library-friendly defaults; ``OpenAICompatEmbedding`` calls
``/v1/embeddings``. The API key is read from the environment variable named by ``api_key_env``
at request time, so it never sits in a config file or a saved index.
"""
from __future__ import annotations

import os
from typing import Any

import httpx
import torch

from atomicrag.engine.api import OpenAIClient, normalize_base_url


class OpenAICompatLLM(OpenAIClient):
    """``OpenAICompatLLM("https://api.openai.com/v1", "gpt-4o-mini")``.

    ``response_format_style``: ``json_schema`` (OpenAI, vLLM, llama.cpp's llama-server),
    ``json_object`` (llama-cpp-python's server) or ``none`` (the schema only goes in the prompt;
    e.g. Ollama models without grammar support). Set ``strict=False`` on api.openai.com for
    schemas that do not list every property as required.
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 concurrency: int = 8, timeout_s: float = 120.0, max_retries: int = 3,
                 response_format_style: str = "json_schema", **kwargs: Any) -> None:
        super().__init__(base_url, model, api_key_env=api_key_env, concurrency=concurrency, timeout_s=timeout_s,
                         max_retries=max_retries, structured_output=response_format_style != "none",
                         response_format_style=response_format_style, **kwargs)


class OpenAICompatEmbedding:
    """``/v1/embeddings`` of an OpenAI-compatible server as an atomicrag embedder.

    ``dim`` is measured with one probe request when not given. ``transport`` is for tests
    (an ``httpx.MockTransport``).
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 dim: int | None = None, batch_size: int = 256, timeout_s: float = 60.0,
                 query_prefix: str = "", transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = normalize_base_url(base_url)
        self.model = model
        self.api_key_env = api_key_env
        self.batch_size = max(1, batch_size)
        self.query_prefix = query_prefix
        self._client = httpx.Client(timeout=timeout_s, transport=transport)
        self.name = f"openai-compat:{model}" + (f"|qp={len(query_prefix)}" if query_prefix else "")
        self.dim = int(dim or self._post(["dimension probe"]).shape[1])

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatEmbedding(base_url={self.base_url!r}, model={self.model!r})"

    def _post(self, texts: list[str]) -> torch.Tensor:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        resp = self._client.post(f"{self.base_url}/embeddings", headers=headers,
                                 json={"model": self.model, "input": texts})
        if resp.status_code != 200:
            raise RuntimeError(f"embeddings request to {self.base_url} failed: HTTP {resp.status_code}: "
                               f"{resp.text[:300]}")
        data = sorted(resp.json()["data"], key=lambda d: d.get("index", 0))
        if len(data) != len(texts):
            raise RuntimeError(f"embeddings endpoint returned {len(data)} vectors for {len(texts)} texts")
        return torch.tensor([d["embedding"] for d in data], dtype=torch.float32)

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        if not texts:
            return torch.empty(0, self.dim)
        if is_query and self.query_prefix:
            texts = [self.query_prefix + t for t in texts]
        parts = [self._post(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return torch.nn.functional.normalize(torch.cat(parts), dim=1)

    def close(self) -> None:
        self._client.close()
