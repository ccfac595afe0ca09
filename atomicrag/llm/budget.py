"""Fit a prompt's ranked context into the model's context window.

A prompt longer than the window is an HTTP 400 on vLLM and llama.cpp ("prompt contains at
least 4097 input tokens"): the whole request fails. The reader and the sieve instead keep the
longest best-ranked prefix of their context that fits, and count what they dropped.

Token counts are *estimated* from the text (no tokenizer round trip per prompt): at most
``CHARS_PER_TOKEN`` characters per token, which overestimates English BPE text (~4 chars per
token with the SmolLM2 and Qwen tokenizers), so a prompt judged to fit does fit.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from atomicrag.llm.protocol import backend_attribute

T = TypeVar("T")
CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # chat-template tokens around each message
SAFETY_TOKENS = 32


def context_window(llm: Any) -> int | None:
    """The context window of ``llm`` or of the backend it wraps (cache, accounting); None = unknown."""
    return backend_attribute(llm, "context_window", lambda v: isinstance(v, int) and v > 0)


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return int(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages)


def fit_items(build: Callable[[list[T]], list[dict[str, str]]], items: Sequence[T],
              window: int | None, max_tokens: int) -> tuple[list[T], int]:
    """(the longest prefix of ``items`` whose prompt fits, number of items dropped).

    ``items`` are ranked best first; ``build(prefix)`` makes the prompt's messages. The prompt
    may use ``window - max_tokens`` tokens (the reply needs the rest).
    """
    items = list(items)
    if window is None:
        return items, 0
    budget = window - max_tokens - SAFETY_TOKENS

    def fits(k: int) -> bool:
        return estimate_tokens(build(items[:k])) <= budget

    if fits(len(items)):
        return items, 0
    lo, hi = 0, len(items)  # invariant: prefix lo fits (or lo == 0), prefix hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return items[:lo], len(items) - lo


def configured_window(llm_cfg: Any) -> int | None:
    """The context window the stages fit prompts into, read from config before any backend is
    built (the choice ``llm/backends.py`` makes): llama.cpp's ``n_ctx``, vLLM's ``max_model_len``."""
    if llm_cfg.name == "llamacpp":
        return int(llm_cfg.n_ctx)
    return int(llm_cfg.max_model_len) if llm_cfg.name == "vllm" else None


def fitted_prefix(build: Callable[[list[T]], list[dict[str, str]]], items: Sequence[T], llm_cfg: Any,
                  max_tokens: int) -> list[T]:
    """The prefix of ``items`` a stage will send under ``llm_cfg``'s window (``fit_items``)."""
    return fit_items(build, items, configured_window(llm_cfg), max_tokens)[0]


def sent_cap(fidelity: Any, budget: int) -> int | None:
    """The max_tokens a stage sends: none under ``fidelity.budgets=released``."""
    return None if fidelity.budgets == "released" else budget
