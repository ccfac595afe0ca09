"""Per-question checkpoint of the reader's answers, so a killed harness run resumes, not redoes.

An append-only JSONL file (``atomicrag.atomize.checkpoint.ChunkCheckpoint``: each line is
written, flushed and fsynced; a torn last line is cut off on open). A line holds one answered
question under a key that hashes everything the answer depends on: the question's id, the exact
request the reader sends (prompt, context, sampling, budget), the reader's settings and the
model's identity. A rerun with the same inputs finds its answers by key; a changed prompt,
context, model or reader setting is a new key and is answered afresh. Failed answers and
replies cut at the completion budget are never written, so a rerun asks them again.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from atomicrag.atomize.checkpoint import ChunkCheckpoint
from atomicrag.core.artifacts import content_hash

CHECKPOINT_NAME = "answers.checkpoint.jsonl"
# questions answered per reader call while a checkpoint is kept: what a kill can lose, at most
CHUNK = 64


class AnswerCheckpoint:
    """The answers of one run folder's reader, by key (``key``), reusable by a rerun."""

    def __init__(self, path: str | Path, scope: dict[str, Any]) -> None:
        self.path = Path(path)
        # ChunkCheckpoint's record id field is "chunk_id": here it holds the answer's key
        self._lines = ChunkCheckpoint(self.path)
        self._scope = content_hash(scope)

    def key(self, question_id: str, request: Any) -> str:
        """The key of question ``question_id`` asked with ``request`` (a ``ChatRequest``)."""
        return content_hash(self._scope, question_id, request.messages, request.temperature, request.max_tokens,
                            request.seed, request.schema, length=32)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored ``ReaderOutput`` fields of ``key``, or None when it was never answered."""
        if not self._lines.done(key):
            return None
        out = self._lines.records[key].get("output")
        return dict(out) if isinstance(out, dict) else None

    def add(self, answered: list[tuple[str, str, Any]]) -> None:
        """Record ``(key, question_id, ReaderOutput)`` triples; failed and cut answers are skipped."""
        rows = [{"chunk_id": key, "status": "ok", "question_id": qid, "output": dataclasses.asdict(out)}
                for key, qid, out in answered if not out.failed and not out.truncated]
        self._lines.append(rows)

    def remove(self) -> None:
        """The run is finished (its predictions are written): the checkpoint has done its work."""
        self.path.unlink(missing_ok=True)
