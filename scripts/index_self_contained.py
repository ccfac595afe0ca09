#!/usr/bin/env python
"""Index 2Wiki with self-contained sentence atoms (``atomizer.resolve_subject=true``) cheaply.

A fresh index re-runs spaCy over 6,619 chunks and re-embeds 64k texts (10-30 min on the shared
2-core VM). Resolving a leading pronoun changes neither the sentence split nor the entities
(the subject is the title entity that ``title_context`` already adds), only the text of the
resolved atoms. So this script derives the resolve_subject atomize result from the cached plain
one, checks on a sample of chunks that it equals what ``SentenceAtomizer(resolve_subject=True)``
produces from scratch (fails loudly otherwise), and stores it under the same cache key the real
atomizer would get; the graph stage then embeds only texts it has not seen (memo of the plain
graph's vectors, same embedder). Afterwards ``tune_retrieval.py --resolve`` loads it.

    python scripts/index_self_contained.py [--check 300]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATOMICRAG_NO_PROGRESS", "1")

import torch

from atomicrag.atomize.base import title_entity
from atomicrag.atomize.selfcontained import self_contained
from atomicrag.atomize.sentence import SentenceAtomizer
from atomicrag.core.compose import load_config
from atomicrag.core.schemas import AtomizeResult, Chunk
from atomicrag.data.loaders import load_dataset
from atomicrag.data.token_windows import chunk_passages
from atomicrag.embed.factory import build_embedder
from atomicrag.graph.cached_build import atomize_cached, index_corpus

BASE = {
    "dataset": {"name": "2wikimultihopqa", "split": "dev", "format": "normalized", "reader": "precise"},
    "embedder": {"name": "onnx", "model": "minilm", "batch_size": 32}, "atomizer": {"name": "sentence"},
    "reader": {"name": "none"}, "retriever": {"name": "ppr"},
}


class Derived:
    """Atomizer stand-in: the plain atoms with the resolve_subject rewrite applied."""

    name = "sentence"
    uses_llm = False

    def __init__(self, plain: AtomizeResult, chunks: list[Chunk]) -> None:
        self.plain, self.title = plain, {c.id: c.title for c in chunks}

    def atomize(self, chunks: list[Chunk]) -> AtomizeResult:
        atoms = []
        for a in self.plain.atoms:
            title = self.title[a.chunk_id]
            prefix = f"{title.strip()}: " if title.strip() else ""
            if not a.text.startswith(prefix):
                raise ValueError(f"atom {a.id} lacks its title prefix {prefix!r}: {a.text[:80]!r}")
            sentence = a.text[len(prefix):]
            text, ents, resolved = self_contained(sentence, list(a.entities), title_entity(title) if title.strip() else "")
            if not resolved:
                text = prefix + text
                ents = list(a.entities)
            atoms.append(dataclasses.replace(a, text=text, entities=ents))
        return AtomizeResult(atoms=atoms, triples=list(self.plain.triples), failures=list(self.plain.failures),
                             stats={**self.plain.stats, "derived_from_plain": True})


class Memo:
    def __init__(self, inner, texts: list[str], vectors: torch.Tensor) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.memo = dict(zip(texts, vectors))
        self.new = 0

    def encode(self, texts: list[str], *, is_query: bool = False) -> torch.Tensor:
        todo = [t for t in dict.fromkeys(texts) if is_query or t not in self.memo]
        if todo:
            self.new += len(todo)
            for t, v in zip(todo, torch.nn.functional.normalize(self.inner.encode(todo, is_query=is_query), dim=1)):
                self.memo[t] = v
        return torch.stack([self.memo[t] for t in texts])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", type=int, default=300, help="chunks re-atomized from scratch to verify the derivation")
    ap.add_argument("--cache-dir", default="cache")
    args = ap.parse_args()
    base = load_config(BASE)
    resolved_cfg = load_config({**BASE, "atomizer": {"name": "sentence", "resolve_subject": True}})
    data = load_dataset(base.dataset, base.paths.resolved_data_dir(dataset=base.dataset))
    chunks = chunk_passages(data.passages, base.dataset)
    embedder = build_embedder(base.embedder, base.fidelity)
    plain_graph = index_corpus(chunks, base, None, embedder, args.cache_dir, data.name, progress=False)
    plain, _ = atomize_cached(chunks, base, None, args.cache_dir, data.name)
    derived = Derived(plain, chunks).atomize(chunks)
    sample = sorted(random.Random(0).sample(range(len(chunks)), min(args.check, len(chunks))))
    picked = {chunks[i].id for i in sample}
    truth = SentenceAtomizer(resolved_cfg.atomizer, progress=False).atomize([chunks[i] for i in sample]).atoms
    mine = [a for a in derived.atoms if a.chunk_id in picked]
    diff = [(t.text, m.text) for t, m in zip(truth, mine) if (t.text, t.entities) != (m.text, m.entities)]
    if len(truth) != len(mine) or diff:
        raise SystemExit(f"derivation differs from the real atomizer on {len(diff)} of {len(truth)} atoms: {diff[:3]}")
    n_res = sum(a.text != b.text for a, b in zip(plain.atoms, derived.atoms))
    print(f"verified on {len(truth)} atoms of {len(sample)} chunks; {n_res} of {len(derived.atoms)} atoms rewritten")
    memo = Memo(embedder, [a.text for a in plain_graph.atoms] + plain_graph.entity_texts,
                torch.cat([plain_graph.atom_embeddings, plain_graph.entity_embeddings]))
    graph = index_corpus(chunks, resolved_cfg, None, memo, args.cache_dir, data.name,
                         atomizer=Derived(plain, chunks), progress=False)
    print(f"graph: {graph.num_nodes:,} nodes, {memo.new} texts embedded anew; meta key {graph.meta.get('graph_key')}")


if __name__ == "__main__":
    main()
