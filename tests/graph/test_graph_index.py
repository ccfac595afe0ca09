"""Artifacts: save/load round trip and the stage caches of index_corpus."""
from __future__ import annotations

import json

import pytest
import torch

from atomicrag.core.config import AtomizerConfig, Config, GraphConfig
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.graph.build import build_graph
from atomicrag.graph.cached_build import index_corpus
from atomicrag.graph.io import load_graph, save_graph

from .helpers import CHUNKS, VECTORS, CountingAtomizer, TableEmbedder, corpus


def test_save_load_round_trip(tmp_path):
    g = build_graph(corpus(), TableEmbedder(VECTORS), GraphConfig())
    save_graph(g, tmp_path / "g")
    h = load_graph(tmp_path / "g")
    assert h.entity_keys == g.entity_keys and h.entity_texts == g.entity_texts
    assert [a.to_dict() for a in h.atoms] == [a.to_dict() for a in g.atoms]
    assert torch.equal(h.adjacency.to_dense(), g.adjacency.to_dense())
    for k in g.edges:
        assert torch.equal(h.edges[k].src, g.edges[k].src) and torch.equal(h.edges[k].weight, g.edges[k].weight)
    assert torch.equal(h.atom_embeddings, g.atom_embeddings) and h.embedder_name == "table"
    assert h.meta == json.loads(json.dumps(g.meta))
    assert not list((tmp_path / "g").glob("*.pkl"))


def test_changing_only_the_embedder_does_not_reatomize(tmp_path):
    cfg = Config(atomizer=AtomizerConfig(name="sentence"))
    at = CountingAtomizer()
    g1 = index_corpus(CHUNKS, cfg, None, FakeEmbedder(16), tmp_path, "toy", atomizer=at, progress=False)
    g2 = index_corpus(CHUNKS, cfg, None, FakeEmbedder(16), tmp_path, "toy", atomizer=at, progress=False)
    assert at.calls == 1 and torch.equal(g1.atom_embeddings, g2.atom_embeddings)
    g3 = index_corpus(CHUNKS, cfg, None, FakeEmbedder(32), tmp_path, "toy", atomizer=at, progress=False)
    assert at.calls == 1 and g3.atom_embeddings.shape[1] == 32
    cfg.graph.containment_keys = "raw"  # a graph switch: new graph, same atoms
    g4 = index_corpus(CHUNKS, cfg, None, FakeEmbedder(32), tmp_path, "toy", atomizer=at, progress=False)
    assert at.calls == 1 and len(g4.edges["containment"]) < len(g3.edges["containment"])
    cfg.atomizer.min_atom_chars = 5  # an atomizer field: re-atomize
    index_corpus(CHUNKS, cfg, None, FakeEmbedder(32), tmp_path, "toy", atomizer=at, progress=False)
    assert at.calls == 2
    assert len(list((tmp_path / "toy" / "atomize").iterdir())) == 2
    assert len(list((tmp_path / "toy" / "graph").iterdir())) == 4


def test_cached_graph_with_another_dimension_is_a_clear_error(tmp_path):
    cfg = Config()
    index_corpus(CHUNKS, cfg, None, TableEmbedder(VECTORS, dim=4, name="same"), tmp_path, "toy",
                 atomizer=CountingAtomizer(), progress=False)
    with pytest.raises(ValueError, match="dim=8"):
        index_corpus(CHUNKS, cfg, None, TableEmbedder({}, dim=8, name="same"), tmp_path, "toy",
                     atomizer=CountingAtomizer(), progress=False)


def test_empty_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no chunks"):
        index_corpus([], Config(), None, FakeEmbedder(8), tmp_path, "toy", progress=False)
