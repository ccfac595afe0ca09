"""LLM backend builders, one per ``llm.name`` (registry keys of ``registry.LLMS``): ``(cfg, paths)``.

Each returns the bare backend (no cache, no accounting); ``llm.factory.build_llm`` wraps it.
"""
from __future__ import annotations

from pathlib import Path

from atomicrag.config import LLMConfig, PathsConfig, warn_if_key_missing
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import LLMBackend
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


def _log_dir(paths: PathsConfig) -> Path:
    return Path(paths.cache_dir) / "servers"


def fake(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    return FakeLLM(cfg.model, max_retries=cfg.max_retries)


def openai(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    if not cfg.base_url:
        raise ValueError("llm.name=openai needs llm.base_url (e.g. https://api.openai.com/v1)")
    warn_if_key_missing(cfg)
    return _client(cfg, cfg.base_url, "json_schema")


def llamacpp(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    # llama-cpp-python's server only understands {"type": "json_object", "schema": ...};
    # llama.cpp's C++ llama-server accepts it too, so attach and launch use the same style.
    if cfg.base_url:
        AttachedServer(cfg.base_url, startup_timeout_s=cfg.startup_timeout_s).start()
        return _client(cfg, cfg.base_url, "json_object")
    from atomicrag.llm.offline_models import resolve_model_path

    model_file = resolve_model_path(cfg.model_path or cfg.model, paths.cache_dir)
    server = launch_llamacpp(
        model_file, log_dir=_log_dir(paths), host=cfg.host, port=cfg.port, n_ctx=cfg.n_ctx,
        n_threads=cfg.n_threads, model_alias=cfg.model, extra_args=cfg.extra_args,
        startup_timeout_s=cfg.startup_timeout_s,
    )
    return _client(cfg, server.base_url, "json_object", server=server)


def vllm(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    if cfg.base_url:
        AttachedServer(cfg.base_url, startup_timeout_s=cfg.startup_timeout_s).start()
        return _client(cfg, cfg.base_url, "json_schema")
    server = launch_vllm(
        cfg.model_path or cfg.model, log_dir=_log_dir(paths), served_model_name=cfg.model, host=cfg.host,
        port=cfg.port, tensor_parallel_size=cfg.tensor_parallel_size,
        gpu_memory_utilization=cfg.gpu_memory_utilization, max_model_len=cfg.max_model_len,
        extra_args=cfg.extra_args, startup_timeout_s=cfg.startup_timeout_s,
    )
    return _client(cfg, server.base_url, "json_schema", server=server)


def transformers(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    from atomicrag.llm.transformers_backend import TransformersBackend

    return TransformersBackend(cfg.model_path or cfg.model, device=cfg.device, max_retries=cfg.max_retries,
                               cache_dir=paths.cache_dir, model_name=cfg.model)
