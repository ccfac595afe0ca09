#!/usr/bin/env python
"""Triangle counting for ``atomicrag stats`` / ``AtomicRAG.stats()``: the degree-ordered count
(``graph.stats.triangles``) against the row-blocked ``(A @ A) * A`` it replaced, in one process,
on the synthetic Atom–Entity Graphs of ``benchmarks/synthetic_graphs.py`` (Zipf-popular entities are hubs).
Both counts must agree node by node; the ratio is baseline time / new time.

    python scripts/bench.py triangles   # medium, hotpot, long
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_graphs import SCALES, synthetic_graph  # noqa: E402

from atomicrag.graph.stats import binary_symmetric, triangles  # noqa: E402


def baseline_triangles(a: sp.csr_matrix, block: int = 4096) -> np.ndarray:
    """The former count: row blocks of (A @ A) * A, whose cost is the sum of squared degrees."""
    tri2 = np.zeros(a.shape[0])
    for start in range(0, a.shape[0], block):
        rows = a[start:start + block]
        tri2[start:start + rows.shape[0]] = np.asarray((rows @ a).multiply(rows).sum(axis=1)).ravel()
    return tri2 / 2


def long_document_graph(entities: int = 600, atoms: int = 60_000, per_atom: int = 3, seed: int = 0) -> sp.csr_matrix:
    """What a long single-topic text gives (``benchmarks/long_documents.py``, 16 MB): few distinct
    entities, each contained in thousands of atoms, and relevance edges among entities that share an
    atom. Entities first, then atoms; Zipf-popular entities."""
    rng = np.random.default_rng(seed)
    zipf = (np.arange(entities) + 5.0) ** -1.1
    ent = rng.choice(entities, size=(atoms, per_atom), p=zipf / zipf.sum())  # [atoms, k]
    rows = np.repeat(np.arange(atoms) + entities, per_atom)
    pairs = [(ent[:, i], ent[:, j]) for i in range(per_atom) for j in range(i + 1, per_atom)]
    src = np.concatenate([rows] + [p[0] for p in pairs])
    dst = np.concatenate([ent.ravel()] + [p[1] for p in pairs])
    return binary_symmetric(src, dst, entities + atoms)


def binary(adj) -> sp.csr_matrix:  # torch sparse CSR [N, N] -> binary scipy CSR without self loops
    crow, col = adj.crow_indices().numpy(), adj.col_indices().numpy()
    return binary_symmetric(np.repeat(np.arange(len(crow) - 1), np.diff(crow)), col, adj.shape[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", nargs="+", default=["medium", "hotpot", "long"], choices=sorted(SCALES) + ["long"],
                    help="benchmarks/synthetic_graphs.py scales, and long: a long single-topic document (600 entity hubs)")
    args = ap.parse_args()
    print(f"{'graph':10s} {'nodes':>9s} {'edges':>10s} {'max deg':>8s} {'(A@A)*A s':>10s} {'ordered s':>10s} {'ratio':>7s}")
    for scale in args.scales:
        a = long_document_graph() if scale == "long" else binary(synthetic_graph(*SCALES[scale])[0])
        t = time.perf_counter()
        old = baseline_triangles(a)
        t_old = time.perf_counter() - t
        t = time.perf_counter()
        new = triangles(a)
        t_new = time.perf_counter() - t
        if not np.array_equal(old, new):
            sys.exit(f"{scale}: triangle counts differ at {int((old != new).sum())} nodes")
        deg = np.diff(a.indptr)
        print(f"{scale:10s} {a.shape[0]:9,d} {a.nnz // 2:10,d} {int(deg.max()):8,d} {t_old:10.2f} {t_new:10.2f} "
              f"{t_old / t_new:6.1f}x")


if __name__ == "__main__":
    main()
