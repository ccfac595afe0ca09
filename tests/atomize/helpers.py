"""Scripted stand-ins for the atomizer tests."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from atomicrag.core.schemas import Chunk
from atomicrag.llm.protocol import ChatRequest, ChatResult


def chunk(i: int, text: str, title: str = "") -> Chunk:
    return Chunk(id=f"c{i}", passage_id=f"p{i}", text=text, title=title, end_char=len(text))


def is_ner(req: ChatRequest) -> bool:
    if req.schema is None:  # free text (fidelity.extraction_replies=released): the extraction prompt lists entities
        return "\n\nEntities:" not in req.messages[-1]["content"]
    return "named_entities" in req.schema.get("properties", {})


def passage_of(req: ChatRequest) -> str:
    """The passage of the last user message (both prompts put it after 'Passage:')."""
    user = req.messages[-1]["content"]
    return user.split("Passage:\n", 1)[1].split("\n\nEntities:", 1)[0]


class ScriptedLLM:
    """LLMBackend stand-in: ``script(request) -> ChatResult``; records every request."""

    def __init__(self, script: Callable[[ChatRequest], ChatResult], model: str = "scripted") -> None:
        self.script = script
        self.model = model
        self.requests: list[ChatRequest] = []
        self.chat_calls = 0
        self.fail_on_chat_call: int | None = None  # simulate a crash (e.g. the server died)

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        self.chat_calls += 1
        if self.fail_on_chat_call is not None and self.chat_calls >= self.fail_on_chat_call:
            raise KeyboardInterrupt("simulated interruption")
        self.requests.extend(requests)
        return [self.script(r) for r in requests]

    def close(self) -> None:
        pass


def ok(obj: Any) -> ChatResult:
    return ChatResult(text=json.dumps(obj), parsed=obj, finish_reason="stop")


def facts_script(kb: dict[str, dict[str, Any]]) -> Callable[[ChatRequest], ChatResult]:
    """Replies from a table passage -> {"ner": [...], "ext": {...}} (valid JSON objects)."""

    def script(req: ChatRequest) -> ChatResult:
        entry = kb[passage_of(req)]
        return ok({"named_entities": entry["ner"]}) if is_ner(req) else ok(entry["ext"])

    return script


PASSAGE_A = "Teutberga (died 875) was a queen of Lotharingia. She married Lothair II."
PASSAGE_B = "Lothair II was king of Lotharingia from 855 to 869."

KB: dict[str, dict[str, Any]] = {
    PASSAGE_A: {
        "ner": ["Teutberga", "Lotharingia", "Lothair II", "875"],
        "ext": {
            "triples": [["Teutberga", "queen of", "Lotharingia"], ["Teutberga", "married", "Lothair II"]],
            "knowledge_fragments": ["Teutberga died in 875.", "Teutberga was a queen of Lotharingia.",
                                    "Teutberga married Lothair II."],
            "fragment_entities": [["Teutberga", "875"], ["Teutberga", "Lotharingia"], ["Teutberga", "Lothair II"]],
        },
    },
    PASSAGE_B: {
        "ner": ["Lothair II", "Lotharingia", "855", "869"],
        "ext": {
            "triples": [["Lothair II", "king of", "Lotharingia"]],
            "knowledge_fragments": ["Lothair II was king of Lotharingia from 855 to 869."],
            "fragment_entities": [["Lothair II", "Lotharingia", "855", "869"]],
        },
    },
}
