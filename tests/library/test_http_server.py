"""``atomicrag serve --index``: one process holds the index and answers HTTP. Every endpoint is
hit on a real socket (port 0, fake models) and its results are compared with the library's."""
from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from atomicrag.library import http_server
from atomicrag.library.api import AtomicRAG
from atomicrag.library.cli import main

from .conftest import DOCS, QUESTIONS, fake_llm_config, save_index, serving

FAKE_LLM = fake_llm_config()


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_index(tmp_path_factory.mktemp("built") / "idx", reader={"name": "precise"})


@pytest.fixture()
def index_dir(built_index: Path, tmp_path: Path) -> Path:
    """A private copy of the index built once for the module (tests write to it)."""
    shutil.copytree(built_index, tmp_path / "idx")
    return tmp_path / "idx"


@pytest.fixture()
def served(index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("ATOMICRAG_STATE_DIR", str(tmp_path / "state"))
    with serving(index_dir) as httpd:
        yield httpd.url


def same_retrieval(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert [(i["atom_id"], round(i["score"], 6)) for i in got["items"]] == \
        [(i["atom_id"], round(i["score"], 6)) for i in want["items"]]
    assert got["documents"] == want["documents"] and got["query"] == want["query"]


def test_query_and_search_equal_the_library(served: str, index_dir: Path) -> None:
    with AtomicRAG.load(index_dir, config=FAKE_LLM) as rag:
        want = [r.to_dict() for r in rag.query(QUESTIONS)]
        want_search = [r.to_dict() for r in rag.search(QUESTIONS)]
    got = httpx.post(f"{served}/query", json={"questions": QUESTIONS}, timeout=60).json()["results"]
    assert len(got) == len(QUESTIONS)
    for g, w in zip(got, want):
        same_retrieval(g, w)
        assert g["answer"] == w["answer"] and g["answer"]  # the reader ran on both sides
    got = httpx.post(f"{served}/search", json={"questions": QUESTIONS}, timeout=60).json()["results"]
    for g, w in zip(got, want_search):
        same_retrieval(g, w)
        assert g["answer"] is None
    one = httpx.post(f"{served}/query", json={"question": QUESTIONS[0], "answer": False, "top": 2}).json()
    assert len(one["results"]) == 1 and one["results"][0]["answer"] is None
    assert [i["atom_id"] for i in one["results"][0]["items"]] == [i["atom_id"] for i in want[0]["items"][:2]]


def test_health_stats_insert_delete_persist(served: str, index_dir: Path) -> None:
    health = httpx.get(f"{served}/health").json()
    assert health == {"status": "ok", "index": str(index_dir.resolve()), "documents": len(DOCS),
                      "pid": health["pid"]}
    assert httpx.get(f"{served}/stats").json()["documents"] == len(DOCS)
    new = {"doc_id": "tesla", "title": "Nikola Tesla",
           "text": "Nikola Tesla was born in Smiljan. Nikola Tesla moved to New York in 1884."}
    resp = httpx.post(f"{served}/insert", json={"documents": [new]}, timeout=60)
    assert resp.status_code == 200 and resp.json()["inserted"] == ["tesla"]
    hit = httpx.post(f"{served}/search", json={"question": "Where was Nikola Tesla born?"}).json()["results"][0]
    assert "tesla" in hit["documents"][:3]
    with AtomicRAG.load(index_dir, config=FAKE_LLM) as rag:  # saved at once: the folder is what the server answers from
        assert "tesla" in rag and len(rag) == len(DOCS) + 1
    again = httpx.post(f"{served}/insert", json={"documents": [new]})
    assert again.status_code == 400 and "duplicate document id 'tesla'" in again.json()["error"]["message"]
    resp = httpx.post(f"{served}/delete", json={"doc_ids": ["tesla", "curie"]}, timeout=60)
    assert resp.json() == {"deleted": 2, "documents": len(DOCS) - 1}
    with AtomicRAG.load(index_dir, config=FAKE_LLM) as rag:
        assert "tesla" not in rag and "curie" not in rag
    missing = httpx.post(f"{served}/delete", json={"doc_ids": ["nope"]})
    assert missing.status_code == 400 and "nope" in missing.json()["error"]["message"]


def test_bad_requests_get_clear_errors(served: str) -> None:
    cases = [("/query", b"not json", 400, "not JSON"), ("/query", b'{"questions": "x"}', 400, '"questions"'),
             ("/query", b'{"question": "  "}', 400, "empty"), ("/nowhere", b"{}", 404, "no POST /nowhere"),
             ("/v1/chat/completions", b'{"messages": []}', 400, '"messages"'),
             ("/insert", b'{"documents": [3]}', 400, "string or an object")]
    for path, body, status, text in cases:
        resp = httpx.post(f"{served}{path}", content=body, headers={"Content-Type": "application/json"})
        assert resp.status_code == status and text in resp.json()["error"]["message"], (path, resp.text)
    assert httpx.get(f"{served}/nope").status_code == 404


def test_openai_chat_completions_and_streaming(served: str, index_dir: Path) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi."}, {"role": "user", "content": QUESTIONS[0]}]
    asked = http_server.conversation_question(messages)  # the last question, the turns before as context
    assert asked.startswith(QUESTIONS[0]) and "user: Hello | assistant: Hi." in asked and "Be brief" not in asked
    with AtomicRAG.load(index_dir, config=FAKE_LLM) as rag:
        want_chat = rag.query(asked, answer=True)
        want = rag.query(QUESTIONS[0], answer=True)
    models = httpx.get(f"{served}/v1/models").json()
    assert [m["id"] for m in models["data"]] == [http_server.MODEL_ID]
    reply = httpx.post(f"{served}/v1/chat/completions", json={"model": "atomicrag", "messages": messages},
                       timeout=60).json()
    assert reply["object"] == "chat.completion"
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": want_chat.answer}
    assert reply["atomicrag"]["documents"] == want_chat.documents  # the sources come with the answer
    with httpx.stream("POST", f"{served}/v1/chat/completions", timeout=60,
                      json={"messages": [{"role": "user", "content": [{"type": "text", "text": QUESTIONS[0]}]}],
                            "stream": True}) as resp:
        assert resp.headers["content-type"] == "text/event-stream"
        events = [line[len("data: "):] for line in resp.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    streamed = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert streamed.startswith(want.answer)  # the answer as written (a citation may follow it)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["atomicrag"]["answer"] == want.answer and chunks[-1]["atomicrag"]["documents"] == want.documents


def test_a_streaming_reader_is_streamed_token_by_token(index_dir: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With an LLM that streams, the answer after "Answer:" reaches the client in many chunks, each
    sent as the reader writes it (not once the reply is complete); the reasoning before it is not."""
    from atomicrag.llm.fake import FakeLLM
    from atomicrag.llm.protocol import ChatResult

    released = threading.Event()
    sent: list[str] = []

    class Streaming(FakeLLM):
        def stream(self, request):  # what OpenAIClient.stream does over SSE
            reply = "Thought: the passage says so.\nAnswer: Warsaw, in the Kingdom of Poland"
            for i in range(0, len(reply), 4):
                sent.append(reply[i:i + 4])
                if len(sent) == 18:  # hold the model here until the client has seen a first token
                    assert released.wait(30)
                yield reply[i:i + 4]
            return ChatResult(text=reply, finish_reason="stop", completion_tokens=12)

    monkeypatch.setenv("ATOMICRAG_STATE_DIR", str(tmp_path / "state"))
    rag = AtomicRAG.load(index_dir, llm=Streaming())
    httpd = http_server.make_server(rag, index_dir, port=0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        contents: list[str] = []
        with httpx.stream("POST", f"{httpd.url}/v1/chat/completions", timeout=60,
                          json={"messages": [{"role": "user", "content": QUESTIONS[0]}], "stream": True}) as resp:
            for line in resp.iter_lines():
                if line.startswith("data: {"):
                    c = json.loads(line[len("data: "):])
                    if c["choices"][0]["delta"].get("content"):
                        contents.append(c["choices"][0]["delta"]["content"])
                        released.set()  # a token arrived while the model was still writing
                    last = c
    finally:
        httpd.shutdown()
        httpd.server_close()
        rag.close()
    assert released.is_set() and len(contents) > 3
    assert "".join(contents) == "Warsaw, in the Kingdom of Poland" and "Thought" not in "".join(contents)
    assert last["choices"][0]["finish_reason"] == "stop" and last["atomicrag"]["answer"]


def test_openai_client_library_talks_to_it(served: str, index_dir: Path) -> None:
    """The project's own OpenAI-compatible client (what any OpenAI SDK does) gets the answer."""
    from atomicrag.llm.openai_client import OpenAIClient
    from atomicrag.llm.protocol import ChatRequest

    with AtomicRAG.load(index_dir, config=FAKE_LLM) as rag:
        want = rag.query(QUESTIONS[1], answer=True).answer
    client = OpenAIClient(f"{served}/v1", http_server.MODEL_ID, max_retries=0)
    try:
        out = client.chat([ChatRequest(messages=[{"role": "user", "content": QUESTIONS[1]}])])
    finally:
        client.close()
    assert out[0].text == want


def test_cli_query_uses_a_running_server_and_falls_back(index_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ATOMICRAG_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ATOMICRAG_LLM", "fake")  # the server's LLM is the user's choice, not the index's
    assert main(["query", QUESTIONS[0], "--index", str(index_dir), "--no-answer"]) == 0
    loaded = capsys.readouterr().out
    ready = threading.Event()
    thread = threading.Thread(target=lambda: http_server.serve_index(index_dir, port=0), daemon=True)
    real_make = http_server.make_server
    holder: dict[str, Any] = {}

    def make(*a: Any, **k: Any) -> Any:
        holder["httpd"] = real_make(*a, **k)
        ready.set()
        return holder["httpd"]

    monkeypatch.setattr(http_server, "make_server", make)
    thread.start()
    assert ready.wait(60)
    for _ in range(100):
        if http_server.read_server_state(index_dir):
            break
        threading.Event().wait(0.05)
    assert http_server.find_index_server(index_dir) == holder["httpd"].url
    loads: list[Any] = []
    monkeypatch.setattr(AtomicRAG, "load", classmethod(lambda cls, *a, **k: loads.append(a) or 1 / 0))
    capsys.readouterr()
    assert main(["query", QUESTIONS[0], "--index", str(index_dir), "--no-answer"]) == 0
    assert capsys.readouterr().out == loaded and not loads  # same output, and the index was not loaded here
    holder["httpd"].shutdown()
    thread.join(30)
    assert http_server.read_server_state(index_dir) is None  # the server removed its record on exit
    monkeypatch.undo()
    monkeypatch.setenv("ATOMICRAG_STATE_DIR", str(tmp_path / "state"))
    # a stale record (a killed server) is detected, removed, and the command loads the index
    http_server._write_state(index_dir, "http://127.0.0.1:9", 9)
    assert main(["query", QUESTIONS[0], "--index", str(index_dir), "--no-answer"]) == 0
    assert capsys.readouterr().out == loaded
    assert http_server.read_server_state(index_dir) is None


def test_a_result_sent_by_the_server_keeps_its_sources_and_cut_flag() -> None:
    """What the CLI prints from a server's answer (sources with their numbers, a cut answer) survives
    the JSON round trip."""
    from atomicrag.answer.citations import Source
    from atomicrag.library.types import QueryResult

    sent = QueryResult(query="q", answer="Warsaw", cited_answer="Warsaw [1]", answer_cut=True,
                       sources=[Source(n=1, doc_id="curie", title="Marie Curie", how="cited")])
    got = http_server.result_from_dict(json.loads(json.dumps(sent.to_dict())))
    assert got.sources == sent.sources and got.answer_cut and got.cited_answer == "Warsaw [1]"


def test_replies_are_not_held_back_by_nagle(served: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each connection the server accepts has TCP_NODELAY: a keep-alive reply goes out as headers
    then body, and with Nagle on the body waited for the client's delayed ACK (~40 ms a request,
    more than the retrieval: results/server/bench_server_retrieval.json)."""
    import socket

    seen: list[int] = []
    setup = http_server._Handler.setup

    def recording_setup(self: Any) -> None:
        setup(self)
        seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(http_server._Handler, "setup", recording_setup)
    with httpx.Client() as client:
        for _ in range(2):
            assert client.post(f"{served}/search", json={"question": QUESTIONS[0]}).status_code == 200
    assert seen and all(seen)
