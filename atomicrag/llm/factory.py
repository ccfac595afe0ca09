"""Build the configured LLM backend: ``build_llm(cfg.llm, cfg.paths, accountant)``.

Layers, outermost first: ``AccountedLLM`` (when an accountant is given; sees cache hits as
cached calls) → ``CachedLLM`` (when ``cfg.cache``) → the backend. ``close()`` on the returned
object closes every layer and stops a server the factory launched.

=============  ==================================================================
name           backend
=============  ==================================================================
fake           ``FakeLLM`` (tests and smoke runs only)
openai         ``OpenAIClient`` at ``base_url`` (OpenAI, Ollama, remote vLLM, ...)
llamacpp       launches ``llama_cpp.server`` on ``model_path`` (or attaches to ``base_url(s)``)
vllm           launches vLLM's OpenAI server from ``server_python`` on ``model_path`` or
               ``model`` (a GGUF is converted once; CPU or GPU by ``device``), or attaches
=============  ==================================================================

Every server the client talks to is probed first (``probe.py``): the structured-output
dialect follows what the server *is*, not the config it came from, and a local server that
does not serve ``llm.model`` is an error listing what it serves. ``llm.base_urls`` drives
several replicas of one model (least-outstanding dispatch, failover).

=============  ==================================================================
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


def _client(cfg: LLMConfig, base_url: str, style: str, server: LocalServer | None = None,
            base_urls: list[str] | None = None) -> OpenAIClient:
    window = cfg.n_ctx if cfg.name == "llamacpp" else cfg.max_model_len if cfg.name == "vllm" else None
    return OpenAIClient(
        base_url,
        cfg.model,
        base_urls=base_urls,
        context_window=window,
        api_key_env=cfg.api_key_env,
        concurrency=cfg.concurrency,
        timeout_s=cfg.timeout_s,
        max_retries=cfg.max_retries,
        structured_output=cfg.structured_output,
        response_format_style=style,
        server=server,
    )


def _attach(cfg: LLMConfig, style: str, *, probe_required: bool = True) -> OpenAIClient:
    """A client for the server(s) at ``base_url``/``base_urls``, each waited for and probed."""
    urls = list(cfg.base_urls) or [str(cfg.base_url)]
    for url in urls:
        AttachedServer(url, startup_timeout_s=cfg.startup_timeout_s).start()
    client = _client(cfg, urls[0], style, base_urls=urls)
    client.probe()
    return client


def _probed(client: OpenAIClient) -> OpenAIClient:
    """Probe a client of a launched server; a launched server is stopped if that fails."""
    try:
        client.probe()
    except BaseException:
        client.close()
        raise
    return client


def build_backend(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    """The bare backend for ``cfg`` (no cache, no accounting)."""
    attach = bool(cfg.base_url or cfg.base_urls)
    log_dir = Path(paths.cache_dir) / "servers"
    if cfg.name == "fake":
        return FakeLLM(cfg.model, max_retries=cfg.max_retries)
    if cfg.name == "openai":
        if not attach:
            raise ValueError("llm.name=openai needs llm.base_url (e.g. https://api.openai.com/v1)")
        warn_if_key_missing(cfg)
        urls = list(cfg.base_urls) or [str(cfg.base_url)]
        client = _client(cfg, urls[0], "json_schema", base_urls=urls)
        if any(_is_local(u) for u in urls):  # a local vLLM / llama.cpp behind llm=openai: ask it
            client.probe()
        return client
    if cfg.name == "llamacpp":
        # llama-cpp-python's server only understands {"type": "json_object", "schema": ...};
        # llama.cpp's C++ llama-server accepts it too, so attach and launch use the same style.
        if attach:
            return _attach(cfg, "json_object")
        from atomicrag.llm.offline_models import resolve_model_path

        spec = cfg.model_path or cfg.model
        model_file = resolve_model_path(spec, paths.cache_dir)
        server = launch_llamacpp(
            model_file, log_dir=log_dir, host=cfg.host, port=cfg.port, n_ctx=cfg.n_ctx,
            n_threads=cfg.n_threads, model_alias=cfg.model, extra_args=cfg.extra_args,
            startup_timeout_s=cfg.startup_timeout_s,
        )
        return _probed(_client(cfg, server.base_url, "json_object", server=server))
    if cfg.name == "vllm":
        if attach:
            return _attach(cfg, "json_schema")
        from atomicrag.llm.hf_models import find_server_python, hf_model

        python = find_server_python(cfg.server_python)
        device = cfg.device if cfg.device != "auto" else _auto_device()
        server = launch_vllm(
            hf_model(cfg.model_path or cfg.model, python, paths.cache_dir), log_dir=log_dir,
            served_model_name=cfg.model, host=cfg.host, port=cfg.port,
            tensor_parallel_size=cfg.tensor_parallel_size,
            gpu_memory_utilization=cfg.gpu_memory_utilization, max_model_len=cfg.max_model_len,
            extra_args=cfg.extra_args, startup_timeout_s=cfg.startup_timeout_s, python=python,
            device=device, enforce_eager=cfg.enforce_eager, kv_cache_gb=cfg.kv_cache_gb,
            cpu_threads=cfg.n_threads,
        )
        return _probed(_client(cfg, server.base_url, "json_schema", server=server))
    if cfg.name == "transformers":
        from atomicrag.llm.transformers_backend import TransformersBackend

        return TransformersBackend(cfg.model_path or cfg.model, device=cfg.device, max_retries=cfg.max_retries,
                                   cache_dir=paths.cache_dir, model_name=cfg.model)
    raise ValueError(f"unknown llm.name {cfg.name!r}")


def _is_local(url: str) -> bool:
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def _auto_device() -> str:
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


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
