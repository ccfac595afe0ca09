"""Issue #48 item 2: a reply that loops over copied context lines until the budget is read up to
its loop (and followed up from there), a larger budget is advised only when it would help, and
when the model gives no answer the best-supported retrieved sentence is the answer, marked as
extractive, with its document as the source."""
from __future__ import annotations

from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.answer.extractive import best_sentence
from atomicrag.answer.loops import loop_start, without_loop
from atomicrag.answer.readers import LLMReader, reader_summary
from atomicrag.core.config import ReaderConfig
from atomicrag.library.cli import main
from atomicrag.llm.protocol import ChatResult
from tests.library.conftest import DOCS, base_config

LOOP = ("Thought: The Vistula River flows through Warsaw [1].\n"
        + "Warsaw is the capital of Poland [1].\n" * 30 + "Warsaw is the capi")


class Replies:
    """A backend whose replies are scripted per call: ``script(request) -> ChatResult``."""

    model = "scripted"

    def __init__(self, script):
        self.script = script
        self.requests = []

    def chat(self, requests):
        self.requests.extend(requests)
        return [self.script(r) for r in requests]


def test_a_repeated_line_is_a_loop_and_a_restatement_is_not() -> None:
    start = loop_start(LOOP)
    assert start is not None and LOOP[:start].rstrip().endswith("Warsaw is the capital of Poland [1].")
    assert without_loop(LOOP)[0].count("capital of Poland") == 1
    assert loop_start("Thought: Bern [1].\nAnswer: Bern\nAnswer: Bern") is None  # short lines
    assert loop_start("Thought: a.\nWarsaw is the capital of Poland.\nWarsaw is the capital of Poland.") is None
    assert loop_start("Thought: The falls are in Switzerland, whose capital is Bern.\nAnswer: Bern") is None


def test_a_looped_cut_reply_is_read_up_to_its_loop() -> None:
    looped_answer = "Thought: x [1].\n" + "Answer: The Vistula River [1]\n" * 20 + "Answer: The Vis"
    llm = Replies(lambda r: ChatResult(text=looped_answer, finish_reason="length"))
    out = LLMReader(llm, "precise", ReaderConfig(answer_followup="none")).answer(["q"], [["ctx"]])[0]
    assert out.truncated and out.looped and out.answer == "The Vistula River [1]"
    assert reader_summary([out])["looped"] == 1


def test_a_looped_reply_without_an_answer_is_followed_up_from_before_the_loop() -> None:
    def script(request):
        if request.max_tokens == ReaderConfig().followup_max_tokens:  # the follow-up call
            return ChatResult(text="Warsaw", finish_reason="stop")
        return ChatResult(text=LOOP, finish_reason="length")

    llm = Replies(script)
    out = LLMReader(llm, "precise", ReaderConfig(answer_followup="ask")).answer(["Where?"], [["ctx"]])[0]
    assert out.looped and out.answer == "Warsaw" and out.followup == "ask"
    sent = llm.requests[1].messages[-2]["content"]  # the reply so far, as the follow-up shows it
    assert sent.count("capital of Poland") == 1


def test_best_supported_sentence() -> None:
    ctx = [{"text": "Poland borders Germany. Krakow is a city in Poland.", "passage_id": "poland"},
           {"text": "The Vistula River flows through Krakow and Warsaw.", "passage_id": "vistula"}]
    best = best_sentence("Which river flows through Krakow?", ctx)
    assert best is not None and best.sentence == "The Vistula River flows through Krakow and Warsaw."
    assert best.item == 1 and best.support >= 3
    assert best_sentence("anything", []) is None


def _looping_rag(tmp_path: Path) -> AtomicRAG:
    cfg = base_config(reader={"name": "precise", "answer_followup": "none"})
    rag = AtomicRAG(cfg, llm=Replies(lambda r: ChatResult(text=LOOP, finish_reason="length")), progress=False)
    rag.index(DOCS)
    return rag


def test_a_looping_reader_gets_an_extractive_answer_with_its_source(tmp_path: Path) -> None:
    rag = _looping_rag(tmp_path)
    r = rag.query("Which river flows through Warsaw?")
    assert r.extractive and r.answer_looped and r.answer_cut
    assert r.answer and "Vistula" in r.answer  # a retrieved sentence, quoted
    assert [s.how for s in r.sources] == ["extractive"] and r.sources[0].doc_id == "warsaw"
    assert r.cited_answer == f"{r.answer} [1]"


def test_the_cli_advises_a_budget_only_when_it_would_help(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from atomicrag.library import api

    rag = _looping_rag(tmp_path)
    rag.save(tmp_path / "idx")
    monkeypatch.setattr(api.AtomicRAG, "load", classmethod(lambda cls, *a, **k: rag))
    assert main(["-q", "query", "Which river flows through Warsaw?", "--index", str(tmp_path / "idx"),
                 "--no-server"]) == 0
    out = capsys.readouterr()
    assert "extractive" in out.out and "reply looped" in out.out and "raise it" not in out.err
    # a reply that was still going (no loop) when the budget cut it: raising the budget would help
    rag._llm = Replies(lambda r: ChatResult(text="Thought: The Vistula flows through many cities, among them",
                                            finish_reason="length"))
    assert main(["-q", "query", "Which river flows through Warsaw?", "--index", str(tmp_path / "idx"),
                 "--no-server"]) == 1
    assert "raise it: --set reader.max_tokens=N" in capsys.readouterr().err


def test_the_frequency_penalty_is_sent_only_when_set_and_keys_the_cache_only_then() -> None:
    from atomicrag.llm.cache import cache_key
    from atomicrag.llm.openai_client import OpenAIClient

    llm = Replies(lambda r: ChatResult(text="Thought: x [1].\nAnswer: Bern", finish_reason="stop"))
    LLMReader(llm, "precise", ReaderConfig(frequency_penalty=0.5)).answer(["q"], [["ctx"]])
    LLMReader(llm, "precise", ReaderConfig()).answer(["q"], [["ctx"]])
    guarded, plain = llm.requests
    assert guarded.frequency_penalty == 0.5 and plain.frequency_penalty == 0.0
    client = OpenAIClient(base_url="http://127.0.0.1:9/v1", model="m")
    assert client.payload(guarded)["frequency_penalty"] == 0.5
    assert "frequency_penalty" not in client.payload(plain)  # a server that lacks it is never sent it
    # a reply cached without the penalty is not one made with it; every other key stays as it was
    assert cache_key("m", guarded) != cache_key("m", plain)
    assert cache_key("m", plain) == cache_key("m", type(plain)(**{**plain.__dict__}))
    with pytest.raises(ValueError, match="frequency_penalty"):
        ReaderConfig(frequency_penalty=3.0)
