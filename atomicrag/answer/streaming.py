"""A reader's answer streamed: the reply's text as the model writes it, then the parsed output.

The request is the one ``LLMReader.answer`` sends (same prompt, budget and context fitting), so a
streamed answer equals the batch answer for the same question; the reply goes through
``llm.streaming.stream_chat`` (server-sent events on an OpenAI-compatible server, the whole reply
at once on a backend that cannot stream) and is then parsed and followed up as ``answer`` does.
"""
from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from atomicrag.answer.readers import LLMReader, ReaderOutput
from atomicrag.llm.streaming import stream_chat


def stream_answer(reader: LLMReader, question: str, context: Sequence[Any]
                  ) -> Generator[str, None, ReaderOutput]:
    """Yield the reply's text chunks ("Thought: ... Answer: ..."); return the parsed ``ReaderOutput``."""
    request = reader.requests([question], [context])[0]
    result = yield from stream_chat(reader.llm, request)
    return reader.finish([request], [result])[0]
