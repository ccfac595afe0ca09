"""The engine wires the query side from a whole config: the retriever gets its own sections, the
reader's context is assembled from what it ranked (``engine.wiring``, ``engine.context_builder``)."""
from __future__ import annotations

import dataclasses

from atomicrag.core.config import Config, EmbedderConfig, FidelityConfig, ReaderConfig, RetrieverConfig
from atomicrag.core.schemas import Atom, AtomizeResult, Question
from atomicrag.embed.fake import FakeEmbedder
from atomicrag.engine.wiring import batch_retriever, context_builder, link_instruction
from atomicrag.graph.build import build_graph

ATOMS = [
    Atom("p1#a0", "Marie Curie was born in Warsaw.", "p1", "p1", ["Marie Curie", "Warsaw"]),
    Atom("p1#a1", "She moved to Paris in 1891.", "p1", "p1", ["Paris"]),
    Atom("p2#a0", "Warsaw is the capital of Poland.", "p2", "p2", ["Warsaw", "Poland"]),
    Atom("p3#a0", "Paris lies on the Seine.", "p3", "p3", ["Paris", "Seine"]),
]
QUESTIONS = [Question(id="q1", question="Where was Marie Curie born?", answers=["Warsaw"]),
             Question(id="q2", question="Which river flows through Paris?", answers=["Seine"])]


def _config(**reader: object) -> Config:
    return Config(embedder=EmbedderConfig(name="fake", dim=16), reader=ReaderConfig(**reader),
                  retriever=RetrieverConfig(name="ppr", query_entities="spacy", top_k=3))


def _graph():
    emb = FakeEmbedder(16)
    return build_graph(AtomizeResult(atoms=ATOMS), emb, _config().graph), emb


def test_retrieval_does_not_depend_on_the_readers_settings() -> None:
    """The reader's budget and context mode change the context, not what retrieval ranked."""
    graph, emb = _graph()
    docs, atoms = _config(context="documents", context_tokens=40), _config(context="atoms")
    res_docs = batch_retriever(docs, graph, emb).run(QUESTIONS)
    res_atoms = batch_retriever(atoms, graph, emb).run(QUESTIONS)
    assert res_docs.ranked_documents == res_atoms.ranked_documents
    assert [t.retrieved_passages for t in res_docs.traces] == [t.retrieved_passages for t in res_atoms.traces]
    assert all(t.context == [] and t.reader_documents is None for t in res_docs.traces)  # the engine's to fill

    by_docs = context_builder(docs, graph).fill(res_docs)
    by_atoms = context_builder(atoms, graph).fill(res_atoms)
    assert [[c.to_dict() for c in ctx] for ctx in by_docs] == [t.context for t in res_docs.traces]
    assert [t.reader_documents for t in res_docs.traces] == [0, 0]  # documents: the budget's limit
    assert [t.reader_documents for t in res_atoms.traces] == [None, None]  # atoms: no document limit
    assert all(c.atom_ids for ctx in by_atoms for c in ctx)
    assert by_docs != by_atoms


def test_a_small_reader_reads_fewer_documents() -> None:
    """The LLM's stated size reaches the reader's context through the engine, not the retriever."""
    graph, emb = _graph()
    small = dataclasses.replace(_config(context="documents"), llm=dataclasses.replace(Config().llm, params_b=0.5))
    res = batch_retriever(small, graph, emb).run(QUESTIONS)
    context_builder(small, graph).fill(res)
    assert [t.reader_documents for t in res.traces] == [small.reader.small_reader_documents] * 2


def test_the_released_query_to_node_instruction_is_wired_for_a_bge_embedder(released_checkout) -> None:
    released = FidelityConfig(prompts="released")
    bge = EmbedderConfig(model="BAAI/bge-large-en-v1.5", embed_instruction="released")
    assert link_instruction(Config(embedder=bge, fidelity=released)) == released_checkout["query_to_node"]
    plain_bge = dataclasses.replace(bge, embed_instruction="model")
    assert link_instruction(Config(embedder=plain_bge, fidelity=released)) is None
    assert link_instruction(Config(embedder=bge, fidelity=FidelityConfig(prompts="own"))) is None
    assert link_instruction(Config(embedder=EmbedderConfig(model="minilm", embed_instruction="released"),
                                   fidelity=released)) is None
