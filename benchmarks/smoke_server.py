"""The set-up the server benchmarks share: the 2Wiki smoke passages that ship with atomicrag,
indexed by the library with the fake embedder, the sentence atomizer and no reader (so a request's
retrieval is short and the server's own cost shows), and served over HTTP on a free port.

Not a benchmark itself (``scripts/bench.py --list`` leaves it out); ``server_burst`` and
``server_overhead`` import it.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FAKE_MODELS = {"embedder": {"option": "fake", "dim": 64}, "llm": {"option": "fake", "cache": False},
               "atomizer": {"name": "sentence"}, "reader": {"name": "none"}}


def smoke_corpus() -> tuple[Path, list[dict[str, Any]], list[str]]:
    """(the corpus file, its passages, the smoke questions' texts)."""
    from atomicrag.data.loaders import split_files

    qfile, cfile = split_files("2wikimultihopqa", "smoke")
    docs = [json.loads(ln) for ln in Path(cfile).read_text().splitlines() if ln.strip()]
    questions = [json.loads(ln)["question"] for ln in Path(qfile).read_text().splitlines() if ln.strip()]
    return Path(cfile), docs, questions


@contextmanager
def served_smoke_index(docs: list[dict[str, Any]], work_prefix: str) -> Iterator[tuple[Any, Any]]:
    """``(rag, httpd)``: ``docs`` indexed and served on a background thread until the block ends.
    The library's state goes to a fresh temporary folder (``ATOMICRAG_STATE_DIR``)."""
    from atomicrag.library import http_server
    from atomicrag.library.api import AtomicRAG

    os.environ["ATOMICRAG_STATE_DIR"] = str(Path(tempfile.mkdtemp(prefix=work_prefix)) / "state")
    with AtomicRAG(FAKE_MODELS) as rag:
        rag.index([{"doc_id": d["id"], "title": d.get("title", ""), "text": d["text"]} for d in docs])
        httpd = http_server.make_server(rag, None, port=0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            yield rag, httpd
        finally:
            httpd.shutdown()
            httpd.server_close()
