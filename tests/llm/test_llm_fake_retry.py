"""FakeLLM determinism, schema sampling, and the shared retry/repair path."""
from __future__ import annotations

import jsonschema

from atomicrag.llm.fake import FakeLLM, SchemaSampler, count_tokens
from atomicrag.llm.protocol import ChatRequest

SCHEMA = {
    "type": "object",
    "properties": {
        "named_entities": {"type": "array", "items": {"type": "string"}},
        "score": {"type": "number", "minimum": 0, "maximum": 10},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "complex": {"type": "boolean"},
        "kind": {"enum": ["person", "place"]},
        "nested": {"$ref": "#/$defs/Triple"},
        "maybe": {"anyOf": [{"type": "null"}, {"type": "string"}]},
    },
    "required": ["named_entities", "score", "count", "complex", "kind", "nested", "maybe"],
    "$defs": {
        "Triple": {
            "type": "object",
            "properties": {"s": {"type": "string"}, "o": {"type": "string"}},
            "required": ["s", "o"],
            "additionalProperties": False,
        }
    },
}


def _req(text: str, schema: dict | None = SCHEMA, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": text}], schema=schema, **kw)


def test_fake_is_deterministic_and_schema_valid() -> None:
    llm = FakeLLM()
    texts = [f"Barack Obama visited Paris in {y} with Michelle" for y in range(20)]
    a = llm.chat([_req(t) for t in texts])
    b = FakeLLM().chat([_req(t) for t in texts])
    assert [r.parsed for r in a] == [r.parsed for r in b]
    for r in a:
        assert r.ok and r.attempts == 1
        jsonschema.validate(r.parsed, SCHEMA)
        for e in r.parsed["named_entities"]:
            assert set(e.split()) <= {"Barack", "Obama", "visited", "Paris", "in", "with", "Michelle"}
    assert len({str(r.parsed) for r in a}) > 1  # different prompts, different objects


def test_fake_free_text_and_token_counts() -> None:
    [r] = FakeLLM().chat([_req("Who wrote Hamlet ? Shakespeare did", schema=None)])
    assert r.ok and r.parsed is None
    assert r.text.startswith("Thought:") and "Answer:" in r.text
    assert r.prompt_tokens == count_tokens("Be brief.\nWho wrote Hamlet ? Shakespeare did") == 8
    assert r.completion_tokens == len(r.text.split())


def test_schema_sampler_respects_bounds() -> None:
    import random

    s = {"type": "array", "items": {"type": "string", "minLength": 5}, "minItems": 2, "maxItems": 2,
         "uniqueItems": True}
    for seed in range(30):
        v = SchemaSampler(random.Random(seed), ["alpha", "beta", "gamma"], s).sample(s)
        jsonschema.validate(v, s)


def test_scripted_malformed_reply_is_repaired_without_retry() -> None:
    llm = FakeLLM(responses=['Here you go:\n```json\n{"named_entities": ["Paris",]}\n```'])
    schema = {"type": "object", "properties": {"named_entities": {"type": "array"}},
              "required": ["named_entities"]}
    [r] = llm.chat([_req("x", schema=schema)])
    assert r.ok and r.parsed == {"named_entities": ["Paris"]} and r.attempts == 1


def test_retry_then_success_counts_all_tokens() -> None:
    llm = FakeLLM(responses=["garbage one", "still garbage", '{"named_entities": []}'])
    schema = {"type": "object", "required": ["named_entities"]}
    [r] = llm.chat([_req("a b c", schema=schema)])
    assert r.ok and r.attempts == 3 and llm.calls == 3
    assert r.completion_tokens == 2 + 2 + 2  # tokens of failed attempts were spent too


def test_retry_exhausted_sets_error_and_no_parsed() -> None:
    seen = []

    def always_bad(req: ChatRequest, attempt: int) -> str:
        seen.append((attempt, req.temperature, req.seed))
        return "I cannot answer in JSON."

    llm = FakeLLM(responses=always_bad, max_retries=2)
    [r] = llm.chat([_req("q", schema={"type": "object", "required": ["a"]})])
    assert not r.ok and r.parsed is None and r.attempts == 3
    assert "failed after 3 attempt(s)" in r.error and "no parseable JSON" in r.error
    # Retries after a parse failure sample a little, seeded: reproducible but not identical.
    assert seen[0] == (0, 0.0, 0) and seen[1][1] > 0 and seen[1][2] != seen[2][2]


def test_generation_exception_is_retried_then_reported() -> None:
    def boom(req: ChatRequest, attempt: int) -> str:
        if attempt < 1:
            raise ConnectionError("server went away")
        return "fine answer"

    [r] = FakeLLM(responses=boom).chat([_req("q", schema=None)])
    assert r.ok and r.attempts == 2
    [r] = FakeLLM(responses=lambda req, a: "", max_retries=1).chat([_req("q", schema=None)])
    assert not r.ok and "empty reply" in r.error
