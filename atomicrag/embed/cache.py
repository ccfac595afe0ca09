"""Embedding cache: a safetensors file of vectors keyed by (embedder, side, text) hashes.

Re-running an experiment, or a sweep that changes only the retriever, must not re-embed tens
of thousands of atoms. ``embed_cached`` looks every text up by a 16-byte blake2b key of
(embedder name, query/passage side, text), embeds only what is missing, and rewrites the file
atomically (``artifacts.atomic_path``), so a crash leaves the previous file intact. Large jobs
are saved every ``save_every`` new texts and resume from there.

File layout (safetensors, no pickle): ``keys`` uint8 ``[m, 16]``, ``vectors`` float32
``[m, dim]``, metadata ``{"embedder": name, "dim": str(dim)}``.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from atomicrag.core import progress
from atomicrag.core.artifacts import atomic_path, move_aside
from atomicrag.embed.protocol import Embedder

log = logging.getLogger(__name__)

KEY_BYTES = 16
CONFIG_KEY = "paths.cache_dir"  # the setting that places every embedding cache file


class EmbeddingCacheWriteError(RuntimeError):
    """An embedding cache file could not be written (a full or read-only disk, an I/O error)."""


def text_key(embedder_name: str, text: str, is_query: bool) -> bytes:
    h = hashlib.blake2b(digest_size=KEY_BYTES)
    h.update(embedder_name.encode("utf-8"))
    # the query and passage sides get different prefixes, hence different vectors
    h.update(b"\x00q\x00" if is_query else b"\x00p\x00")
    h.update(text.encode("utf-8"))
    return h.digest()


def _load(path: Path, name: str, dim: int) -> tuple[list[bytes], torch.Tensor]:
    if not path.is_file():
        return [], torch.empty(0, dim)
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            if meta.get("embedder") != name or int(meta.get("dim", -1)) != dim:
                log.warning("embedding cache %s was made by %r, not %r; rebuilding it",
                            path, meta.get("embedder"), name)
                return [], torch.empty(0, dim)
            keys = f.get_tensor("keys")
            vectors = f.get_tensor("vectors")
    except (SafetensorError, OSError, ValueError, KeyError, RuntimeError) as exc:
        # a damaged cache is only a lost cache: kept aside for a look (the next save would
        # overwrite it), named with the setting that places it, and rebuilt
        moved = move_aside(path)
        log.warning("the embedding cache %s (under " + CONFIG_KEY + ") is damaged (%s: %s); moved it to %s and "
                    "rebuilding it", path, type(exc).__name__, str(exc)[:200], moved)
        return [], torch.empty(0, dim)
    if keys.dtype != torch.uint8 or keys.ndim != 2 or keys.shape[1] != KEY_BYTES \
            or vectors.ndim != 2 or vectors.shape != (keys.shape[0], dim):
        moved = move_aside(path)
        log.warning("the embedding cache %s (under paths.cache_dir) has keys %s and vectors %s, not [n, %d] and "
                    "[n, %d]; moved it to %s and rebuilding it", path, list(keys.shape), list(vectors.shape),
                    KEY_BYTES, dim, moved)
        return [], torch.empty(0, dim)
    return [bytes(row) for row in keys.numpy()], vectors.float()


def _save(path: Path, name: str, keys: list[bytes], vectors: torch.Tensor) -> None:
    key_tensor = torch.frombuffer(bytearray(b"".join(keys)), dtype=torch.uint8).reshape(len(keys), KEY_BYTES) \
        if keys else torch.empty(0, KEY_BYTES, dtype=torch.uint8)
    try:
        with atomic_path(path) as tmp:
            save_file({"keys": key_tensor, "vectors": vectors.contiguous()}, str(tmp),
                      metadata={"embedder": name, "dim": str(vectors.shape[1])})
    except (SafetensorError, OSError) as exc:
        # safetensors reports a full disk as its own SafetensorError ("IoError(Os { code: 28, kind:
        # StorageFull ...})"), not an OSError, and names no file: name the file and its setting
        raise EmbeddingCacheWriteError(
            f"could not write the embedding cache {path} (under {CONFIG_KEY}): {type(exc).__name__}: "
            f"{str(exc)[:300]}; is its disk full or read-only? Free space there, or set {CONFIG_KEY} to a "
            "folder on another disk") from exc


def embed_cached(
    embedder: Embedder,
    texts: list[str],
    cache_path: str | Path,
    *,
    is_query: bool = False,
    save_every: int = 50_000,
    stage: str = "embed_texts",
) -> torch.Tensor:
    """Embed ``texts`` (``[len(texts), dim]`` float32 CPU), reusing vectors in ``cache_path``.

    ``stage`` names the progress bar of the texts to embed (``atomicrag.core.progress``)."""
    path = Path(cache_path)
    name, dim = embedder.name, embedder.dim
    keys, vectors = _load(path, name, dim)
    row_of = {k: i for i, k in enumerate(keys)}
    wanted = [text_key(name, t, is_query) for t in texts]
    missing: dict[bytes, str] = {}
    for k, t in zip(wanted, texts):
        if k not in row_of and k not in missing:  # duplicates are embedded once
            missing[k] = t
    if missing:
        log.info("embedding %d new texts (%d cached) with %s", len(missing), len(texts) - len(missing), name)
        todo = list(missing.items())
        parts = [vectors]
        for start in range(0, len(todo), save_every):
            batch = todo[start: start + save_every]
            with progress.task(stage, len(batch), unit="text"):  # the encoder counts its batches
                new = embedder.encode([t for _, t in batch], is_query=is_query).float().cpu()
            if new.shape != (len(batch), dim):
                raise ValueError(f"embedder {name} returned {list(new.shape)} for {len(batch)} texts, dim {dim}")
            for k, _ in batch:
                row_of[k] = len(keys)
                keys.append(k)
            parts.append(new)
            vectors = torch.cat(parts)
            parts = [vectors]
            _save(path, name, keys, vectors)
    if not texts:
        return torch.empty(0, dim)
    return vectors[torch.tensor([row_of[k] for k in wanted], dtype=torch.long)].contiguous()
