"""What the index server does, apart from HTTP: the requests it takes (checked field by field,
each error naming its field: ``HTTPError`` with ``param``), a chat's question read from the whole
conversation, the sources every answer carries, the tokens a request spent, and ``IndexService``,
the calls on one loaded ``AtomicRAG`` that ``http_server``'s handler adapts to HTTP."""
from __future__ import annotations

import itertools
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from atomicrag.library.http_access import HTTPError
from atomicrag.library.types import QueryResult

MODEL_ID = "atomicrag"  # the one model /v1/models lists and /v1/chat/completions answers as
HISTORY_TURNS = 4  # earlier chat turns read as the question's context
HISTORY_CHARS = 400  # of each such turn
RETRIEVED_SOURCES = 3  # documents an answer that cites none lists as what it was given


# ---------------------------------------------------------------------------------- requests
def _questions(body: dict[str, Any]) -> list[str]:
    if "question" in body:
        if not isinstance(body["question"], str):
            raise HTTPError('"question" must be a string', param="question")
        return [body["question"]]
    qs = body.get("questions")
    if not isinstance(qs, list) or not all(isinstance(q, str) for q in qs):
        raise HTTPError('the body needs "question" (a string) or "questions" (a list of strings)',
                        param="questions")
    return qs


def _flag(body: dict[str, Any], name: str, default: bool | None) -> bool | None:
    value = body.get(name, default)
    if value is not None and not isinstance(value, bool):
        raise HTTPError(f'"{name}" must be true, false or absent', param=name)
    return value


def _message_text(m: dict[str, Any], i: int) -> str:
    content = m.get("content")
    if content is None:
        return ""
    if isinstance(content, list):  # the content-parts form: the text parts, joined
        if not all(isinstance(p, dict) for p in content):
            raise HTTPError(f"messages[{i}].content parts must be objects like "
                            '{"type": "text", "text": "..."}', param=f"messages[{i}].content")
        content = " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    if not isinstance(content, str):
        raise HTTPError(f"messages[{i}].content must be a string or a list of content parts",
                        param=f"messages[{i}].content")
    return content.strip()


def conversation_question(messages: Any) -> str:
    """The question a chat asks: its last user message, and, when turns came before it, the last
    ``HISTORY_TURNS`` of them (user and assistant, each cut to ``HISTORY_CHARS``) after it as
    context, so a follow-up ("Where did he move?") retrieves and is read with the entities named
    before. System messages are not read (the reader has its own instructions)."""
    if not isinstance(messages, list) or not messages:
        raise HTTPError('"messages" must be a non-empty list of {"role", "content"} objects', param="messages")
    turns: list[tuple[str, str]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise HTTPError(f'messages[{i}] must be an object with a "role" string', param=f"messages[{i}]")
        if m["role"] in ("user", "assistant"):
            turns.append((m["role"], _message_text(m, i)))
    last = max((i for i, (role, _) in enumerate(turns) if role == "user"), default=None)
    if last is None:
        raise HTTPError('"messages" has no message with role "user"', param="messages")
    question = turns[last][1]
    if not question:
        raise HTTPError("the last user message has no text content", param="messages")
    earlier = [(r, t[:HISTORY_CHARS]) for r, t in turns[:last] if t][-HISTORY_TURNS:]
    if not earlier:
        return question
    said = " | ".join(f"{'user' if r == 'user' else 'assistant'}: {t}" for r, t in earlier)
    return f"{question}\n(Earlier in this conversation: {said})"


def _documents(body: dict[str, Any]) -> list[str | dict[str, Any]]:
    docs = body.get("documents")
    if not isinstance(docs, list) or not docs:
        raise HTTPError('"documents" must be a non-empty list of strings or {"text", ...} objects',
                        param="documents")
    for i, d in enumerate(docs):
        if isinstance(d, str):
            continue
        if not isinstance(d, dict):
            raise HTTPError(f"documents[{i}]: each document must be a string or an object with \"text\"",
                            param=f"documents[{i}]")
        if not isinstance(d.get("text"), str):
            raise HTTPError(f'documents[{i}].text must be a string', param=f"documents[{i}].text")
        for key in ("doc_id", "id", "title"):
            if d.get(key) is not None and not isinstance(d[key], str):
                raise HTTPError(f"documents[{i}].{key} must be a string", param=f"documents[{i}].{key}")
        if d.get("meta") is not None and not isinstance(d["meta"], dict):
            raise HTTPError(f"documents[{i}].meta must be an object", param=f"documents[{i}].meta")
    return docs


def with_sources(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (``QueryResult.to_dict()``) with a source list whenever it has an answer: an
    answer that cites no context line and whose text is in none (a small model paraphrasing, or
    answering wrongly) used to come with ``sources: []``; it now lists the documents of the
    reader's first context lines, marked ``how="retrieved"`` (what it read, not what it cited)."""
    if not result.get("answer") or result.get("sources"):
        return result
    sources: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(result.get("context") or [], 1):
        doc = str(item.get("passage_id", ""))
        if doc and doc not in sources:
            if len(sources) == RETRIEVED_SOURCES:
                break
            sources[doc] = {"n": len(sources) + 1, "doc_id": doc, "title": str(item.get("title") or ""),
                            "context": [], "how": "retrieved"}
        if doc in sources:
            sources[doc]["context"].append(n)
    return {**result, "sources": list(sources.values())}


class _Usage:
    """Tokens the LLM spent on one request: the library's accountant totals before and after,
    read while holding the index's lock, so no other request's tokens fall in between."""

    def __init__(self, rag: Any) -> None:
        self.rag = rag
        self.start = self._totals()

    def _totals(self) -> tuple[int, int, int]:
        acc = getattr(self.rag, "accountant", None)
        if acc is None:
            return 0, 0, 0
        t = acc.total()
        return t.prompt_tokens + t.cached_prompt_tokens, t.completion_tokens + t.cached_completion_tokens, \
            t.cached_prompt_tokens

    def usage(self) -> dict[str, Any]:
        """OpenAI's ``usage``; tokens answered from the LLM cache count (they are the request's
        tokens), the cached part of the prompt under ``prompt_tokens_details``."""
        end = self._totals()
        prompt, completion, cached = (b - a for a, b in zip(self.start, end))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached}}


class IndexService:
    """The API over one loaded ``AtomicRAG`` (and the folder it saves to); transport-free, so the
    HTTP handler stays a thin adapter."""

    def __init__(self, rag: Any, index_dir: str | Path | None) -> None:
        self.rag = rag
        self.index_dir = Path(index_dir).resolve() if index_dir is not None else None
        self._write = threading.Lock()  # one insert/delete (and its save) at a time
        self._lock = getattr(rag, "_lock", None) or threading.RLock()  # the index's own (reentrant)

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "index": str(self.index_dir) if self.index_dir else None,
                "documents": len(self.rag), "pid": os.getpid()}

    def query(self, body: dict[str, Any], *, answer: bool | None = None) -> dict[str, Any]:
        want = _flag(body, "answer", answer)
        graph = _flag(body, "graph", False)
        top = body.get("top")
        if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 0):
            raise HTTPError('"top" must be a non-negative integer', param="top")
        questions = _questions(body)
        with self._lock:
            usage = _Usage(self.rag)
            results = self.rag.query(questions, answer=want if answer is None else answer)
            out = []
            for r in results:
                if top is not None:
                    r.items = r.items[:top]
                d = with_sources(r.to_dict())
                if graph:
                    from atomicrag.library.evidence_graph import evidence_subgraph

                    d["subgraph"] = evidence_subgraph(self.rag.graph, [i.atom_id for i in r.items],
                                                      r.entities_extracted)
                out.append(d)
            return {"results": out, "usage": usage.usage()}

    def _save(self) -> None:
        if self.index_dir is not None:
            self.rag.save(self.index_dir)

    def insert(self, body: dict[str, Any]) -> dict[str, Any]:
        from atomicrag.library.types import normalize_documents

        docs = _documents(body)
        replace = _flag(body, "replace", False)
        with self._write:
            normalized = normalize_documents(docs, taken=() if replace else {d.id for d in self.rag.documents})
            self.rag.insert(normalized, replace=bool(replace))
            self._save()
            report = self.rag.report(d.id for d in normalized)
        return {"inserted": [d.id for d in normalized], "documents": len(self.rag),
                "failed_chunks": {r.doc_id: r.failed_chunks for r in report if r.failures}}

    def delete(self, body: dict[str, Any]) -> dict[str, Any]:
        ids = body.get("doc_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise HTTPError('"doc_ids" must be a list of document ids (strings)', param="doc_ids")
        missing_ok = _flag(body, "missing_ok", False)
        with self._write:
            n = self.rag.delete(ids, missing_ok=bool(missing_ok))
            if n:
                self._save()
        return {"deleted": n, "documents": len(self.rag)}

    def chat(self, body: dict[str, Any]) -> tuple[dict[str, Any], QueryResult]:
        """The OpenAI chat-completion reply to ``body`` (and the result it came from)."""
        question = conversation_question(body.get("messages"))
        with self._lock:
            usage = _Usage(self.rag)
            result = self.rag.query(question, answer=True)
            spent = usage.usage()
        if result.answer is None or (not result.answer and result.errors):
            raise HTTPError("no answer: " + "; ".join(result.errors or ["the reader returned nothing"]), 502,
                            code="no_answer")
        reply = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model") or MODEL_ID),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result.answer},
                         "finish_reason": "length" if result.answer_cut else "stop"}],
            "usage": spent,
            "atomicrag": with_sources(result.to_dict()),  # the sources: retrieved atoms, documents, context
        }
        return reply, result

    def chat_stream(self, body: dict[str, Any]) -> _HeldStream:
        """``chat.completion.chunk`` objects of the answer to ``body`` as the reader writes it.

        Retrieval runs, and the reader's first text arrives, before the first chunk is yielded, so
        a bad request or a failed retrieval is still a JSON error with its status. The content
        streamed is what the model writes after its "Answer:" marker (its reasoning before it is
        not the answer), token by token from an LLM that streams; a reply with no marker sends the
        parsed answer once, at the end. The last chunk carries the finish reason ("length" when
        the budget cut the answer), ``usage`` and the whole result (parsed answer, sources) under
        ``"atomicrag"``. The index's lock is held until the stream ends or is closed."""
        question = conversation_question(body.get("messages"))
        self._lock.acquire()
        try:
            usage = _Usage(self.rag)
            stream = self.rag.query_stream(question)
            first = next(stream, None)  # retrieval, then the first words of the reply
        except BaseException:
            self._lock.release()
            raise
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": str(body.get("model") or MODEL_ID)}

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

        def chunks() -> Iterator[dict[str, Any]]:
            yield chunk({"role": "assistant"})
            after = AfterMarker()
            for text in (itertools.chain([first], stream) if first is not None else ()):
                if out := after.feed(text):
                    yield chunk({"content": out})
            result = stream.get_result()
            if not after.found and result.answer:
                yield chunk({"content": result.answer})
            yield chunk({}, "length" if result.answer_cut else "stop", usage=usage.usage(),
                        atomicrag=with_sources(result.to_dict()))

        def release() -> None:
            stream.close()
            self._lock.release()

        return _HeldStream(chunks(), release)


class _HeldStream:
    """A chunk generator and what ``close()`` gives back (the index's lock) once, whether the
    stream ended, failed or was never started."""

    def __init__(self, chunks: Iterator[dict[str, Any]], release: Callable[[], None]) -> None:
        self._chunks, self._release = chunks, release

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._chunks

    def close(self) -> None:
        if self._release is not None:
            release, self._release = self._release, None
            try:
                self._chunks.close()  # type: ignore[attr-defined]
            finally:
                release()


class AfterMarker:
    """Feeds of a streamed reply in, the text after its first "Answer:" out (leading spaces dropped)."""

    MARKER = "Answer:"

    def __init__(self) -> None:
        self.found = False
        self._head = ""  # text before the marker, kept until the marker is complete

    def feed(self, text: str) -> str:
        if self.found:
            return text
        self._head += text
        at = self._head.find(self.MARKER)
        if at < 0:
            return ""
        self.found = True
        return self._head[at + len(self.MARKER):].lstrip()
