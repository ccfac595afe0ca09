"""Vanilla RAG: dense retrieval over passage chunks (the paper's "Vanilla RAG" rows).

Chunks are embedded once (cached by the embedding cache when available), each question is
embedded with the query prefix, and an exact top-k by matmul ranks the chunks. With
``retriever.reranker`` set, the top ``rerank_candidates`` are re-scored by a cross-encoder
(the paper's "w/ rerank" row uses bge-reranker-large; no reranker ships offline here).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from atomicrag.core.config import Config
from atomicrag.core.schemas import Chunk, QueryTrace, Question
from atomicrag.retrieve.context import unique_in_order
from atomicrag.retrieve.merge import ContextItem


def _encode_chunks(chunks: list[Chunk], embedder: Any, cfg: Config) -> torch.Tensor:
    texts = [f"{c.title}\n{c.text}" if c.title else c.text for c in chunks]
    try:
        from atomicrag.embed.cache import embed_cached
    except ImportError:  # the cache is an optimisation, not a requirement
        return embedder.encode(texts)
    from atomicrag.core.artifacts import content_hash

    path = Path(cfg.paths.cache_dir) / cfg.dataset.name / "passage_embeddings" / f"{content_hash(embedder.name)}.safetensors"
    return embed_cached(embedder, texts, path, stage="embed_passages")


@lru_cache(maxsize=2)
def cross_encoder(model_name: str, device: str | None) -> Any:
    """One CrossEncoder per (model, device): loading bge-reranker-large costs seconds and 1.3 GB,
    and scoring keeps no state, so every question of every run in the process shares it."""
    from sentence_transformers import CrossEncoder

    return CrossEncoder(model_name, device=device)


def _rerank(model_name: str, device: str, question: str, cands: list[Chunk]) -> list[float]:
    model = cross_encoder(model_name, None if device == "auto" else device)
    return [float(s) for s in model.predict([(question, c.text) for c in cands])]


def retrieve_passages(
    questions: list[Question], chunks: list[Chunk], embedder: Any, cfg: Config
) -> tuple[list[QueryTrace], list[list[ContextItem]]]:
    """Traces (top chunks with scores, passage ranking) and the reader's contexts."""
    if not chunks:
        raise ValueError("dense_passage retrieval: the corpus has no chunks")
    rc = cfg.retriever
    chunk_emb = _encode_chunks(chunks, embedder, cfg)  # [C, d]
    q_emb = embedder.encode([q.question for q in questions], is_query=True)  # [Q, d]
    depth = min(max(rc.passage_top_k, rc.rerank_candidates if rc.reranker else 0, 10), len(chunks))
    traces: list[QueryTrace] = []
    contexts: list[list[ContextItem]] = []
    for start in range(0, len(questions), 1024):  # block over queries to bound the [Q, C] matrix
        sims = q_emb[start : start + 1024] @ chunk_emb.T  # [q, d] @ [d, C] -> [q, C]
        scores, idx = sims.topk(depth, dim=1)  # [q, depth]
        for row, q in enumerate(questions[start : start + 1024]):
            ranked = [(chunks[int(i)], float(s)) for s, i in zip(scores[row], idx[row])]
            if rc.reranker:
                cands = ranked[: rc.rerank_candidates]
                new = _rerank(rc.reranker, rc.device, q.question, [c for c, _ in cands])
                ranked = sorted(zip([c for c, _ in cands], new), key=lambda x: -x[1]) + ranked[len(cands):]
            cand = [
                {"id": c.id, "text": c.text, "title": c.title, "passage_id": c.passage_id, "score": s}
                for c, s in ranked
            ]
            contexts.append([
                ContextItem(text=c.text, score=sc, passage_id=c.passage_id, title=c.title,
                            atom_ids=[c.id], atom_texts=[c.text], atom_scores=[sc],
                            passage_ids=[c.passage_id])
                for c, sc in ranked[: rc.passage_top_k]
            ])
            traces.append(
                QueryTrace(
                    question_id=q.id,
                    question=q.question,
                    candidates=[cand],
                    context=cand[: rc.passage_top_k],
                    retrieved_passages=unique_in_order(c["passage_id"] for c in cand),
                )
            )
    return traces, contexts
