"""The asyncio face of ``AtomicRAG``: ``aquery``, ``asearch``, ``aquery_stream`` run the blocking
calls in worker threads, so an event loop keeps serving while the graph propagates and the reader
writes."""
from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING

from atomicrag.library.async_stream import iterate_in_thread

if TYPE_CHECKING:
    from atomicrag.library.types import QueryResult


class AsyncQueries:
    """Mixed into ``AtomicRAG``, which provides ``query`` and ``query_stream``."""

    async def aquery(self, question: str | Iterable[str], *, answer: bool | None = None
                     ) -> QueryResult | list[QueryResult]:
        """``query`` for asyncio code: runs in a worker thread, so the event loop keeps serving
        while the graph propagates and the reader writes (calls on one object still run one at a time)."""
        import asyncio

        return await asyncio.to_thread(self.query, question, answer=answer)

    async def asearch(self, question: str | Iterable[str]) -> QueryResult | list[QueryResult]:
        """``search`` (retrieval only) for asyncio code."""
        return await self.aquery(question, answer=False)

    async def aquery_stream(self, question: str) -> AsyncIterator[str]:
        """``query_stream`` for asyncio code: an async iterator of the reply's text chunks (the
        result is not returned: use ``query_stream`` in a thread when you need both). The stream
        runs in one worker thread of its own (the index lock belongs to the thread that takes it)."""
        async for chunk in iterate_in_thread(self.query_stream(question)):
            yield chunk
