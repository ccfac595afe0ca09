"""Token-window chunker: passages → overlapping ``Chunk``s with character spans.

Graph-Bench / AtomicRAG chunk with 256 tokens and 32 tokens of overlap. Unlike AtomicRAG's
script (which decoded the token ids back to lower-cased, re-spaced text), a chunk here is an
exact slice of the passage text (``text[start_char:end_char]``), so every atom can point back
to the original characters.

Tokenizers:
* ``"regex"`` — ``\\w+|[^\\w\\s]`` tokens with offsets; offline, fast, no dependencies;
* anything else — a Hugging Face tokenizer name or path (``"minilm"`` = the offline
  all-MiniLM-L6-v2 package), using its offsets mapping, so windows count real model tokens.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from atomicrag.core.config import DatasetConfig
from atomicrag.core.schemas import Chunk, Passage

Spans = list[tuple[int, int]]
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def regex_spans(text: str) -> Spans:
    return [m.span() for m in _TOKEN_RE.finditer(text)]


def hf_span_fn(name_or_path: str) -> Callable[[str], Spans]:
    """Token character spans from a (fast) HF tokenizer, special tokens excluded."""
    from transformers import AutoTokenizer

    path, local = _resolve_tokenizer(name_or_path)
    tok = AutoTokenizer.from_pretrained(path, use_fast=True, local_files_only=local)
    if not tok.is_fast:
        raise ValueError(f"tokenizer {name_or_path!r} has no fast version; offsets mapping needs one")

    def spans(text: str) -> Spans:
        # A whole novel in one call is slow in the Rust tokenizer; pieces that start at a space
        # tokenize identically (the space begins the next word's token) and run as a batch.
        pieces = _pieces(text)
        # verbose=False: texts longer than the model's max length are expected here
        enc = tok([text[s:e] for s, e in pieces], add_special_tokens=False,
                  return_offsets_mapping=True, verbose=False)
        return [(base + s, base + e) for (base, _), offsets in zip(pieces, enc["offset_mapping"])
                for s, e in offsets if e > s]

    return spans


def _pieces(text: str, size: int = 20_000) -> list[tuple[int, int]]:
    """Cut ``text`` into spans of about ``size`` characters, each break just before a space."""
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            end = space if space > start else end
        out.append((start, end))
        start = end
    return out or [(0, 0)]


def _resolve_tokenizer(name: str) -> tuple[str, bool]:
    if name == "minilm":
        from atomicrag.core.offline_models import offline_minilm_path

        return offline_minilm_path(), True
    return name, Path(name).expanduser().exists()


class Chunker:
    """Cut passages into windows of ``size`` tokens that overlap by ``overlap`` tokens."""

    def __init__(self, size: int = 256, overlap: int = 32, tokenizer: str = "regex") -> None:
        if size <= 0 or not 0 <= overlap < size:
            raise ValueError(f"chunker needs size > 0 and 0 <= overlap < size, got {size}/{overlap}")
        self.size, self.overlap, self.tokenizer = size, overlap, tokenizer
        self._spans = regex_spans if tokenizer == "regex" else hf_span_fn(tokenizer)

    @classmethod
    def from_config(cls, cfg: DatasetConfig) -> Chunker:
        return cls(cfg.chunk_tokens, cfg.chunk_overlap, cfg.chunk_tokenizer)

    @property
    def name(self) -> str:
        """Identifies the chunking in cache keys."""
        return f"window:{self.tokenizer}:{self.size}/{self.overlap}"

    def chunk(self, passage: Passage) -> list[Chunk]:
        spans = self._spans(passage.text)
        if len(spans) <= self.size:
            # short passage: one chunk that *is* the passage (same id, whole text)
            return [Chunk(id=passage.id, passage_id=passage.id, text=passage.text, title=passage.title,
                          index=0, start_char=0, end_char=len(passage.text))]
        stride = self.size - self.overlap
        chunks = []
        start = 0
        while True:
            end = min(start + self.size, len(spans))
            s_char, e_char = spans[start][0], spans[end - 1][1]
            idx = len(chunks)
            chunks.append(Chunk(id=f"{passage.id}#c{idx}", passage_id=passage.id,
                                text=passage.text[s_char:e_char], title=passage.title, index=idx,
                                start_char=s_char, end_char=e_char))
            if end == len(spans):
                break
            start += stride
        return chunks

    def chunk_all(self, passages: Iterable[Passage]) -> list[Chunk]:
        return [c for p in passages for c in self.chunk(p)]


def chunk_passages(passages: Iterable[Passage], cfg: DatasetConfig) -> list[Chunk]:
    """Chunk a corpus with the dataset's chunking settings."""
    return Chunker.from_config(cfg).chunk_all(passages)

