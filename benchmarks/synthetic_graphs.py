"""Synthetic Atom–Entity Graphs at the paper's scales (Table 6) and pseudo-queries, for the benchmarks.

  medium    Graph-Bench Medical:  9,087 entities + 5,560 atoms, ~121k entity–entity edges, ~4 containment/atom
  hotpot    HotpotQA:            84,592 entities + 28,403 atoms, ~455k entity–entity edges, ~4 containment/atom
  hotpot10x 10x HotpotQA
The generator mimics how the graph is built: passages of ~3 atoms, each passage mentions a few
popular entities (Zipf) and several entities of its own; atoms contain ~4 of their passage's
entities; relevance edges join entities of one passage (weight = occurrences); synonym edges form
small random clusters (weight cosine in [0.8, 1]); entity ids follow first appearance, as when the
graph is built passage by passage. Queries seed ~4-10 entities (weight = cosine in [0.3, 1]) and 25
atoms with weight 0.1 x cosine, as the paper's seeding does.
"""
from __future__ import annotations

import math

import torch

SCALES = {  # entities, atoms, relevance edges, synonym edges
    "medium": (9_087, 5_560, 21_068, 99_707),
    "hotpot": (84_592, 28_403, 177_734, 276_577),
    "hotpot10x": (845_920, 284_030, 1_777_340, 2_765_770),
}


def synthetic_graph(
    num_entities: int, num_atoms: int, relevance: int, synonym: int, contain_per_atom: int = 4,
    atoms_per_passage: int = 3, popular_frac: float = 0.2, popular_per_passage: int = 4, seed: int = 0,
) -> tuple[torch.Tensor, dict]:
    """A symmetric CSR adjacency [N, N] (entities first, then atoms) and its passage structure."""
    g = torch.Generator().manual_seed(seed)
    e, a = num_entities, num_atoms
    p = math.ceil(a / atoms_per_passage)
    pool = int(e * popular_frac)  # entities shared across passages, drawn by a Zipf law
    own = e - pool  # entities mentioned by a single passage
    zipf = (torch.arange(pool, dtype=torch.float64) + 5.0) ** -1.1
    pop_ment = torch.multinomial(zipf, p * popular_per_passage, replacement=True, generator=g)  # [P*k]
    pop_pass = torch.arange(p).repeat_interleave(popular_per_passage)
    own_pass = torch.randint(0, p, (own,), generator=g)
    own_ent = torch.arange(pool, e)
    m_pass = torch.cat([pop_pass, own_pass])  # mentions: (passage, entity)
    m_ent = torch.cat([pop_ment, own_ent])
    order = torch.argsort(m_pass, stable=True)
    m_pass, m_ent = m_pass[order], m_ent[order]
    # relabel entities by first appearance (passage order); never-mentioned ones go last
    first = torch.full((e,), len(m_ent), dtype=torch.int64).scatter_reduce(
        0, m_ent, torch.arange(len(m_ent)), reduce="amin")
    new_id = torch.empty(e, dtype=torch.int64)
    new_id[torch.argsort(first, stable=True)] = torch.arange(e)
    m_ent = new_id[m_ent]
    start = torch.searchsorted(m_pass, torch.arange(p))  # [P] first mention of each passage
    cnt = torch.searchsorted(m_pass, torch.arange(p), right=True) - start  # [P] >= popular_per_passage

    def pick(passages: torch.Tensor) -> torch.Tensor:  # a random mention of each given passage
        return m_ent[start[passages] + (torch.rand(passages.shape, generator=g) * cnt[passages]).long()]

    def unique_pairs(x: torch.Tensor, y: torch.Tensor, target: int) -> tuple[torch.Tensor, ...]:
        """Distinct (x, y) pairs, x != y, ``target`` of them at random, weight = occurrences."""
        x, y = torch.minimum(x, y), torch.maximum(x, y)  # one orientation per undirected pair
        keep = x != y
        key, count = torch.unique(x[keep] * (e + a) + y[keep], return_counts=True)
        sel = torch.randperm(key.numel(), generator=g)[:target]
        return key[sel] // (e + a), key[sel] % (e + a), count[sel].float()

    atom_pass = torch.arange(a) // atoms_per_passage
    ca = torch.arange(a).repeat_interleave(2 * contain_per_atom)
    ca, ce, _ = unique_pairs(ca + e, pick(atom_pass[ca]), contain_per_atom * a)  # atom -> entity of its passage
    cw = torch.ones(ca.numel())
    rp = torch.randint(0, p, (2 * relevance,), generator=g)
    rs, rd, rw = unique_pairs(pick(rp), pick(rp), relevance)  # relevance: pairs within a passage
    # synonym clusters of random entities, all pairs, trimmed to the target count
    csize = max(8, math.ceil(2.4 * synonym / e) + 1)
    perm = torch.randperm(e, generator=g)[: (e // csize) * csize].view(-1, csize)
    iu = torch.triu_indices(csize, csize, 1)
    ss, sd = perm[:, iu[0]].reshape(-1), perm[:, iu[1]].reshape(-1)
    sel = torch.randperm(ss.numel(), generator=g)[:synonym]
    ss, sd = ss[sel], sd[sel]
    src = torch.cat([ca, rs, ss])
    dst = torch.cat([ce, rd, sd])
    w = torch.cat([cw, rw, 0.8 + 0.2 * torch.rand(ss.numel(), generator=g)])
    n = e + a
    idx = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    adj = torch.sparse_coo_tensor(idx, torch.cat([w, w]), (n, n)).coalesce()  # duplicates summed
    info = {"atom_pass": atom_pass, "num_entities": e, "num_atoms": a, "undirected_edges": adj._nnz() // 2}
    return adj.to_sparse_csr(), info


def synthetic_seeds(adj: torch.Tensor, info: dict, num_queries: int, seed: int = 1,
                    atom_seeds: int = 25, atom_weight: float = 0.1) -> torch.Tensor:
    """Sparse COO seeds [Q, N]: entities of 1-2 'answer' atoms plus similar atoms (weight 0.1 x cos)."""
    g = torch.Generator().manual_seed(seed)
    e, a = info["num_entities"], info["num_atoms"]
    crow, col = adj.crow_indices(), adj.col_indices()
    rows, cols, vals = [], [], []
    for q in range(num_queries):
        hops = 1 + int(torch.rand(1, generator=g) < 0.5)
        answer = torch.randint(0, a, (hops,), generator=g)
        ents = torch.cat([col[crow[e + x]: crow[e + x + 1]] for x in answer.tolist()])
        ents = torch.unique(ents[ents < e])[:20]
        if ents.numel():
            rows.append(torch.full((ents.numel(),), q))
            cols.append(ents)
            vals.append(0.3 + 0.7 * torch.rand(ents.numel(), generator=g))
        # 'similar' atoms: passage mates of the answers, then random atoms
        mates = torch.cat([torch.nonzero(info["atom_pass"] == info["atom_pass"][x]).squeeze(1) for x in answer])
        rand = torch.randint(0, a, (atom_seeds,), generator=g)
        atoms = torch.unique(torch.cat([mates, rand]))[:atom_seeds]
        rows.append(torch.full((atoms.numel(),), q))
        cols.append(atoms + e)
        vals.append(atom_weight * (0.5 + 0.5 * torch.rand(atoms.numel(), generator=g)))
    idx = torch.stack([torch.cat(rows), torch.cat(cols)])
    return torch.sparse_coo_tensor(idx, torch.cat(vals), (num_queries, e + a)).coalesce()


def real_graph(folder: str, num_queries: int, seed: int = 1, atom_seeds: int = 25,
               atom_weight: float = 0.1) -> tuple[torch.Tensor, dict, torch.Tensor]:
    """A saved Atom–Entity Graph (atomicrag.graph.io) and pseudo-queries on it.

    A query is the mean embedding of 1-2 random atoms: entity seeds are those atoms' entities
    (weight 1), atom seeds the 25 atoms most similar to the query (weight 0.1 x cosine), as the
    paper's seeding would produce for a question about those facts.
    """
    from atomicrag.graph.io import load_graph

    graph = load_graph(folder)
    adj = graph.adjacency.to_sparse_csr().float()
    e, a = graph.num_entities, graph.num_atoms
    emb = torch.nn.functional.normalize(graph.atom_embeddings.float(), dim=1)  # [A, d]
    g = torch.Generator().manual_seed(seed)
    crow, col = adj.crow_indices(), adj.col_indices()
    rows, cols, vals = [], [], []
    answers = torch.randint(0, a, (num_queries, 2), generator=g)
    two = torch.rand(num_queries, generator=g) < 0.5
    qv = torch.nn.functional.normalize(emb[answers[:, 0]] + two.float().unsqueeze(1) * emb[answers[:, 1]], dim=1)
    sim, top = (qv @ emb.T).topk(atom_seeds, dim=1)  # [Q, d] @ [d, A] -> [Q, A] -> [Q, 25]
    for q in range(num_queries):
        picked = answers[q, : 1 + int(two[q])].tolist()
        ents = torch.cat([col[crow[e + x]: crow[e + x + 1]] for x in picked])
        ents = torch.unique(ents[ents < e])[:20]
        rows += [torch.full((ents.numel(),), q), torch.full((atom_seeds,), q)]
        cols += [ents, top[q] + e]
        vals += [torch.ones(ents.numel()), atom_weight * sim[q].clamp_min(1e-3)]
    idx = torch.stack([torch.cat(rows), torch.cat(cols)])
    seeds = torch.sparse_coo_tensor(idx, torch.cat(vals), (num_queries, e + a)).coalesce()
    info = {"num_entities": e, "num_atoms": a, "undirected_edges": adj._nnz() // 2}
    return adj, info, seeds
