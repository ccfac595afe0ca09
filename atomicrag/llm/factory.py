"""Build the configured LLM backend: ``build_llm(cfg.llm, cfg.paths, accountant)``.

Layers, outermost first: ``AccountedLLM`` (when an accountant is given; sees cache hits as
cached calls) → ``CachedLLM`` (when ``cfg.cache``) → the backend. ``close()`` on the returned
object closes every layer and stops a server the factory launched.

=============  ==================================================================
name           backend
=============  ==================================================================
fake           ``FakeLLM`` (tests and smoke runs only)
openai         ``OpenAIClient`` at ``base_url`` (OpenAI, Ollama, remote vLLM, ...)
llamacpp       launches ``llama_cpp.server`` on ``model_path`` (or attaches to ``base_url``)
vllm           launches vLLM's OpenAI server on ``model`` (or attaches to ``base_url``)
transformers   ``TransformersBackend`` in-process
=============  ==================================================================
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from atomicrag.config import LLMConfig, PathsConfig, warn_if_key_missing
from atomicrag.llm.accounting import Accountant, AccountedLLM
from atomicrag.llm.cache import CachedLLM
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatRequest, LLMBackend
from atomicrag.llm.servers import AttachedServer, LocalServer, launch_llamacpp, launch_vllm


def _client(cfg: LLMConfig, base_url: str, style: str, server: LocalServer | None = None) -> OpenAIClient:
    return OpenAIClient(
        base_url,
        cfg.model,
        api_key_env=cfg.api_key_env,
        concurrency=cfg.concurrency,
        timeout_s=cfg.timeout_s,
        max_retries=cfg.max_retries,
        structured_output=cfg.structured_output,
        response_format_style=style,
        server=server,
    )


def build_backend(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    """The bare backend for ``cfg`` (no cache, no accounting)."""
    log_dir = Path(paths.cache_dir) / "servers"
    if cfg.name == "fake":
        return FakeLLM(cfg.model, max_retries=cfg.max_retries)
    if cfg.name == "openai":
        if not cfg.base_url:
            raise ValueError("llm.name=openai needs llm.base_url (e.g. https://api.openai.com/v1)")
        warn_if_key_missing(cfg)
        return _client(cfg, cfg.base_url, "json_schema")
    if cfg.name == "llamacpp":
        # llama-cpp-python's server only understands {"type": "json_object", "schema": ...};
        # llama.cpp's C++ llama-server accepts it too, so attach and launch use the same style.
        if cfg.base_url:
            AttachedServer(cfg.base_url, startup_timeout_s=cfg.startup_timeout_s).start()
            return _client(cfg, cfg.base_url, "json_object")
        from atomicrag.llm.offline_models import resolve_model_path

        spec = cfg.model_path or cfg.model
        model_file = resolve_model_path(spec, paths.cache_dir)
        server = launch_llamacpp(
            model_file, log_dir=log_dir, host=cfg.host, port=cfg.port, n_ctx=cfg.n_ctx,
            n_threads=cfg.n_threads, model_alias=cfg.model, extra_args=cfg.extra_args,
            startup_timeout_s=cfg.startup_timeout_s,
        )
        return _client(cfg, server.base_url, "json_object", server=server)
    if cfg.name == "vllm":
        if cfg.base_url:
            AttachedServer(cfg.base_url, startup_timeout_s=cfg.startup_timeout_s).start()
            return _client(cfg, cfg.base_url, "json_schema")
        server = launch_vllm(
            cfg.model_path or cfg.model, log_dir=log_dir, served_model_name=cfg.model, host=cfg.host,
            port=cfg.port, tensor_parallel_size=cfg.tensor_parallel_size,
            gpu_memory_utilization=cfg.gpu_memory_utilization, max_model_len=cfg.max_model_len,
            extra_args=cfg.extra_args, startup_timeout_s=cfg.startup_timeout_s,
        )
        return _client(cfg, server.base_url, "json_schema", server=server)
    if cfg.name == "transformers":
        from atomicrag.llm.transformers_backend import TransformersBackend

        return TransformersBackend(cfg.model_path or cfg.model, device=cfg.device, max_retries=cfg.max_retries,
                                   cache_dir=paths.cache_dir, model_name=cfg.model)
    raise ValueError(f"unknown llm.name {cfg.name!r}")


def make_request(
    cfg: LLMConfig,
    messages: list[dict[str, str]],
    *,
    schema: dict[str, Any] | None = None,
    module: str = "default",
    **overrides: Any,
) -> ChatRequest:
    """A ``ChatRequest`` with the sampling defaults of ``cfg`` (temperature, max_tokens, seed)."""
    fields: dict[str, Any] = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens, "seed": cfg.seed}
    fields.update(overrides)
    return ChatRequest(messages=messages, schema=schema, module=module, **fields)


def build_llm(cfg: LLMConfig, paths: PathsConfig, accountant: Accountant | None = None) -> LLMBackend:
    """The configured backend, wrapped in the SQLite cache and per-module accounting."""
    backend: LLMBackend = build_backend(cfg, paths)
    try:
        if cfg.cache:
            key_model = f"{cfg.name}:{cfg.model}:{cfg.model_path or ''}"
            backend = CachedLLM(backend, paths.llm_cache, key_model=key_model)
        if accountant is not None:
            backend = AccountedLLM(backend, accountant)
    except BaseException:
        backend.close()  # do not leave a launched server running if the cache cannot open
        raise
    return backend
