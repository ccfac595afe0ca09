"""CUDA paths (``-m gpu``; skipped without CUDA): PPR and its certified top-k on the GPU equal the
CPU results, synonym KNN on the GPU equals the CPU, and reduced-precision encoders stay within
the cosine bound. Only torch (and transformers for the encoder test) is needed, so this file
runs on a bare accelerator machine (``scripts/device_check.sh``)."""
from __future__ import annotations

import pytest
import torch

from atomicrag.retrieve.propagate import PPR, topk_atoms
from tests.marks import MINILM, needs

pytestmark = pytest.mark.gpu


def _graph(num_e: int = 2000, num_a: int = 1500, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    atoms = torch.arange(num_a).repeat_interleave(4) + num_e
    ents = torch.randint(0, num_e, (4 * num_a,), generator=g)
    e1, e2 = torch.randint(0, num_e, (2, 6 * num_e), generator=g)
    keep = e1 != e2
    src, dst = torch.cat([atoms, e1[keep]]), torch.cat([ents, e2[keep]])
    w = torch.cat([torch.ones(atoms.numel()), 0.5 + torch.rand(int(keep.sum()), generator=g)])
    n = num_e + num_a
    adj = torch.sparse_coo_tensor(torch.stack([torch.cat([src, dst]), torch.cat([dst, src])]),
                                  torch.cat([w, w]), (n, n)).coalesce().to_sparse_csr()
    seeds = torch.zeros(64, n)
    for q in range(64):
        seeds[q, torch.randint(0, n, (12,), generator=g)] = torch.rand(12, generator=g) + 0.1
    return adj, seeds


@pytest.mark.parametrize("stop", ["accuracy", "topk"])
def test_ppr_on_cuda_matches_cpu(stop: str) -> None:
    adj, seeds = _graph()
    cpu = PPR(restart=0.3, max_iter=20, device="cpu", stop=stop)
    gpu = PPR(restart=0.3, max_iter=20, device="cuda", stop=stop)
    v_c, i_c = cpu.topk(adj, seeds, 2000, 25)
    v_g, i_g = gpu.topk(adj.cuda(), seeds.cuda(), 2000, 25)
    assert v_g.is_cuda
    same = [len(set(a.tolist()) & set(b.tolist())) / 25 for a, b in zip(i_c, i_g.cpu())]
    assert sum(same) / len(same) == 1.0
    torch.testing.assert_close(v_g.cpu(), v_c, atol=1e-5, rtol=1e-4)
    if stop == "accuracy":
        full = gpu(adj.cuda(), seeds.cuda())  # [Q, N] scores on the GPU
        torch.testing.assert_close(full.cpu(), cpu(adj, seeds), atol=1e-5, rtol=1e-4)
        assert torch.equal(topk_atoms(full, 2000, 25)[1].cpu(), i_g.cpu())


def test_synonym_knn_on_cuda_matches_cpu() -> None:
    from atomicrag.graph.synonyms import synonym_edges

    g = torch.Generator().manual_seed(0)
    x = torch.randn(4000, 64, generator=g)
    x[1::2] = x[::2] + 0.2 * torch.randn(2000, 64, generator=g)  # near-duplicate pairs
    keys = [f"entity {i}" for i in range(4000)]
    kw = {"threshold": 0.8, "max_neighbors": 5, "min_alnum": 4, "batch": 512}
    cpu = synonym_edges(keys, x, device="cpu", **kw)
    gpu = synonym_edges(keys, x, device="cuda", **kw)
    assert cpu.src.numel() > 1000
    assert torch.equal(cpu.src, gpu.src) and torch.equal(cpu.dst, gpu.dst)
    torch.testing.assert_close(cpu.weight, gpu.weight, atol=1e-4, rtol=0)


@needs("transformers", MINILM)
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_reduced_precision_encoder_on_cuda(precision: str) -> None:
    from atomicrag.embed.encoders import TransformersEmbedder

    texts = ["No Greater Glory is a 1934 film directed by Frank Borzage.", "Warsaw is the capital of Poland.",
             "The stock market fell sharply after the bank raised interest rates."] * 20
    ref = TransformersEmbedder("minilm", device="cpu", precision="fp32").encode(texts)
    emb = TransformersEmbedder("minilm", device="cuda", precision=precision)
    assert emb.name.endswith(precision)
    out = emb.encode(texts)
    assert out.dtype == torch.float32 and float((out * ref).sum(1).min()) >= 0.999
