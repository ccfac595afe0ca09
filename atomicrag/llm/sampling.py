"""One request builder for LLM sampling: ``llm.temperature/max_tokens/seed`` with a stage's own budget.

Every LLM stage gets its sampling from ``sampling(cfg.llm, max_tokens=...)``. ``llm.temperature``
and ``llm.seed`` apply to every stage (first attempt; retries perturb them, see
``attempt_sampling``); ``llm.max_tokens`` is the completion budget of a stage that has none of its
own. Stages whose reply size is set by what they produce have a budget field in their own config
section (``reader.max_tokens``, ``sieve.max_tokens``, ``retriever.query_ner_max_tokens``,
``decompose.max_tokens``, ``atomizer.*_max_tokens``, ``judge.max_tokens``): every budget is a
config field (``tests/test_config_defaults.py``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atomicrag.core.config import LLMConfig


def sampling(cfg: LLMConfig, max_tokens: int | None = None, fidelity: Any = None) -> dict[str, Any]:
    """``{"temperature", "max_tokens", "seed"}`` of a stage: ``max_tokens`` is the stage's own budget
    field (None: ``llm.max_tokens``); no seed under ``fidelity.request_seed=none`` (the released code
    sends none)."""
    return {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens if max_tokens is None else max_tokens,
            "seed": request_seed(cfg.seed, fidelity)}


def stage_sampling(base: Mapping[str, Any], max_tokens: int | None) -> dict[str, Any]:
    """``base`` (a ``sampling(cfg.llm, fidelity=...)``) with a stage's own budget field
    ``max_tokens`` (None: ``base``'s): what ``sampling(cfg.llm, max_tokens, fidelity)`` gives, for
    a stage that is handed the LLM's sampling instead of the whole LLM section."""
    return {**base, "max_tokens": base["max_tokens"] if max_tokens is None else max_tokens}


def default_sampling(fidelity: Any = None) -> dict[str, Any]:
    """The sampling of the LLM section's defaults (a stage built without an LLM section)."""
    return sampling(LLMConfig(), fidelity=fidelity)


def request_seed(seed: int | None, fidelity: Any = None) -> int | None:
    """``seed`` unless the fidelity config says requests carry none."""
    return None if getattr(fidelity, "request_seed", "sent") == "none" else seed


RETRY_TEMPERATURE = 0.7


def attempt_sampling(temperature: float, seed: int | None, attempt: int) -> dict[str, Any]:
    """Temperature and seed of an atomizer's ``attempt`` (0 = first). A retry must not hit the LLM
    cache's copy of the failed reply, so it samples warmer with another seed."""
    return {"temperature": temperature if attempt == 0 else max(temperature, RETRY_TEMPERATURE),
            "seed": None if seed is None else seed + attempt}


def sampling_fingerprint(temperature: float, seed: int | None) -> dict[str, Any]:
    """The part of an atomizer's cache fingerprint that sampling adds: nothing at the defaults
    (temperature 0, seed 0), so caches written before sampling was configurable stay valid."""
    return {} if (temperature, seed) == (0.0, 0) else {"sampling": [temperature, seed]}
