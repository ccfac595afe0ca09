"""Vector indexes: torch exact top-k equals brute force; FAISS agrees with it."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from atomicrag.embed import TorchExactIndex, VectorIndex, build_index


def _data(n: int = 500, q: int = 37, d: int = 32, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(n, d, generator=g), dim=1), F.normalize(torch.randn(q, d, generator=g), dim=1)


def test_exact_index_equals_brute_force_across_blocks() -> None:
    vecs, queries = _data()
    # a tiny memory budget forces one query per block
    index = TorchExactIndex(32, device="cpu", max_block_bytes=4 * 500)
    index.add(vecs[:200])
    index.add(vecs[200:])  # ids continue across add() calls
    assert isinstance(index, VectorIndex) and len(index) == 500
    scores, ids = index.search(queries, 10)
    ref = torch.topk(queries @ vecs.T, 10, dim=1)
    assert ids.dtype == torch.long and scores.shape == (37, 10)
    assert torch.equal(ids, ref.indices)
    assert torch.allclose(scores, ref.values, atol=1e-6)


def test_k_is_clamped_and_empty_index_is_fine() -> None:
    vecs, queries = _data(n=5)
    index = build_index("exact", 32, device="cpu")
    assert index.search(queries, 3)[1].shape == (37, 0)
    index.add(vecs)
    _, ids = index.search(queries, 50)
    assert ids.shape == (37, 5) and sorted(ids[0].tolist()) == list(range(5))
    with pytest.raises(ValueError, match=r"\[n, 32\]"):
        index.add(torch.zeros(3, 31))


def test_faiss_flat_agrees_with_exact_and_hnsw_recalls() -> None:
    pytest.importorskip("faiss")
    vecs, queries = _data(n=2000, q=50)
    exact = build_index("exact", 32, device="cpu")
    flat = build_index("faiss", 32)
    hnsw = build_index("faiss", 32, hnsw=True)
    for index in (exact, flat, hnsw):
        index.add(vecs)
    e_scores, e_ids = exact.search(queries, 10)
    f_scores, f_ids = flat.search(queries, 10)
    assert torch.equal(e_ids, f_ids)
    assert torch.allclose(e_scores, f_scores, atol=1e-5)
    _, h_ids = hnsw.search(queries, 10)
    recall = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(h_ids, e_ids)) / e_ids.numel()
    assert recall > 0.9
    assert flat.search(queries, 5000)[1].shape == (50, 2000)
