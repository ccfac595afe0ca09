"""Passage-side embeddings of graph nodes: one encoder call path for builds and updates."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..atomize.base import pbar, progress_enabled
from ..embed.protocol import Embedder

Progress = Callable[[str, int, int], None]

# Texts per embedder call when progress is reported: large enough that the encoder's own
# length-sorted batching still pads little, small enough that progress moves every few seconds.
_PROGRESS_SLICE = 2048


def encode(embedder: Embedder, texts: list[str], what: str) -> torch.Tensor:
    """Passage-side embeddings [n, dim] float32, L2-normalised, with a clear dimension check."""
    if not texts:
        return torch.zeros(0, embedder.dim, dtype=torch.float32)
    if len(texts) > _PROGRESS_SLICE and progress_enabled(None):
        parts = []
        with pbar(total=len(texts), desc=f"embed {what}s", unit=what) as bar:
            for i in range(0, len(texts), _PROGRESS_SLICE):
                part = texts[i: i + _PROGRESS_SLICE]
                parts.append(torch.as_tensor(embedder.encode(part, is_query=False)))
                bar.update(len(part))
        emb = torch.cat(parts)
    else:
        emb = embedder.encode(texts, is_query=False)
    if not isinstance(emb, torch.Tensor):
        emb = torch.as_tensor(emb)
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise ValueError(f"embedder {embedder.name!r} returned shape {tuple(emb.shape)} for {len(texts)} {what}")
    if emb.shape[1] != embedder.dim:
        raise ValueError(f"embedder {embedder.name!r} declares dim={embedder.dim} but returned "
                         f"{emb.shape[1]}-dimensional {what} embeddings")
    return torch.nn.functional.normalize(emb.detach().to("cpu", torch.float32), dim=1)


def embed_reusing(texts: list[str], prev_texts: list[str], prev_emb: torch.Tensor | None, embedder: Any,
                  what: str, progress: Progress | None) -> tuple[torch.Tensor, int]:
    """Embeddings of ``texts``: rows of ``prev_emb`` where the text was embedded before, else encoded.

    Returns ``(embeddings [len(texts), dim], number of texts encoded)``. With a ``progress``
    callback the new texts are encoded in slices so it can move; without one, in one call.
    """
    if prev_emb is not None and prev_emb.shape[1] != embedder.dim:
        raise ValueError(f"embedder {embedder.name!r} has dim={embedder.dim} but the index holds "
                         f"{prev_emb.shape[1]}-dimensional {what} embeddings")
    row = {} if prev_emb is None else {t: i for i, t in enumerate(prev_texts)}
    missing = list(dict.fromkeys(t for t in texts if t not in row))
    step = _PROGRESS_SLICE if progress is not None else max(1, len(missing))
    parts = []
    for start in range(0, len(missing), step):
        parts.append(encode(embedder, missing[start:start + step], what))
        if progress is not None:
            progress(f"embed_{what}s" if what == "atom" else "embed_entities",
                     min(start + step, len(missing)), len(missing))
    new = torch.cat(parts) if parts else torch.zeros(0, embedder.dim, dtype=torch.float32)
    if prev_emb is None and len(missing) == len(texts):
        return new, len(missing)  # a fresh build of distinct texts: no gather needed
    table = new if prev_emb is None else torch.cat([prev_emb, new])
    offset = 0 if prev_emb is None else prev_emb.shape[0]
    new_row = {t: offset + i for i, t in enumerate(missing)}
    idx = torch.tensor([row[t] if t in row else new_row[t] for t in texts], dtype=torch.int64)
    return table[idx].contiguous(), len(missing)
