"""Issue 19, item 7: every schema the pipeline sends passes OpenAI's strict mode, ``strict: true`` is
sent, and a strict-mode rejection is a failure, never a silent switch to unconstrained JSON."""
from __future__ import annotations

import json

import pytest
from llm_stub_server import StubServer, completion
from openai_strict import check_request, strict_violations

from atomicrag.llm.openai_client import OpenAIClient
from atomicrag.llm.protocol import ChatRequest
from atomicrag.prompts import decompose, extraction, judge, ner, sieve, vocabulary

SCHEMAS = {"ner": ner.SCHEMA, "extraction": extraction.SCHEMA, "decompose": decompose.SCHEMA,
           "sieve": sieve.SCHEMA, "vocabulary": vocabulary.SCHEMA,
           "judge.statements": judge.SCHEMA["statements"], "judge.classify": judge.SCHEMA["classify"]}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_prompt_schema_is_valid_under_strict_mode(name: str) -> None:
    assert strict_violations(SCHEMAS[name]) == []


def test_the_fake_rejects_what_openai_rejects() -> None:
    loose = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert any("additionalProperties" in v for v in strict_violations(loose))
    optional = {**loose, "additionalProperties": False, "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    assert any("missing ['b']" in v for v in strict_violations(optional))
    nested = {"type": "object", "additionalProperties": False, "required": ["x"],
              "properties": {"x": {"type": "array", "items": {"type": "object", "properties": {}}}}}
    assert any("root.x[]" in v for v in strict_violations(nested))


def _client(stub: StubServer) -> OpenAIClient:
    return OpenAIClient(stub.base_url, "stub-model", api_key_env="ATOMICRAG_TEST_KEY", backoff_base_s=0.01,
                        max_retries=1)


def _openai(stub: StubServer, reply: str) -> None:
    def responder(body, n):
        rejected = check_request(body)
        return (*rejected, 0.0) if rejected is not None else (200, completion(reply), 0.0)

    stub.responder = responder


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_pipeline_schemas_are_accepted_with_strict_true(stub: StubServer, name: str) -> None:
    _openai(stub, "{}")
    [r] = _client(stub).chat([ChatRequest(messages=[{"role": "user", "content": "x"}], schema=SCHEMAS[name])])
    sent = stub.bodies[-1]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    # OpenAI's strict mode (mimicked by check_request) accepts every request that went out; the
    # stub's "{}" reply may then fail the schema, which is the client's check, not a rejection
    assert stub.bodies and [check_request(b) for b in stub.bodies] == [None] * len(stub.bodies)
    assert r.ok or "does not match the schema" in str(r.error)


def test_a_strict_rejection_fails_loudly_without_falling_back(stub: StubServer) -> None:
    _openai(stub, '{"a": "x"}')
    loose = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    [r] = _client(stub).chat([ChatRequest(messages=[{"role": "user", "content": "x"}], schema=loose)])
    assert not r.ok and "Invalid schema" in str(r.error)
    # every request that went out was strict json_schema: no retry without the schema
    assert all(b["response_format"]["type"] == "json_schema" for b in stub.bodies)
    assert json.dumps(stub.bodies[0]["response_format"]["json_schema"]["schema"]) == json.dumps(loose)
