"""The extractive fallback: when the reader gives no answer, the retrieved sentence that best
supports one, with its document, marked as extractive (never passed off as the model's answer).

A sentence's support is how many of the question's content words it holds (a word counts by
its first five letters, so "born"/"birth" do not match but "rivers"/"river" do), with the
context's ranking breaking ties: retrieval already put the most relevant evidence first. A
context with no sentence sharing a content word gives its top-ranked sentence. The context
items are the reader's (``ContextItem`` or its dict), in prompt order.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_STOP = frozenset("""a an and are as at be by did do does for from had has have how in into is it its of on or
that the their there these this those to was were what when where which who whom whose why will with
about after before than then they he she his her him you your we our can could would should may""".split())


@dataclass(frozen=True)
class Extract:
    sentence: str
    item: int  # 0-based index of the context item it came from
    support: int  # question content words it holds


def _get(item: Any, key: str, default: Any = "") -> Any:
    return item.get(key, default) if isinstance(item, dict) else getattr(item, key, default)


def _stems(text: str) -> set[str]:
    return {w[:5] for w in (t.casefold() for t in _WORD.findall(text)) if len(w) > 2 and w not in _STOP}


def sentences(text: str) -> list[str]:
    """Sentences of a context text (lines, split after ``.``/``!``/``?`` before a capital or digit)."""
    return [s.strip() for s in _SENTENCE_END.split(text or "") if len(s.strip()) > 3]


def best_sentence(question: str, context: Sequence[Any]) -> Extract | None:
    """The best-supported sentence of ``context`` for ``question`` (None: the context has no text)."""
    want = _stems(question)
    best: Extract | None = None
    for i, item in enumerate(context):
        for s in sentences(str(_get(item, "text"))):
            support = len(want & _stems(s))
            if best is None or support > best.support:  # ties keep the earlier (better ranked) one
                best = Extract(s, i, support)
    return best
