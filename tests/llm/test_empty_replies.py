"""``fidelity.empty_replies``: an empty free-text reply is re-asked (ours) or taken as the reply
(released, whose stage readers then count it); found by the scripted parity model, whose empty NER
and extraction replies made our reference_code row re-ask a request the released code asked once."""
from __future__ import annotations

from typing import Any

from atomicrag.llm.protocol import ChatRequest, ChatResult
from atomicrag.llm.retry import EmptyRepliesAccepted, RawReply, SyncBackend, check_reply


class Silent(SyncBackend):
    """A backend whose every reply is empty; counts its generations."""

    model = "silent"
    max_retries = 2

    def __init__(self) -> None:
        self.calls = 0

    def _generate(self, request: ChatRequest, attempt: int) -> RawReply:
        self.calls += 1
        return RawReply(text="")

    def close(self) -> None:
        return None


def test_an_empty_reply_is_a_failure_unless_the_request_accepts_it() -> None:
    req = ChatRequest(messages=[{"role": "user", "content": "q"}])
    assert check_reply(req, RawReply(text="  ")) == (None, "empty reply")
    assert check_reply(ChatRequest(messages=req.messages, accept_empty=True), RawReply(text="")) == (None, None)


def test_accepted_empty_replies_are_asked_once_and_not_failed() -> None:
    plain = Silent()
    [failed] = plain.chat([ChatRequest(messages=[{"role": "user", "content": "q"}])])
    assert failed.error and plain.calls == 3  # re-asked twice, then counted as failed
    backend = Silent()
    wrapped: Any = EmptyRepliesAccepted(backend)
    [res] = wrapped.chat([ChatRequest(messages=[{"role": "user", "content": "q"}])])
    assert isinstance(res, ChatResult) and res.error is None and res.text == "" and backend.calls == 1


def test_reference_code_takes_empty_replies_as_released() -> None:
    from atomicrag import load_config

    assert load_config({"fidelity": "reference_code"}).fidelity.empty_replies == "accepted"
    assert load_config({}).fidelity.empty_replies == "reask"
