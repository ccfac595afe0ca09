"""Which model-hub weights a run will load, whether they are in the local Hugging Face cache, and
the hub access that follows from that.

Downloads are the user's choice: a run whose models all come from packages or local folders runs
with the hub switched off (``HF_HUB_OFFLINE=1``); a run naming a hub model that is cached runs
offline too; a run naming one that is not cached stops before any work with the exact download
commands, unless the user said ``HF_HUB_OFFLINE=0`` (then the libraries download it).
"""
from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

from atomicrag.core.config import Config, EmbedderConfig, LLMConfig

# embedder.model / llm.model_path values that are packages of this project, never hub ids
_PACKAGED_EMBEDDERS = ("minilm",)
_PACKAGED_LLMS = ("smollm2", "qwen0.5b", "qwen2.5-coder-0.5b")
_HUB_EMBEDDERS = ("sentence_transformers", "transformers", "onnx")
_HUB_LLMS = ("vllm", "transformers")  # llamacpp loads GGUF files, openai/fake load nothing
_FALSE = ("0", "false", "no", "off", "")


class HubModelMissing(RuntimeError):
    """A configured hub model is not in the local cache and downloads were not switched on."""


def _is_hub_id(value: str | None) -> bool:
    return bool(value) and "/" in str(value) and not Path(str(value)).expanduser().exists()


def _embedder_model(field: str, cfg: EmbedderConfig) -> list[tuple[str, str]]:
    if cfg.name in _HUB_EMBEDDERS and cfg.model not in _PACKAGED_EMBEDDERS and _is_hub_id(cfg.model):
        return [(field, cfg.model)]
    return []


def _llm_model(field: str, cfg: LLMConfig) -> list[tuple[str, str]]:
    if cfg.name not in _HUB_LLMS or cfg.base_url or cfg.base_urls:
        return []  # attaching to a running server loads nothing here
    weights = cfg.model_path if cfg.model_path else cfg.model
    if str(weights).lower() in _PACKAGED_LLMS or not _is_hub_id(weights):
        return []
    return [(f"{field}.model_path" if cfg.model_path else f"{field}.model", str(weights))]


def hub_models(cfg: Config) -> list[tuple[str, str]]:
    """``(config field, hub id)`` of every hub model the run will load, in config order."""
    out = _llm_model("llm", cfg.llm) + _embedder_model("embedder.model", cfg.embedder)
    if cfg.retriever.reranker and _is_hub_id(cfg.retriever.reranker):
        out.append(("retriever.reranker", cfg.retriever.reranker))
    judge = getattr(cfg, "judge", None)  # a harness run's (HarnessConfig); the library has none
    if judge is not None and judge.name != "none":
        if judge.llm_source == "own":
            out += _llm_model("judge.llm", judge.llm)
        if judge.embedder_source == "own":
            out += _embedder_model("judge.embedder.model", judge.embedder)
    seen: set[str] = set()
    return [(f, m) for f, m in out if not (m in seen or seen.add(m))]


def is_cached(repo_id: str) -> bool:
    """Whether a snapshot of ``repo_id`` is in the local Hugging Face cache (no network)."""
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(repo_id, local_files_only=True)
    except Exception:  # LocalEntryNotFoundError and friends: not (fully) there
        return False
    return True


def download_message(missing: list[tuple[str, str]]) -> str:
    lines = ["these models are not in the local Hugging Face cache "
             f"({os.environ.get('HF_HOME', '~/.cache/huggingface')}):"]
    lines += [f"  {field}: {repo}" for field, repo in missing]
    lines.append("download them first:")
    lines += [f"  huggingface-cli download {repo}" for _, repo in missing]
    lines.append("or let this run download them: HF_HUB_OFFLINE=0 python -m atomicrag.run ...")
    return "\n".join(lines)


def prepare_hub_access(cfg: Config, environ: MutableMapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Switch the hub off unless a missing model must be downloaded with the user's consent.

    Returns the hub models the run will load. Raises :class:`HubModelMissing` naming the
    download commands when one is not cached and ``HF_HUB_OFFLINE`` is not ``0``.
    """
    env = os.environ if environ is None else environ
    models = hub_models(cfg)
    downloads_allowed = env.get("HF_HUB_OFFLINE", "1").strip().lower() in _FALSE
    if downloads_allowed:
        return models
    # set before huggingface_hub is imported: it reads the switch once, at import
    env["HF_HUB_OFFLINE"] = "1"  # everything must be local: nothing reaches for the hub (or its rate limits)
    missing = [(f, m) for f, m in models if not is_cached(m)]
    if missing:
        raise HubModelMissing(download_message(missing))
    return models
