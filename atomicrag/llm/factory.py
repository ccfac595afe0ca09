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
transformers   ``TransformersBackend`` in-process
=============  ==================================================================

Every server the client talks to is probed first (``probe.py``): the structured-output
dialect follows what the server *is*, not the config it came from, and a local server that
does not serve ``llm.model`` is an error listing what it serves. ``llm.base_urls`` drives
several replicas of one model (least-outstanding dispatch, failover). Builders: ``backends.py``.

Inside ``with shared_backends():`` (the harness wraps a run and its baseline rows in one), a
backend is built once per LLM config and lent to every ``build_llm`` of that config: the rows
of one run share one launched server instead of starting one each (a vLLM start-up takes tens of
seconds).
Outside such a scope, a config that launches a server is still built once per process and
reference-counted (``process_shared``): every ``AtomicRAG`` object of that config uses the one
server, which stops when the last of them is closed.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from atomicrag.core.config import LLMConfig, PathsConfig
from atomicrag.llm.accounting import Accountant, AccountedLLM
from atomicrag.llm.cache import CachedLLM
from atomicrag.llm.protocol import ChatRequest, ChatResult, LLMBackend

_SCOPES: list[dict[str, LLMBackend]] = []  # open shared_backends() scopes, innermost last


class _Lent:
    """A shared backend lent to one user: ``close()`` gives it back instead of stopping it."""

    def __init__(self, backend: LLMBackend) -> None:
        self._backend = backend

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return self._backend.chat(requests)

    def close(self) -> None:
        pass  # the scope that built it closes it

    def __getattr__(self, name: str) -> Any:  # model, endpoint_stats(), ... of the real backend
        return getattr(self._backend, name)


@contextmanager
def shared_backends() -> Iterator[None]:
    """Share one backend per LLM config among the ``build_llm`` calls inside; close them at exit."""
    scope: dict[str, LLMBackend] = {}
    _SCOPES.append(scope)
    try:
        yield
    finally:
        _SCOPES.remove(scope)
        for backend in scope.values():
            backend.close()


def _scoped_backend(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    if not _SCOPES:
        from atomicrag.llm import process_shared

        # a config that launches a server: one per process, reference-counted (process_shared)
        if process_shared.shares(cfg):
            return process_shared.acquire(process_shared.share_key(cfg, paths),
                                          lambda: build_backend(cfg, paths))  # type: ignore[return-value]
        return build_backend(cfg, paths)
    scope = _SCOPES[-1]
    key = json.dumps([dataclasses.asdict(cfg), dataclasses.asdict(paths)], sort_keys=True, default=str)
    if key not in scope:
        scope[key] = build_backend(cfg, paths)
    return _Lent(scope[key])  # type: ignore[return-value]


def build_backend(cfg: LLMConfig, paths: PathsConfig) -> LLMBackend:
    """The bare backend for ``cfg`` (no cache, no accounting): the ``registry.LLMS`` entry's builder."""
    from atomicrag.core.registry import LLMS

    return LLMS.get(cfg.name)(cfg, paths)


def build_llm(cfg: LLMConfig, paths: PathsConfig, accountant: Accountant | None = None, *,
              accept_empty: bool = False) -> LLMBackend:
    """The configured backend, wrapped in the SQLite cache and per-module accounting; with
    ``accept_empty`` (``fidelity.empty_replies=accepted``) an empty free-text reply is a reply."""
    backend: LLMBackend = _scoped_backend(cfg, paths)
    try:
        if cfg.cache:
            key_model = f"{cfg.name}:{cfg.model}:{cfg.model_path or ''}"
            backend = CachedLLM(backend, paths.llm_cache, key_model=key_model)
        if accountant is not None:
            backend = AccountedLLM(backend, accountant)
        if accept_empty:
            from atomicrag.llm.retry import EmptyRepliesAccepted

            backend = EmptyRepliesAccepted(backend)
    except BaseException:
        backend.close()  # do not leave a launched server running if the cache cannot open
        raise
    return backend
