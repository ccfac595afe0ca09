"""Passage-side embeddings of graph nodes: one encoder call path for builds and updates."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch

from atomicrag.core import progress
from atomicrag.core.progress import reporting
from atomicrag.embed.protocol import Embedder

Progress = Callable[[str, int, int], None]

# Texts per embedder call: large enough that the encoder's own length-sorted batching still
# pads little; embedders that do not count their batches (progress.advance) move the bar per slice.
_PROGRESS_SLICE = 2048
_EMBED_STAGES = {"atom": "embed_atoms", "entity": "embed_entities"}  # the library's progress stage names


def encode(embedder: Embedder, texts: list[str], what: str) -> torch.Tensor:
    """Passage-side embeddings [n, dim] float32, L2-normalised, with a clear dimension check.

    A progress task counts the texts as the encoder finishes each batch (``atomicrag.core.progress``).
    """
    if not texts:
        return torch.zeros(0, embedder.dim, dtype=torch.float32)
    parts = []
    with progress.task(_EMBED_STAGES.get(what, f"embed_{what}s"), len(texts), unit="text") as bar:
        for i in range(0, len(texts), _PROGRESS_SLICE):
            part = texts[i: i + _PROGRESS_SLICE]
            parts.append(torch.as_tensor(embedder.encode(part, is_query=False)))
            bar.settle(i + len(part))
    emb = parts[0] if len(parts) == 1 else torch.cat(parts)
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

    Returns ``(embeddings [len(texts), dim], number of texts encoded)``. ``progress`` receives
    the encoding's progress (else the current ``atomicrag.core.progress`` sink does).
    """
    if prev_emb is not None and prev_emb.shape[1] != embedder.dim:
        raise ValueError(f"embedder {embedder.name!r} has dim={embedder.dim} but the index holds "
                         f"{prev_emb.shape[1]}-dimensional {what} embeddings")
    row = {} if prev_emb is None else {t: i for i, t in enumerate(prev_texts)}
    missing = list(dict.fromkeys(t for t in texts if t not in row))
    with reporting(progress) if progress is not None else nullcontext():  # bars count encoded batches
        new = encode(embedder, missing, what)
    if prev_emb is None and len(missing) == len(texts):
        return new, len(missing)  # a fresh build of distinct texts: no gather needed
    table = new if prev_emb is None else torch.cat([prev_emb, new])
    offset = 0 if prev_emb is None else prev_emb.shape[0]
    new_row = {t: offset + i for i, t in enumerate(missing)}
    idx = torch.tensor([row[t] if t in row else new_row[t] for t in texts], dtype=torch.int64)
    return table[idx].contiguous(), len(missing)
