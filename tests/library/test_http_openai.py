"""The server speaks OpenAI as its clients expect (issue 48 item 3): errors in OpenAI's shape
(what the SDKs read their message from), ``usage`` on every completion, the conversation read
(not only its last message), ``sources`` on every answer, the evidence sub-graph for the page."""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from atomicrag.library import http_server
from atomicrag.library.api import AtomicRAG

from .conftest import QUESTIONS, fake_llm_config, save_index, serving

FAKE_LLM = fake_llm_config()


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_index(tmp_path_factory.mktemp("built") / "idx", reader={"name": "precise"})


@pytest.fixture()
def served(built_index: Path, tmp_path: Path) -> Iterator[str]:
    shutil.copytree(built_index, tmp_path / "idx")
    with serving(tmp_path / "idx") as httpd:
        yield httpd.url


def chat(url: str, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json={"model": "atomicrag", "messages": messages, **extra},
                      timeout=60)


def test_errors_have_openai_shape(served: str) -> None:
    """``{"error": {"message", "type", "param", "code"}}``: the OpenAI SDKs build their exception's
    message, ``param`` and ``code`` from it (a bare string there left only "Error code: 400")."""
    resp = chat(served, [{"role": "user", "content": 5}])
    assert resp.status_code == 400
    assert resp.json() == {"error": {"message": "messages[0].content must be a string or a list of content parts",
                                     "type": "invalid_request_error", "param": "messages[0].content",
                                     "code": None}}
    resp = httpx.get(f"{served}/v1/chat/completions")
    assert resp.status_code == 405 and resp.headers["allow"] == "POST"
    assert resp.json()["error"]["code"] == "method_not_allowed"


def test_the_openai_sdk_sees_messages_and_usage(served: str) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{served}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="atomicrag", messages=[{"role": "system", "content": "x"}])
    assert 'no message with role "user"' in str(info.value) and info.value.param == "messages"
    done = client.chat.completions.create(model="atomicrag", messages=[{"role": "user", "content": QUESTIONS[1]}])
    assert done.usage is not None and done.usage.total_tokens > 0


def test_usage_counts_the_tokens_of_the_request(served: str, built_index: Path) -> None:
    with AtomicRAG.load(built_index, config=FAKE_LLM) as rag:  # the same question alone, in a fresh process' state
        rag.query(QUESTIONS[1], answer=True)
        spent = rag.accountant.total()
    reply = chat(served, [{"role": "user", "content": QUESTIONS[1]}]).json()
    usage = reply["usage"]
    assert usage["prompt_tokens"] == spent.prompt_tokens > 0
    assert usage["completion_tokens"] == spent.completion_tokens > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    again = chat(served, [{"role": "user", "content": QUESTIONS[1]}]).json()["usage"]  # per request, not a total
    assert again["total_tokens"] == usage["total_tokens"]
    with httpx.stream("POST", f"{served}/v1/chat/completions", timeout=60,
                      json={"messages": [{"role": "user", "content": QUESTIONS[1]}], "stream": True}) as resp:
        events = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: {")]
    assert events[-1]["usage"]["total_tokens"] == usage["total_tokens"]
    query = httpx.post(f"{served}/query", json={"question": QUESTIONS[1]}, timeout=60).json()
    assert query["usage"]["total_tokens"] == usage["total_tokens"]


def test_every_answer_has_sources(served: str, built_index: Path) -> None:
    """An answer that cites no line and whose text is in none (a small model paraphrasing, in the
    issue) came with ``sources: []``; it now lists the documents the reader was given, marked
    ``retrieved``; an answer the library cites keeps its own sources."""
    from atomicrag.library.index_service import RETRIEVED_SOURCES, with_sources

    context = [{"passage_id": d, "title": d.title()} for d in ("curie", "warsaw", "curie", "paris", "vienna")]
    bare = with_sources({"answer": "somewhere", "sources": [], "context": context})
    assert [(x["doc_id"], x["how"]) for x in bare["sources"]] == [("curie", "retrieved"), ("warsaw", "retrieved"),
                                                                  ("paris", "retrieved")][:RETRIEVED_SOURCES]
    assert bare["sources"][0]["context"] == [1, 3] and [x["n"] for x in bare["sources"]] == [1, 2, 3]
    cited = {"answer": "Warsaw", "sources": [{"n": 1, "doc_id": "warsaw", "how": "cited"}], "context": context}
    assert with_sources(cited) == cited
    assert with_sources({"answer": None, "sources": [], "context": context})["sources"] == []
    for q in QUESTIONS:  # through the server: the library's own sources, else the documents it read
        with AtomicRAG.load(built_index, config=FAKE_LLM) as rag:
            lib = with_sources(rag.query(q, answer=True).to_dict())
        got = httpx.post(f"{served}/query", json={"question": q}, timeout=60).json()["results"][0]
        assert got["sources"] and [s["doc_id"] for s in got["sources"]] == [s["doc_id"] for s in lib["sources"]], q
    reply = chat(served, [{"role": "user", "content": QUESTIONS[0]}]).json()
    assert reply["atomicrag"]["sources"]
    search = httpx.post(f"{served}/search", json={"question": QUESTIONS[0]}, timeout=60).json()["results"][0]
    assert search["answer"] is None and search["sources"] == []  # no answer, no sources claimed


def test_a_follow_up_is_read_with_the_conversation(served: str) -> None:
    """"Where did he move?" alone names nobody; after a turn about Freud it retrieves Freud's
    document first (the last message, with the earlier turns as context)."""
    alone = chat(served, [{"role": "user", "content": "Where did he move?"}]).json()
    follow = chat(served, [{"role": "user", "content": "Who founded psychoanalysis?"},
                           {"role": "assistant", "content": "Sigmund Freud."},
                           {"role": "user", "content": "Where did he move?"}]).json()
    assert "freud" not in alone["atomicrag"]["documents"][:3]
    assert follow["atomicrag"]["documents"][0] == "freud"
    assert follow["atomicrag"]["query"].startswith("Where did he move?")
    long = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "x" * 1000} for i in range(9)]
    asked = http_server.conversation_question(long + [{"role": "user", "content": "Last?"}])
    assert asked.startswith("Last?") and "turn 8" in asked and "turn 4" not in asked  # the last turns, cut
    assert len(asked) < 5 * (http_server.HISTORY_CHARS + 20)


def test_query_returns_the_evidence_subgraph(served: str) -> None:
    r = httpx.post(f"{served}/query", json={"question": QUESTIONS[0], "graph": True, "answer": False},
                   timeout=60).json()["results"][0]
    g = r["subgraph"]
    ids = {n["id"] for n in g["nodes"]}
    atoms = [n for n in g["nodes"] if n["kind"] == "atom"]
    assert [n["label"] for n in atoms] == [i["text"] for i in r["items"]]  # the result's atoms, in rank order
    assert [n["rank"] for n in atoms] == list(range(1, len(atoms) + 1))
    seeds = [n["label"] for n in g["nodes"] if n["seed"]]
    assert seeds and set(seeds) <= set(r["entities_extracted"])  # the question's entities in the graph
    assert all(e["source"] in ids and e["target"] in ids for e in g["edges"])
    contained = {(e["source"], e["target"]) for e in g["edges"] if e["type"] == "containment"}
    for item, node in zip(r["items"], atoms):  # each atom is linked to the entities it names
        names = {n["label"] for n in g["nodes"] if (n["id"], node["id"]) in contained}
        assert names and names <= set(item["entity_names"]) | set(seeds), item["text"]
    assert "subgraph" not in httpx.post(f"{served}/search", json={"question": QUESTIONS[0]}).json()["results"][0]
