"""Append-only JSONL checkpoint of per-chunk results, so an interrupted LLM atomization resumes.

Each finished chunk is one line, appended with write + flush + fsync, so a crash loses at
most the line being written. On open, a torn last line (no newline, or invalid JSON) is cut
off before anything new is appended. When a chunk appears more than once, the last line wins.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class ChunkCheckpoint:
    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.records: dict[str, dict[str, Any]] = {}
        self.torn_lines = 0
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        assert self.path is not None
        data = self.path.read_bytes()
        good_end = 0
        pos = 0
        while pos < len(data):
            nl = data.find(b"\n", pos)
            if nl < 0:  # a last line without newline was cut mid-write
                self.torn_lines += 1
                break
            line = data[pos:nl]
            pos = nl + 1
            if not line.strip():
                good_end = pos
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                self.torn_lines += 1
                break
            self.records[rec["chunk_id"]] = rec
            good_end = pos
        if good_end < len(data):
            # Drop the torn tail so the next append starts on a clean line.
            with open(self.path, "r+b") as f:
                f.truncate(good_end)
                f.flush()
                os.fsync(f.fileno())

    def done(self, chunk_id: str) -> bool:
        """True when the chunk finished successfully (failed chunks are retried on restart)."""
        rec = self.records.get(chunk_id)
        return rec is not None and rec.get("status") == "ok"

    def append(self, records: list[dict[str, Any]]) -> None:
        for rec in records:
            self.records[rec["chunk_id"]] = rec
        if self.path is None or not records:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
