"""Which documents an answer used: the reader's citation marks mapped to their documents.

The numbered context (``prompts.reader.format_context``) gives every evidence line a number and
our reader prompt asks the model to cite the numbers it relies on ("... in Switzerland [1]").
``cite`` reads those marks from the whole reply (thought and answer), keeps the numbers of lines
the reader saw, and maps each to its document (the context item's passage), numbering documents
in the order they are first cited. A reply that cites nothing (a prompt layout without numbers,
e.g. the released one, or a model that ignores the instruction) falls back to the context lines
whose text contains the answer, marked ``how="matched"``; without either, no source is claimed.
No prompt changes: the published readers' prompts and their cached replies stay as they are.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# "[2]", "[1, 3]", "[2-4]", "[1][3]" (each bracket is one match)
_MARK = re.compile(r"\[\s*(\d+(?:\s*[-,;–]\s*\d+)*)\s*\]")
_MAX_RANGE = 50  # "[1-999]" is not a citation of 999 lines


@dataclass
class Source:
    """One document an answer cites: ``[n]`` in ``QueryResult.cited_answer``."""

    n: int
    doc_id: str
    title: str = ""
    context: list[int] = field(default_factory=list)  # the reader's context lines (1-based) it was cited by
    # cited (the reply cites its lines) | matched (its lines contain the answer) | extractive (the
    # answer is a sentence quoted from it: the reader gave none, answer.extractive)
    how: str = "cited"


def cited_numbers(text: str, limit: int) -> list[int]:
    """Context numbers ``text`` cites, in order of first mention, within ``1..limit``."""
    out: list[int] = []
    for m in _MARK.finditer(text or ""):
        for part in re.split(r"\s*[,;]\s*", m.group(1)):
            bounds = [int(x) for x in re.split(r"\s*[-–]\s*", part) if x]
            lo, hi = bounds[0], bounds[-1]
            if hi < lo or hi - lo > _MAX_RANGE:
                continue
            out.extend(n for n in range(lo, hi + 1) if 1 <= n <= limit)
    return list(dict.fromkeys(out))


def _get(item: Any, key: str, default: Any = "") -> Any:
    return item.get(key, default) if isinstance(item, dict) else getattr(item, key, default)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def cite(raw: str, answer: str, context: Sequence[Any], seen: int | None = None) -> list[Source]:
    """The documents behind ``answer``: ``raw`` is the reader's whole reply, ``context`` the
    context items (``ContextItem`` or its dict) in prompt order, ``seen`` how many of them the
    prompt held (the rest were cut to fit the window)."""
    limit = len(context) if seen is None else max(0, min(seen, len(context)))
    numbers = cited_numbers(raw, limit)
    how = "cited"
    if not numbers and answer and len(_norm(answer)) >= 2:
        want = _norm(answer)
        numbers = [i + 1 for i in range(limit) if want in _norm(str(_get(context[i], "text")))]
        how = "matched"
    sources: dict[str, Source] = {}
    for n in numbers:
        item = context[n - 1]
        doc = str(_get(item, "passage_id"))
        if doc not in sources:
            sources[doc] = Source(n=len(sources) + 1, doc_id=doc, title=str(_get(item, "title") or ""), how=how)
        sources[doc].context.append(n)
    return list(sources.values())


def with_marks(answer: str, sources: Sequence[Source]) -> str:
    """``answer`` followed by the marks of its sources: "Bern [1][2]"."""
    if not answer or not sources:
        return answer
    return f"{answer.rstrip()} " + "".join(f"[{s.n}]" for s in sources)
