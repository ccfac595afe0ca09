"""Small helpers shared by the prompt modules (string cleaning, de-duplication)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def clean_str(value: Any) -> str:
    """A stripped string, or '' for anything that is not a (non-blank) string or number."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        return ""
    return " ".join(value.split())


def dedupe(items: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each string (case-sensitive), drop empty ones."""
    seen: set[str] = set()
    out = []
    for s in items:
        if s and s not in seen:
            seen.add(s)
            out.append(s)
    return out


class PromptParseError(ValueError):
    """A reply that has the wrong shape even after lenient normalisation."""


def python_literal(text: str) -> Any:
    """A Python literal (strings, numbers, lists, dicts, True/False/None) read from ``text``: how the
    released code's replies are read where it calls ``eval`` on them. ``ast.literal_eval`` evaluates
    literals only and never runs code; it raises ValueError/SyntaxError (and TypeError,
    MemoryError, RecursionError on odd input) where the released ``eval`` would fail too."""
    import ast

    return ast.literal_eval(text)
