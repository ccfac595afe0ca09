"""Issue 19, item 8: the vanilla-RAG reranker is built once per (model, device), not per question."""
from __future__ import annotations

import sys
import types

import torch

from atomicrag.core.config import Config
from atomicrag.core.config_query import RetrieverConfig
from atomicrag.core.schemas import Chunk, Question
from atomicrag.retrieve import dense_passage


class _Embedder:
    name, dim = "onehot", 4

    def encode(self, texts, *, is_query=False):
        return torch.eye(4)[[hash(t) % 4 for t in texts]]


def test_cross_encoder_is_built_once_for_all_questions(monkeypatch, tmp_path):
    built: list[tuple[str, object]] = []

    class FakeCrossEncoder:
        def __init__(self, name, device=None):
            built.append((name, device))

        def predict(self, pairs):
            return [float(len(text)) for _, text in pairs]

    monkeypatch.setitem(sys.modules, "sentence_transformers",
                        types.SimpleNamespace(CrossEncoder=FakeCrossEncoder))
    monkeypatch.setattr(dense_passage, "_encode_chunks", lambda chunks, emb, cfg: emb.encode([c.text for c in chunks]))
    dense_passage.cross_encoder.cache_clear()
    cfg = Config(retriever=RetrieverConfig(name="dense_passage", reranker="some/reranker", passage_top_k=2,
                                           rerank_candidates=3, device="cpu"))
    chunks = [Chunk(id=f"c{i}", passage_id=f"p{i}", text="x" * (i + 1)) for i in range(6)]
    questions = [Question(id=f"q{i}", question=f"question {i}?") for i in range(5)]
    traces, contexts = dense_passage.retrieve_passages(questions, chunks, _Embedder(), cfg)
    assert len(traces) == 5 and all(len(c) == 2 for c in contexts)
    assert built == [("some/reranker", "cpu")]
    # the reranker's order wins among the candidates: the longest text first
    assert all(len(c[0].text) >= len(c[1].text) for c in contexts)
    dense_passage.cross_encoder.cache_clear()
