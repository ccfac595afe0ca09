"""The released reading of the judge's free-text replies (``judge.judge_replies=released``).

The released judge asks for JSON without a schema and reads the statement split leniently (the
reply, then its first ``{...}`` block; a list, an object's usual list key, or all its values) and
the classification strictly (the whole reply as JSON, TP/FP/FN lists of statement/reason
objects, three tries). The lenient chain there is json, json5, json_repair; here json, then this
project's repair (``llm.json_repair``): a reply only one of those two repairers reads is read
differently, named in the differences list.
"""
from __future__ import annotations

import json
import re
from typing import Any

from atomicrag.llm.json_repair import ReplyParseError, repair_json

_FENCES = re.compile(r"```(?:json)?|```")
_BLOCK = re.compile(r"\{[\s\S]*\}")
_LIST_KEYS = ("statements", "answers", "items", "list", "output", "result")


def _lenient(text: str) -> Any:
    """JSON, else a repaired parse, else {} (the released chain: json, json5, json_repair, {})."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return repair_json(text)
    except (ReplyParseError, ValueError, RecursionError):
        return {}


def parse_statements_released(text: str) -> list[str]:
    """Statements read the released way: fences removed, the reply (then its first ``{...}``
    block) parsed leniently; a list gives its items, an object the first list under a usual key,
    else all its values. Raises ``ValueError`` where the released code ends with no statements
    for want of any parse (the caller counts it; released: an empty list)."""
    content = _FENCES.sub("", text or "").strip()
    data = _lenient(content)
    if not data:
        data = _lenient(m.group(0)) if (m := _BLOCK.search(content)) else {}
    if isinstance(data, list):
        return [str(x) for x in data]
    if isinstance(data, dict):
        if not data:
            raise ValueError("no JSON in the statement reply (released: no statements)")
        for key in _LIST_KEYS:
            if isinstance(data.get(key), list):
                return [str(x) for x in data[key]]
        return [str(v) for v in data.values()]
    return [str(data)]


def parse_classification_released(text: str) -> tuple[int, int, int]:
    """The released check: the whole reply must be JSON (no repair), an object whose TP/FP/FN
    (missing = empty) are lists of ``{"statement": str, "reason": str}``; ``ValueError``/``TypeError``
    otherwise (released: tried 3 times, then FC 0)."""
    obj = json.loads(text or "")
    if not isinstance(obj, dict):
        raise TypeError("classification reply is not an object")
    counts = []
    for key in ("TP", "FP", "FN"):
        items = obj.get(key, [])
        if not isinstance(items, list) or not all(
                isinstance(e, dict) and isinstance(e.get("statement"), str) and isinstance(e.get("reason"), str)
                for e in items):
            raise TypeError(f"classification reply's {key!r} is not a list of statement/reason objects")
        counts.append(len(items))
    return counts[0], counts[1], counts[2]
