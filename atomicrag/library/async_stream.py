"""A blocking iterator of text chunks served to asyncio code without blocking its event loop."""
from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any


async def iterate_in_thread(stream: Iterator[str], *, name: str = "atomicrag-stream") -> AsyncIterator[str]:
    """Yield ``stream``'s chunks as a worker thread reads them. The whole stream runs in that one
    thread: a lock the stream takes belongs to the thread that takes it, so it cannot hop between
    ``asyncio.to_thread`` workers chunk by chunk. An error of the stream is raised here."""
    import asyncio

    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    done = object()

    def pump() -> None:
        try:
            for chunk in stream:
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
            loop.call_soon_threadsafe(queue.put_nowait, done)
        except BaseException as exc:  # the reader's error reaches the awaiting code
            loop.call_soon_threadsafe(queue.put_nowait, exc)

    worker = threading.Thread(target=pump, name=name, daemon=True)
    worker.start()
    while (item := await queue.get()) is not done:
        if isinstance(item, BaseException):
            raise item
        yield item
    await asyncio.to_thread(worker.join)
