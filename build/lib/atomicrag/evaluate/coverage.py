"""Evidence coverage: retrieval quality on corpora without gold passage ids.

Graph-Bench questions carry their evidence as ``;``-separated facts, not passage ids, and its
corpora are raw documents (no passage to hit). A fact counts as covered when at least
``threshold`` (70%) of its content words occur among the first ``words`` words of the context
the system returned, in rank order; a question's coverage is the fraction of its facts covered.
Reported at 300 and 600 words, per question type, beside ACC. Words are lower-cased ``\\w+``
runs; content words are those not in a short English stop list, so "the" or "is" neither help
nor hurt a fact. Documents without evidence score None (left out of the means, not zero).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

WORDS = (300, 600)
THRESHOLD = 0.7
_WORD = re.compile(r"\w+")
STOP = frozenset(["a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "into", "onto", "about", "over", "under", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "has", "have", "had", "having", "it", "its", "this", "that", "these", "those", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "not", "no", "nor", "so", "than", "too", "very", "can", "could", "may", "might", "must", "shall", "should", "will", "would", "also", "such", "there", "their", "they", "them", "he", "she", "his", "her", "him", "we", "our", "you", "your", "i", "me", "my", "one", "ones", "s", "t"])


def evidence_facts(evidence: Any) -> list[str]:
    """The facts of a question's evidence: a ``;``-separated string or a list of strings."""
    if evidence is None:
        return []
    parts = evidence if isinstance(evidence, (list, tuple)) else str(evidence).split(";")
    return [p.strip() for p in map(str, parts) if p.strip()]


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in STOP]


def first_words(texts: Iterable[str], n: int) -> set[str]:
    """The set of the first ``n`` whitespace-separated words of the texts in order, as content words."""
    words: list[str] = []
    for t in texts:
        words.extend(t.split())
        if len(words) >= n:
            break
    return set(content_words(" ".join(words[:n])))


def evidence_coverage(evidence: Any, context: Sequence[str], words: int = 300,
                      threshold: float = THRESHOLD) -> float | None:
    """Fraction of the evidence facts covered by the first ``words`` words of ``context``
    (texts in rank order); None when the question has no evidence facts."""
    facts = [content_words(f) for f in evidence_facts(evidence)]
    facts = [f for f in facts if f]
    if not facts:
        return None
    seen = first_words(context, words)
    return sum(sum(w in seen for w in f) >= threshold * len(f) for f in facts) / len(facts)


def coverage_scores(evidence: Any, context: Sequence[str], words: Sequence[int] = WORDS) -> dict[str, float]:
    """``{"coverage@300": x, "coverage@600": y}`` (empty when the question has no evidence)."""
    out = {}
    for n in words:
        value = evidence_coverage(evidence, context, n)
        if value is not None:
            out[f"coverage@{n}"] = value
    return out


def context_texts(trace_context: Sequence[Any]) -> list[str]:
    """The texts of a trace's context items (dicts or ``ContextItem``s) in rank order."""
    return [str(c.get("text", "") if isinstance(c, dict) else getattr(c, "text", c)) for c in trace_context]
