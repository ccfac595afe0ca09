"""LLM backend builders, one per ``llm.name`` (registry keys of ``registry.LLMS``): ``(cfg, paths)``.

Each returns the bare backend (no cache, no accounting); ``llm.factory.build_llm`` wraps it.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import urlsplit

from atomicrag.core.config import LLMConfig, PathsConfig
from atomicrag.core.gpu_memory import DEFAULT_FRACTION
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import LLMBackend
from atomicrag.llm.servers import AttachedServer, LocalServer, launch_llamacpp, launch_vllm


def warn_if_key_missing(cfg: LLMConfig) -> None:
    """Warn when an external endpoint's key variable (``llm.api_key_env``) is not set."""
    if cfg.name == "openai" and cfg.api_key_env and not os.environ.get(cfg.api_key_env):
        logging.getLogger("atomicrag").warning(
            "llm.api_key_env=%s, but that environment variable is not set: requests go out without an API key "
            "(fine for a local server; an external API will answer 401)", cfg.api_key_env)


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
        continues_replies=cfg.name == "vllm",
    )


def _log_dir(paths: PathsConfig) -> Path:
    return Path(paths.cache_dir) / "servers"


def _urls(cfg: LLMConfig) -> list[str]:
    return list(cfg.base_urls) or ([cfg.base_url] if cfg.base_url else [])


def _attach(cfg: LLMConfig, style: str) -> OpenAIClient:
    """A client for the server(s) at ``base_url``/``base_urls``, each waited for and probed."""
    urls = _urls(cfg)
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


def _is_local(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def _auto_device() -> str:
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def fake(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    return FakeLLM(cfg.model, max_retries=cfg.max_retries)


def openai(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    urls = _urls(cfg)
    if not urls:
        raise ValueError("llm.name=openai needs llm.base_url (e.g. https://api.openai.com/v1)")
    warn_if_key_missing(cfg)
    client = _client(cfg, urls[0], "json_schema", base_urls=urls)
    if any(_is_local(u) for u in urls):  # a local vLLM / llama.cpp behind llm=openai: ask it
        client.probe()
    return client


def llamacpp(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    # llama-cpp-python's server only understands {"type": "json_object", "schema": ...};
    # llama.cpp's C++ llama-server accepts it too, so attach and launch use the same style.
    if _urls(cfg):
        return _attach(cfg, "json_object")
    from atomicrag.core.offline_models import resolve_model_path

    model_file = resolve_model_path(cfg.model_path or cfg.model, paths.cache_dir)
    server = launch_llamacpp(
        model_file, log_dir=_log_dir(paths), host=cfg.host, port=cfg.port, n_ctx=cfg.n_ctx,
        n_threads=cfg.n_threads, model_alias=cfg.model, extra_args=cfg.extra_args,
        startup_timeout_s=cfg.startup_timeout_s,
    )
    return _probed(_client(cfg, server.base_url, "json_object", server=server))


def vllm(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    if _urls(cfg):
        return _attach(cfg, "json_schema")
    from atomicrag.llm.resident import find_resident

    # a server kept up by `atomicrag serve` that answers and serves this model: no start-up
    resident = find_resident(cfg.model)
    if resident:
        client = _client(cfg, resident, "json_schema")
        client.probe()
        return client
    server = launch_vllm_for(cfg, paths)
    return _probed(_client(cfg, server.base_url, "json_schema", server=server))


def launch_vllm_for(cfg: LLMConfig, paths: PathsConfig) -> LocalServer:
    """Start the vLLM server ``cfg`` describes (model converted once for a CPU server) and wait for it."""
    from atomicrag.llm.hf_models import find_server_python, hf_model

    device = cfg.device if cfg.device != "auto" else _auto_device()
    python = find_server_python(cfg.server_python, device)  # a CUDA model never gets the CPU build
    server = launch_vllm(
        hf_model(cfg.model_path or cfg.model, python, paths.cache_dir), log_dir=_log_dir(paths),
        served_model_name=cfg.model, host=cfg.host, port=cfg.port,
        tensor_parallel_size=cfg.tensor_parallel_size,
        gpu_memory_utilization=(DEFAULT_FRACTION if cfg.gpu_memory_utilization is None
                                else cfg.gpu_memory_utilization),
        max_model_len=cfg.max_model_len,
        extra_args=cfg.extra_args, startup_timeout_s=cfg.startup_timeout_s, python=python,
        device="cpu" if device == "cpu" else "cuda", enforce_eager=cfg.enforce_eager,
        kv_cache_gb=cfg.kv_cache_gb, cpu_threads=cfg.n_threads,
    )
    return server



def transformers(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    from atomicrag.llm.transformers_backend import TransformersBackend

    return TransformersBackend(cfg.model_path or cfg.model, device=cfg.device, max_retries=cfg.max_retries,
                               cache_dir=paths.cache_dir, model_name=cfg.model)
