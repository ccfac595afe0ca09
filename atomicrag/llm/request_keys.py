"""What identifies an LLM request: its body normalised (fields at the API default and the spelling
of sampling numbers aside), the key a recording files its reply under, digests of its messages, and
which pipeline stage asked it (by rules on its first message). The recording proxy
(``record_proxy``), the scripted model and the parity report read requests through these."""
from __future__ import annotations

import hashlib
import re
from typing import Any

from atomicrag.llm.request_compare import canonical_json

# Request fields whose value here is what the OpenAI API does when the field is left out: a body
# that writes one and a body that leaves it out ask the same thing (the released pipeline's SDK call
# writes n=1, seed=null and max_tokens=null, the released judge's LangChain client top_p=1 and zero
# penalties; ours leaves them out), so they share one key and so one reply. Sampling numbers are
# read as numbers: temperature 0 and 0.0 are the same setting.
API_DEFAULTS: dict[str, Any] = {"n": 1, "seed": None, "max_tokens": None, "max_completion_tokens": None,
                                "stream": False, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0}
NUMERIC_FIELDS = ("temperature", "top_p", "presence_penalty", "frequency_penalty", "repetition_penalty")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _at_default(value: Any, default: Any) -> bool:
    if default is None or isinstance(default, bool):
        return value is default
    return _is_number(value) and float(value) == float(default)


def normalised_body(body: Any) -> Any:
    """``body`` as the server reads it: fields equal to the API default dropped, sampling numbers
    as floats. Everything else (the messages above all) is kept exactly."""
    if not isinstance(body, dict):
        return body
    out = {k: v for k, v in body.items() if not (k in API_DEFAULTS and _at_default(v, API_DEFAULTS[k]))}
    for k in NUMERIC_FIELDS:
        if _is_number(out.get(k)):
            out[k] = float(out[k])
    return out


def request_key(method: str, path: str, body: Any) -> str:
    """sha256 of method, path (without the label prefix) and the canonical normalised body with its
    message contents as digests (``hash_messages``): equal for two bodies that ask the same thing,
    and computable again from a recording that keeps digests only."""
    text = f"{method.upper()} {path}\n{canonical_json(hash_messages(normalised_body(body)))}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_digest(content: Any) -> dict[str, str]:
    """What a hashed recording keeps of one message content: its sha256 (of the canonical JSON)."""
    return {"sha256": hashlib.sha256(canonical_json(content).encode("utf-8")).hexdigest()}


def hash_messages(body: Any) -> Any:
    """``body`` with each chat message's content (and a completion prompt) replaced by its digest;
    two bodies with equal messages still have equal hashed messages."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    if isinstance(body.get("messages"), list):
        out["messages"] = [{**m, "content": _digest(m.get("content"))} if isinstance(m, dict) else m
                           for m in body["messages"]]
    if "prompt" in body:
        out["prompt"] = _digest(body["prompt"])
    return out


def _digest(content: Any) -> Any:
    # idempotent: a content that is already a digest (a recording's stored body) stays as it is;
    # a real message content is a string or a list of parts, never a one-key {"sha256": ...} dict
    if isinstance(content, dict) and set(content) == {"sha256"}:
        return content
    return content_digest(content)


def first_message_text(body: Any) -> str:
    """The first chat message's text (or a completion prompt); '' when the body has neither."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        content = messages[0].get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):  # OpenAI content parts
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    prompt = body.get("prompt")
    return prompt if isinstance(prompt, str) else ""


def classify_stage(body: Any, rules: list[tuple[str, re.Pattern[str]]]) -> str:
    """The first rule whose pattern is found in the first message names the stage; else ``other``."""
    text = first_message_text(body)
    for name, pattern in rules:
        if pattern.search(text):
            return name
    return "other"


def compile_rules(rules: dict[str, str] | list[tuple[str, str]] | None) -> list[tuple[str, re.Pattern[str]]]:
    items = list(rules.items()) if isinstance(rules, dict) else list(rules or [])
    return [(name, re.compile(pattern)) for name, pattern in items]
