"""Answers with sources, answers cut by the budget, streaming and the async API (fake models)."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from atomicrag import AtomicRAG
from atomicrag.answer.citations import cite, cited_numbers, with_marks
from atomicrag.llm.fake import FakeLLM
from atomicrag.llm.protocol import ChatRequest, ChatResult

from .conftest import DOCS, base_config


def _cited_reply(request: ChatRequest, attempt: int) -> str:
    """Cites the context line that names Warsaw, as a reader following our prompt does."""
    user = request.messages[-1]["content"]
    line = next(ln for ln in user.splitlines() if "born in Warsaw" in ln)
    n = line[1:line.index("]")]
    return f"Thought: She was born in Warsaw [{n}], the capital of Poland [99]. Answer: Warsaw [{n}]."


class _CutLLM:
    """A backend whose replies all stop at max_tokens before "Answer:"."""

    model = "cut"

    def chat(self, requests: list[ChatRequest]) -> list[ChatResult]:
        return [ChatResult(text="Thought: Marie Curie was born in", finish_reason="length") for _ in requests]


def _rag(llm: Any) -> AtomicRAG:
    rag = AtomicRAG(base_config(reader={"name": "precise"}), llm=llm, progress=False)
    return rag.index(DOCS)


def test_citation_numbers_and_fallback() -> None:
    assert cited_numbers("a [2] b [1, 3] c [2-4] d [0] e [7]", limit=5) == [2, 1, 3, 4]
    ctx = [{"passage_id": "curie", "title": "Marie Curie", "text": "Marie Curie was born in Warsaw."},
           {"passage_id": "warsaw", "title": "", "text": "Warsaw is the capital of Poland."},
           {"passage_id": "curie", "title": "Marie Curie", "text": "She moved to Paris."}]
    sources = cite("Thought: [3] then [1] and [2]. Answer: Warsaw", "Warsaw", ctx, seen=2)
    assert [(s.n, s.doc_id, s.context, s.how) for s in sources] == [(1, "curie", [1], "cited"),
                                                                     (2, "warsaw", [2], "cited")]
    # no marks (e.g. the released layout): the lines that contain the answer, marked as matched
    matched = cite("Thought: see above. Answer: Warsaw", "Warsaw", ctx)
    assert [(s.doc_id, s.context, s.how) for s in matched] == [("curie", [1], "matched"), ("warsaw", [2], "matched")]
    assert cite("no marks", "Lisbon", ctx) == []
    assert with_marks("Warsaw", sources) == "Warsaw [1][2]" and with_marks("", sources) == ""


def test_answer_carries_its_sources() -> None:
    with _rag(FakeLLM(responses=_cited_reply)) as rag:
        r = rag.query("Where was Marie Curie born?")
    assert r.answer == "Warsaw" and not r.answer_cut
    assert [(s.n, s.doc_id, s.title) for s in r.sources] == [(1, "curie", "Marie Curie")]  # [99] was no line
    assert r.cited_answer == "Warsaw [1]"
    assert r.to_dict()["sources"][0]["doc_id"] == "curie"


def test_answer_cut_by_the_budget_is_reported_as_cut() -> None:
    with _rag(_CutLLM()) as rag:
        r = rag.query("Where was Marie Curie born?")
    # reported as cut; the model gave no answer, so the answer is the best-supported retrieved
    # sentence, marked extractive with its one source (tests/answer/test_loops_extractive.py)
    assert r.answer_cut and not r.answer_looped and r.extractive
    assert r.answer == "Marie Curie was born in Warsaw in 1867." and [s.how for s in r.sources] == ["extractive"]


def test_streaming_yields_the_reply_and_ends_with_the_same_result() -> None:
    with _rag(FakeLLM(responses=_cited_reply)) as rag:
        whole = rag.query("Where was Marie Curie born?")
        stream = rag.query("Where was Marie Curie born?", stream=True)
        chunks = list(stream)
        assert "".join(chunks).endswith("Answer: Warsaw [" + whole.sources[0].context[0].__str__() + "].")
        assert stream.result is not None and stream.result.answer == whole.answer
        assert stream.result.sources == whole.sources and stream.result.items == whole.items
        with pytest.raises(TypeError):
            rag.query(["a?", "b?"], stream=True)
        with pytest.raises(ValueError, match="empty"):
            rag.query_stream("   ")


def test_stream_goes_through_a_backend_that_streams() -> None:
    class Streaming(FakeLLM):
        def stream(self, request: ChatRequest):  # what OpenAIClient.stream does over SSE
            text = _cited_reply(request, 0)
            for i in range(0, len(text), 5):
                yield text[i:i + 5]
            return ChatResult(text=text, finish_reason="stop", completion_tokens=3)

    with _rag(Streaming()) as rag:
        stream = rag.query_stream("Where was Marie Curie born?")
        chunks = list(stream)
        usage = rag.stats()["llm_usage"]
    assert len(chunks) > 3 and stream.result.answer == "Warsaw"
    assert stream.result.cited_answer == "Warsaw [1]"
    assert usage.get("completion_tokens", 0) >= 3  # the streamed call was accounted


def test_async_query_and_search() -> None:
    async def main(rag: AtomicRAG) -> tuple[Any, Any, list[str]]:
        a, s = await asyncio.gather(rag.aquery("Where was Marie Curie born?"), rag.asearch("Where is Bern?"))
        chunks = [c async for c in rag.aquery_stream("Where was Marie Curie born?")]
        return a, s, chunks

    with _rag(FakeLLM(responses=_cited_reply)) as rag:
        a, s, chunks = asyncio.run(main(rag))
    assert a.answer == "Warsaw" and s.answer is None and s.items
    assert "Answer: Warsaw" in "".join(chunks)


def test_cli_says_an_answer_was_cut_and_exits_nonzero(tmp_path, monkeypatch, capsys) -> None:
    import json

    import yaml

    from atomicrag.library.cli import main
    from atomicrag.llm.retry import RawReply

    class CutFake(FakeLLM):
        def _generate(self, request: ChatRequest, attempt: int) -> RawReply:
            return RawReply(text="Thought: Marie Curie was born in", finish_reason="length", model=self.model)

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": d["doc_id"], "text": d["text"]}) + "\n" for d in DOCS[:4]))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(base_config()))
    idx = tmp_path / "idx"
    assert main(["-q", "index", str(docs), "--out", str(idx), "--config", str(cfg)]) == 0
    capsys.readouterr()
    monkeypatch.setattr("atomicrag.llm.factory.build_backend", lambda cfg, paths: CutFake(cfg.model))
    code = main(["query", "Where was Marie Curie born?", "--index", str(idx), "--set", "reader.name=precise", "-q"])
    out, err = capsys.readouterr()
    assert code != 0 and "cut by the token budget" in out and "reader.max_tokens" in err
    assert "A: \n" not in out


def test_export_is_written_with_the_umask_mode(tmp_path) -> None:
    import os
    import stat

    from atomicrag.library.export import _atomic_write

    old = os.umask(0o022)
    try:
        out = tmp_path / "graph.json"
        _atomic_write(out, lambda tmp: tmp.write_text("{}"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # was 0600 (mkstemp's mode)


def test_a_query_leaves_no_cache_folder_in_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    """The library's LLM cache goes to the user's cache folder, not ./cache of wherever it runs."""
    from atomicrag import AtomicRAG

    work, home = tmp_path / "work", tmp_path / "xdg"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    with AtomicRAG({"llm": {"option": "fake", "cache": True}, "embedder": "fake", "reader": {"name": "precise"}},
                   progress=False) as rag:
        rag.index(["Marie Curie was born in Warsaw.", "Warsaw is the capital of Poland."])
        assert rag.query("Where was Marie Curie born?").answer is not None
    assert list(work.iterdir()) == []
    assert (home / "atomicrag" / "llm_cache.sqlite").is_file()
