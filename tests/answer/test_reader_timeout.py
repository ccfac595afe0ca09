"""``reader.timeout_s``: the released reader gives each question 60 s, after which its answer is "";
ours does the same when asked to, and counts the question as failed and timed out."""
from __future__ import annotations

from atomicrag.answer.readers import LLMReader, reader_summary
from atomicrag.core.config import ReaderConfig
from atomicrag.llm.openai_client import OpenAIClient
from tests.llm.llm_stub_server import StubServer, completion


def test_a_reader_reply_after_the_timeout_is_an_empty_answer_counted_as_timed_out() -> None:
    stub = StubServer()
    stub.thread.start()
    # the question about Oslo is answered after 2 s, the other at once
    stub.responder = lambda body, n: (200, completion("Thought: it says so.\nAnswer: Norway"),
                                      2.0 if "Oslo" in body["messages"][-1]["content"] else 0.0)
    try:
        client = OpenAIClient(stub.base_url, "stub-model", api_key_env="ATOMICRAG_TEST_KEY", max_retries=2)
        cfg = ReaderConfig(name="precise", answer_extraction="released", timeout_s=0.5)
        out = LLMReader(client, "precise", cfg).answer(["Where is Bergen?", "Where is Oslo?"],
                                                       [["Bergen is in Norway."], ["Oslo is in Norway."]])
    finally:
        stub.httpd.shutdown()
        stub.httpd.server_close()
    assert out[0].answer == "Norway" and not out[0].failed
    assert out[1].answer == "" and out[1].failed and out[1].timed_out and "timed out" in out[1].error
    summary = reader_summary(out)
    assert summary["failed"] == 1 and summary["timed_out"] == 1
    assert len(stub.bodies) == 2, "the timed-out reader request was sent again"
