"""Deterministic fake LLM for tests and smoke runs (never for reported numbers).

Schema requests get a JSON object generated from the schema with a random generator
seeded by a hash of the prompt; free-text requests get ``Thought: ... Answer: ...`` made of
prompt words, except free-text prompts that quote the NER or extraction JSON keys, which get such
an object (``_ASKED_JSON``). Replies go through the same ``parse_reply`` + retry path as real backends.
``responses`` scripts the raw text instead (to test repair and retries): a list consumed in
order (then the generated reply), or a callable ``(request, attempt) -> str`` that may also
raise to simulate a transport error.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from atomicrag.llm.protocol import ChatRequest
from atomicrag.llm.retry import RawReply, SyncBackend

Responder = Callable[[ChatRequest, int], str]

# Free-text prompts that spell out the JSON object they want (passage/query NER and extraction
# asked without a schema, as the released code asks them: fidelity.extraction_replies=released).
# The fake follows such an instruction as an instruction-following model would, so a pipeline
# run on it still gets atoms; the first key found in the prompt decides (extraction prompts also
# quote the NER key in their entity list).
_STRINGS = {"type": "array", "items": {"type": "string"}, "minItems": 1}
_ASKED_JSON: tuple[tuple[str, dict[str, Any]], ...] = (
    ('"knowledge_fragments"', {
        "type": "object", "required": ["triples", "knowledge_fragments", "fragment_entities"],
        "properties": {"triples": {"type": "array", "items": {"type": "array", "items": {"type": "string"},
                                                                 "minItems": 3, "maxItems": 3}},
                       "knowledge_fragments": _STRINGS,
                       "fragment_entities": {"type": "array", "items": _STRINGS}}}),
    ('"named_entities"', {"type": "object", "required": ["named_entities"],
                          "properties": {"named_entities": _STRINGS}}),
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\-]*")


def count_tokens(text: str) -> int:
    """The fake's tokenizer: whitespace-separated words."""
    return len(text.split())


def prompt_text(request: ChatRequest) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.messages)


def _prompt_words(request: ChatRequest) -> list[str]:
    # Prefer the last user message: that is where the passage/question of a prompt lives.
    users = [m.get("content", "") for m in request.messages if m.get("role") == "user"]
    words = _WORD.findall(users[-1] if users else prompt_text(request))
    return words or ["fake"]


class SchemaSampler:
    """Generate a value that satisfies a (reasonable subset of) JSON schema."""

    def __init__(self, rng: random.Random, words: list[str], root: dict[str, Any]) -> None:
        self.rng = rng
        self.words = words
        self.root = root

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            node: Any = self.root
            for part in ref[2:].split("/"):
                node = node[part]
            return self._resolve(node)
        return schema

    def _phrase(self, lo: int = 1, hi: int = 3) -> str:
        start = self.rng.randrange(len(self.words))
        return " ".join(self.words[start:start + self.rng.randint(lo, hi)])

    def sample(self, schema: Any, depth: int = 0) -> Any:
        if schema is True or not isinstance(schema, dict):
            return self._phrase()
        schema = self._resolve(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [o for o in schema[key] if self._resolve(o).get("type") != "null"]
                return self.sample((options or schema[key])[0], depth)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(self._resolve(part))
            return self.sample(merged, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        return getattr(self, f"_{kind}")(schema, depth)

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        out = {}
        for name, sub in props.items():
            if name in required or (depth < 3 and self.rng.random() < 0.5):
                out[name] = self.sample(sub, depth + 1)
        return out

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        lo = schema.get("minItems", 0)
        hi = max(lo, min(schema.get("maxItems", 3), 3 if depth < 3 else lo))
        sub = schema.get("items", {"type": "string"})
        items: list[Any] = []
        for _ in range(self.rng.randint(lo, hi)):
            item = self.sample(sub, depth + 1)
            for _retry in range(10):  # uniqueItems: draw again rather than emit a duplicate
                if not schema.get("uniqueItems") or item not in items:
                    break
                item = self.sample(sub, depth + 1)
            if item not in items or not schema.get("uniqueItems"):
                items.append(item)
        return items

    def _string(self, schema: dict[str, Any], depth: int) -> str:
        text = self._phrase()
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        while len(text) < lo:
            text += " " + self._phrase()
        return text[:hi] if hi is not None else text

    def _number(self, schema: dict[str, Any], depth: int) -> float:
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 10))
        value = round(self.rng.uniform(lo, hi), 3)
        return min(max(value, lo + 1e-3 if "exclusiveMinimum" in schema else lo),
                   hi - 1e-3 if "exclusiveMaximum" in schema else hi)

    def _integer(self, schema: dict[str, Any], depth: int) -> int:
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 11) - 1)
        return self.rng.randint(int(lo), int(max(lo, hi)))

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None


class FakeLLM(SyncBackend):
    """Deterministic backend: same prompt + schema → same reply, on every machine."""

    continues_replies = True  # a continued reply (ChatRequest.continue_reply) is a few prompt words

    def __init__(
        self,
        model: str = "fake",
        *,
        responses: Responder | Sequence[str] | None = None,
        max_retries: int = 3,
    ) -> None:
        self.model = model
        self.max_retries = max_retries
        self._script = responses
        self._queue = list(responses) if isinstance(responses, Sequence) and not isinstance(
            responses, str) else None
        self._lock = threading.Lock()  # the scripted queue is shared by threads
        self.calls = 0  # generation attempts (tests assert retries with it)

    def _generate(self, request: ChatRequest, attempt: int) -> RawReply:
        with self._lock:
            self.calls += 1
            scripted = self._queue.pop(0) if self._queue else None
        if callable(self._script):
            text = self._script(request, attempt)
        elif scripted is not None:
            text = scripted
        else:
            text = self.generate_text(request)
        return RawReply(
            text=text,
            prompt_tokens=count_tokens(prompt_text(request)),
            completion_tokens=count_tokens(text),
            finish_reason="stop",
            model=self.model,
        )

    @staticmethod
    def generate_text(request: ChatRequest) -> str:
        """The deterministic reply the fake gives when not scripted."""
        key = json.dumps([request.messages, request.schema], sort_keys=True, default=str)
        seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
        rng = random.Random(seed)
        words = _prompt_words(request)
        schema = request.schema
        if schema is None and not request.continue_reply:
            asked = prompt_text(request)
            schema = next((s for key, s in _ASKED_JSON if key in asked), None)
        if schema is not None:
            value = SchemaSampler(rng, words, schema).sample(schema)
            return json.dumps(value)
        start = rng.randrange(len(words))
        answer = " ".join(words[start:start + rng.randint(1, 4)])
        if request.continue_reply:
            return f" {answer}"
        return f"Thought: the passages mention {answer}. Answer: {answer}"
