"""Q-Iter traversal (the Clue-RAG style retrieval of the other AtomicRAG library; docs/fidelity.md).

Per query:
1. anchors: the ``anchor_top_k`` atoms most similar to the query, plus every atom that contains
   a seeded (query-linked) entity; the ``beam_size`` best anchors by cosine form the first beam;
2. for ``traversal_depth`` hops: expand the beam atom -> entity -> atom over containment edges,
   score the new atoms by cosine to the *current* query vector and keep the best ``beam_size``;
3. after each hop the query vector moves away from what was just retrieved,
   ``q <- normalise(q - query_update_weight * mean(retrieved embeddings))``, so the next hop looks
   for complementary facts instead of near-duplicates.

An atom's score is its cosine at the moment it was retrieved (clamped to a small positive value so
that retrieved atoms always outrank the rest, which score 0). Entity columns score 0.

Batching: the beam is a dense ``[b, A]`` mask per query block; the two expansion hops are sparse
``[A, E] x [E, b]`` products with the containment matrix and the cosine scores one ``[b, d] x [d, A]``
matmul per hop.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from atomicrag.retrieve.propagate.base import GraphCache, resolve_device, seed_triplets

_EPS_SCORE = 1e-6


class QIter:
    def __init__(
        self,
        traversal_depth: int = 2,
        beam_size: int = 10,
        anchor_top_k: int = 10,
        query_update_weight: float = 0.3,
        device: str = "auto",
        block_size: int = 256,
    ) -> None:
        self.depth, self.beam, self.anchor_k = int(traversal_depth), int(beam_size), int(anchor_top_k)
        self.update_w = float(query_update_weight)
        self.device = resolve_device(device)
        self.block_size = int(block_size)
        self._cache = GraphCache()

    def _containment(self, prep: Any, num_entities: int) -> torch.Tensor:
        """Binary atom -> entity matrix ``C [A, E]`` (CSR) taken from the adjacency."""
        key = ("qiter_contain", num_entities)
        if key not in prep.extra:
            keep = (prep.row >= num_entities) & (prep.col < num_entities) & (prep.val > 0)
            a = prep.num_nodes - num_entities
            idx = torch.stack([prep.row[keep] - num_entities, prep.col[keep]])
            c = torch.sparse_coo_tensor(idx, torch.ones(int(keep.sum()), device=prep.device), (a, num_entities))
            prep.extra[key] = (c.coalesce().to_sparse_csr(), c.coalesce().t().coalesce().to_sparse_csr())
        return prep.extra[key]

    def __call__(
        self,
        adj: torch.Tensor,
        seeds: torch.Tensor,
        *,
        atom_embeddings: torch.Tensor,
        query_embeddings: torch.Tensor,
        num_entities: int,
        **_: Any,
    ) -> torch.Tensor:
        prep = self._cache.get(adj, self.device)
        dev, n, e = prep.device, prep.num_nodes, num_entities
        emb = F.normalize(atom_embeddings.to(dev, torch.float32), dim=1)  # [A, d]
        if e + emb.shape[0] != n:
            raise ValueError(f"{e} entities + {emb.shape[0]} atoms != {n} nodes")
        qv_all = F.normalize(query_embeddings.to(dev, torch.float32), dim=1)  # [Q, d]
        trip = seed_triplets(seeds.to(dev), n, normalise=False)
        c_ae, c_ea = self._containment(prep, e)  # [A, E], [E, A]
        out = torch.zeros(qv_all.shape[0], n, device=dev)  # [Q, N]
        for q0 in range(0, qv_all.shape[0], self.block_size):
            q1 = min(qv_all.shape[0], q0 + self.block_size)
            blk = trip.block(q0, q1)
            ent = blk.node < e
            ent_mask = torch.zeros(e, q1 - q0, device=dev)  # [E, b] seeded entities
            ent_mask[blk.node[ent], blk.query[ent]] = 1.0
            out[q0:q1, e:] = self._block(qv_all[q0:q1], emb, ent_mask, c_ae, c_ea)
        return out

    def _block(
        self, qv: torch.Tensor, emb: torch.Tensor, ent_mask: torch.Tensor, c_ae: torch.Tensor, c_ea: torch.Tensor
    ) -> torch.Tensor:
        b, a = qv.shape[0], emb.shape[0]
        scores = torch.zeros(b, a, device=qv.device)  # [b, A]
        retrieved = torch.zeros(b, a, dtype=torch.bool, device=qv.device)
        sim = qv @ emb.T  # [b, d] @ [d, A] -> [b, A]
        # anchors: top-k similar atoms and atoms containing a query entity
        cand = torch.zeros(b, a, dtype=torch.bool, device=qv.device)
        k = min(self.anchor_k, a)
        if k > 0:
            cand.scatter_(1, sim.topk(k, dim=1).indices, True)
        cand |= (c_ae @ ent_mask).T > 0  # [A, E] @ [E, b] -> [A, b] -> [b, A]
        q_cur = qv
        for hop in range(self.depth + 1):
            if hop > 0:
                sim = q_cur @ emb.T  # [b, d] @ [d, A] -> [b, A], against the moved query
            masked = torch.where(cand & ~retrieved, sim, torch.full_like(sim, float("-inf")))
            top = masked.topk(min(self.beam, a), dim=1)  # [b, beam]
            valid = torch.isfinite(top.values)  # fewer candidates than the beam
            if not bool(valid.any()):
                break
            beam = torch.zeros(b, a, dtype=torch.bool, device=qv.device)
            beam.scatter_(1, top.indices, valid)
            retrieved |= beam
            # Slots without a candidate (-inf) point at arbitrary atoms, possibly ones retrieved in
            # an earlier hop: they must leave those scores as they are, not write 0 over them.
            kept = scores.gather(1, top.indices)  # [b, beam]
            scores.scatter_(1, top.indices, torch.where(valid, top.values.clamp_min(_EPS_SCORE), kept))
            # move the query away from what was just retrieved (diversity)
            if self.update_w > 0:
                cnt = valid.sum(1, keepdim=True).clamp_min(1)  # [b, 1]
                mean = (emb[top.indices] * valid.unsqueeze(2)).sum(1) / cnt  # [b, beam, d] -> [b, d]
                q_cur = F.normalize(q_cur - self.update_w * mean, dim=1)
            # expand atom -> entity -> atom over containment edges
            ents = (c_ea @ beam.T.float()) > 0  # [E, A] @ [A, b] -> [E, b]
            cand = (c_ae @ ents.float()).T > 0  # [A, E] @ [E, b] -> [A, b] -> [b, A]
        return torch.where(retrieved, scores, torch.zeros_like(scores))
