"""One request builder for LLM sampling: ``llm.temperature/max_tokens/seed`` with per-stage overrides.

Every LLM stage gets its sampling from ``sampling(cfg.llm, stage)``. ``llm.temperature`` and
``llm.seed`` apply to every stage (first attempt; retries perturb them, see ``llm.base``);
``llm.max_tokens`` is the completion budget of stages whose replies have no natural bound. The
stages below keep their own budget, because their reply size is set by what they produce: the
reader's is ``reader.max_tokens``; the LLM atomizer's two prompts and the vocabulary filter's
long JSON lists are fixed by the atomizers (part of their cache fingerprint).
"""
from __future__ import annotations

from typing import Any

from atomicrag.core.config import LLMConfig

# completion budgets of stages whose replies are short by construction
STAGE_MAX_TOKENS = {
    "sieve": 512,  # a list of kept indices
    "retrieve_ner": 256,  # a handful of entity names
}


def sampling(cfg: LLMConfig, stage: str, **overrides: Any) -> dict[str, Any]:
    """``{"temperature", "max_tokens", "seed"}`` for ``stage``; ``overrides`` (e.g. the reader's own
    ``max_tokens``) win."""
    out: dict[str, Any] = {"temperature": cfg.temperature, "max_tokens": STAGE_MAX_TOKENS.get(stage, cfg.max_tokens),
                           "seed": cfg.seed}
    out.update(overrides)
    return out


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
