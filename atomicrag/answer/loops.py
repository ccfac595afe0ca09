"""A reply that loops: a small reader copies a context line, then the same line again, until the
token budget ends the reply (issue #48: 0 of 5 real questions answered, each reply cut at the
budget; a larger budget only loops longer). Detected on the reply's text, so every backend's
replies are read the same way and nothing sent to the model changes.

``loop_start(text)`` is where the repetition begins: the first line (of at least
``MIN_LINE_CHARS`` characters, compared without case, spaces and citation marks) that is a repeat
of an earlier line and is itself repeated ``REPEATS`` times in all; a reply without one returns None.
"""
from __future__ import annotations

import re

MIN_LINE_CHARS = 12  # "Answer: 1867" twice is not a loop; a copied context line is longer
REPEATS = 3  # a line that occurs this often is the loop, not a restatement
_MARKS = re.compile(r"\[\s*\d+(?:\s*[-,;]\s*\d+)*\s*\]")
_LINE = re.compile(r"[^\n]*(?:\n|$)")


def _key(line: str) -> str:
    return " ".join(_MARKS.sub("", line).casefold().split())


def loop_start(text: str) -> int | None:
    """Character offset where a reply's repetition begins (the second occurrence of the looped
    line), or None when no line of it repeats ``REPEATS`` times."""
    seen: dict[str, int] = {}
    counts: dict[str, int] = {}
    first_repeat: dict[str, int] = {}
    pos = 0
    for m in _LINE.finditer(text):
        line = m.group()
        if not line:
            break
        key = _key(line)
        if len(key) >= MIN_LINE_CHARS:
            counts[key] = counts.get(key, 0) + 1
            if key in seen and key not in first_repeat:
                first_repeat[key] = pos
            seen.setdefault(key, pos)
        pos = m.end()
    looped = [first_repeat[k] for k, n in counts.items() if n >= REPEATS and k in first_repeat]
    return min(looped) if looped else None


def without_loop(text: str) -> tuple[str, bool]:
    """``(text up to its loop, whether it looped)``."""
    start = loop_start(text)
    return (text, False) if start is None else (text[:start].rstrip(), True)
