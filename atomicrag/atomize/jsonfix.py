"""Salvage a truncated or wrapped JSON reply.

When generation stops at ``max_tokens`` the reply is cut mid-object. Rather than throwing
away every atom of the chunk, we cut the text back to the last complete array element and
close the open brackets; the incomplete tail is dropped, never guessed. Code fences and
text around the object are removed first.
"""
from __future__ import annotations

import json
from typing import Any

_MAX_ATTEMPTS = 400  # cut points tried, from the end backwards


def _strip_wrapping(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else t[3:]
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    i = t.find("{")
    return t[i:] if i >= 0 else t


def _closers(prefix: str) -> str | None:
    """The brackets that close ``prefix``; None when the prefix ends inside a string."""
    stack: list[str] = []
    in_str = esc = False
    for ch in prefix:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not stack:
                return None
            stack.pop()
    if in_str:
        return None
    return "".join(reversed(stack))


def salvage_json(text: str) -> tuple[Any, bool] | None:
    """Parse ``text`` leniently. Returns (object, was_truncated) or None when nothing is usable."""
    t = _strip_wrapping(text)
    try:
        return json.loads(t), False
    except json.JSONDecodeError:
        pass
    # Whole object followed by chatter: decode the first value only.
    try:
        obj, _ = json.JSONDecoder().raw_decode(t)
        return obj, False
    except json.JSONDecodeError:
        pass
    # Truncated: try cut points just after a complete value, from the end backwards.
    cuts = [i + 1 for i, ch in enumerate(t) if ch in '"]}' or ch.isdigit()]
    for n, cut in enumerate(reversed(cuts)):
        if n >= _MAX_ATTEMPTS:
            break
        prefix = t[:cut].rstrip().rstrip(",")
        closing = _closers(prefix)
        if closing is None:
            continue
        try:
            obj = json.loads(prefix + closing)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj, True
    return None
