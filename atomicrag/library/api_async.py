"""The asyncio face of ``AtomicRAG``: ``aindex``, ``ainsert``, ``aquery``, ``asearch``,
``aquery_stream`` run the blocking calls in worker threads, so an event loop keeps serving while
documents are atomized and embedded, the graph propagates and the reader writes."""
from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from atomicrag.library.async_stream import iterate_in_thread

if TYPE_CHECKING:
    from atomicrag.library.types import QueryResult


class AsyncQueries:
    """Mixed into ``AtomicRAG``, which provides ``index``, ``insert``, ``query`` and ``query_stream``."""

    async def aindex(self, documents: Any) -> Any:
        """``index`` for asyncio code (a worker thread); returns the index object, as ``index`` does."""
        import asyncio

        return await asyncio.to_thread(self.index, documents)

    async def ainsert(self, documents: Any, *, replace: bool = False) -> list[str]:
        """``insert`` for asyncio code (a worker thread); returns the inserted documents' ids."""
        import asyncio

        return await asyncio.to_thread(self.insert, documents, replace=replace)

    async def aquery(self, question: str | Iterable[str], *, answer: bool | None = None, where: Any = None
                     ) -> QueryResult | list[QueryResult]:
        """``query`` for asyncio code: runs in a worker thread, so the event loop keeps serving
        while the graph propagates and the reader writes (calls on one object still run one at a time)."""
        import asyncio

        return await asyncio.to_thread(self.query, question, answer=answer, where=where)

    async def asearch(self, question: str | Iterable[str], *, where: Any = None) -> QueryResult | list[QueryResult]:
        """``search`` (retrieval only) for asyncio code."""
        return await self.aquery(question, answer=False, where=where)

    async def aquery_stream(self, question: str) -> AsyncIterator[str]:
        """``query_stream`` for asyncio code: an async iterator of the reply's text chunks (the
        result is not returned: use ``query_stream`` in a thread when you need both). The stream
        runs in one worker thread of its own (the index lock belongs to the thread that takes it)."""
        async for chunk in iterate_in_thread(self.query_stream(question)):
            yield chunk
