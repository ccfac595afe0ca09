"""The library face: config validation, documents, queries, results, progress, answers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atomicrag import AtomicRAG, QueryResult

from .conftest import DOCS, QUESTIONS, base_config


@pytest.fixture(scope="module")
def rag() -> AtomicRAG:
    return AtomicRAG(base_config(), progress=False).index(DOCS)


# ----------------------------------------------------------------------------- config
@pytest.mark.parametrize("bad, needle", [
    ({"retriever": {"top_kk": 3}}, "top_kk"),
    ({"atomizer": {"name": "magic"}}, "magic"),
    ({"retriever": {"top_k": "many"}}, "top_k"),
    ({"graph": {"synonym_threshold": 1.5}}, "synonym_threshold"),
    ({"no_such_group": {}}, "no_such_group"),
])
def test_config_errors_name_the_key(bad: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        AtomicRAG(bad)


def test_config_from_files_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c.yaml").write_text("retriever:\n  top_k: 7\nreader:\n  name: none\n")
    (tmp_path / "c.json").write_text(json.dumps({"retriever": {"top_k": 9}}))
    (tmp_path / "bad.yaml").write_text("retriever:\n  topk: 7\n")
    assert AtomicRAG(tmp_path / "c.yaml").config.retriever.top_k == 7
    assert AtomicRAG(str(tmp_path / "c.json")).config.retriever.top_k == 9
    with pytest.raises(ValueError, match="topk"):
        AtomicRAG(tmp_path / "bad.yaml")
    with pytest.raises(ValueError, match="does not exist"):
        AtomicRAG(tmp_path / "missing.yaml")
    monkeypatch.setenv("ATOMICRAG_RETRIEVER__TOP_K", "3")
    assert AtomicRAG(tmp_path / "c.yaml").config.retriever.top_k == 3  # environment applies last


# ----------------------------------------------------------------------------- documents
def test_document_forms_and_ids() -> None:
    from atomicrag.library.types import normalize_documents

    docs = normalize_documents(["same text", "same text", {"text": "t", "id": 7, "title": "T", "lang": "en"},
                                {"text": "u", "doc_id": "x"}])
    assert docs[0].id.startswith("doc-") and docs[1].id == docs[0].id + "-2"  # deterministic, unique
    assert (docs[2].id, docs[2].title, docs[2].meta) == ("7", "T", {"lang": "en"})
    assert normalize_documents("one string")[0].text == "one string"  # not split into characters
    with pytest.raises(ValueError, match="no 'text'"):
        normalize_documents([{"body": "x"}])
    with pytest.raises(ValueError, match="duplicate document id 'x'"):
        normalize_documents([{"text": "a", "id": "x"}, {"text": "b", "id": "x"}])
    with pytest.raises(TypeError):
        normalize_documents([3.14])


def test_insert_duplicate_and_delete_unknown(rag: AtomicRAG) -> None:
    with pytest.raises(ValueError, match="duplicate document id 'curie'"):
        rag.insert({"doc_id": "curie", "text": "again"})
    with pytest.raises(KeyError, match="nope"):
        rag.delete(["nope"])
    assert rag.delete(["nope"], missing_ok=True) == 0
    assert len(rag) == len(DOCS) and "curie" in rag


# ----------------------------------------------------------------------------- queries
def test_query_single_and_batch(rag: AtomicRAG, tmp_path: Path) -> None:
    one = rag.query(QUESTIONS[0])
    assert isinstance(one, QueryResult)
    assert one.answer is None  # reader.name=none: retrieval only
    assert 0 < len(one.items) <= rag.config.sieve.max_context
    scores = [i.score for i in one.items]
    assert scores == sorted(scores, reverse=True)
    rel = [i.relevance for i in one.items]  # readable: 1.0 for the best item, in score order
    assert rel[0] == 1.0 and rel == sorted(rel, reverse=True) and all(0 <= r <= 1 for r in rel)
    assert any("curie" in i.source_doc_ids for i in one.items[:5])  # atoms about Marie Curie rank high
    assert "Marie Curie" in one.entities_extracted
    by_doc = {i.source_doc_ids[0]: i for i in one.items}
    assert by_doc["curie"].title == "Marie Curie" and one.items[0].content == one.items[0].text
    assert one.graph_stats["items_returned"] == len(one.items)
    batch = rag.query(QUESTIONS)
    assert [r.query for r in batch] == QUESTIONS
    assert [i.atom_id for i in batch[0].items] == [i.atom_id for i in one.items]
    path = tmp_path / "r.json"
    text = one.to_json(path)
    assert json.loads(path.read_text()) == json.loads(text) == one.to_dict()
    assert rag.query([]) == []


def test_answers_with_a_configured_reader() -> None:
    rag = AtomicRAG(base_config(reader={"name": "precise"}), progress=False).index(DOCS[:6])
    res = rag.query("Where was Marie Curie born?")
    assert isinstance(res.answer, str) and res.answer  # the fake LLM answers from the context
    assert res.context and res.context[0]["passage_id"]
    assert rag.query("Where was Marie Curie born?", answer=False).answer is None
    assert rag.stats()["llm_usage"]["calls"] == 1


def test_decomposition_and_sieve_through_the_api() -> None:
    cfg = base_config(decompose={"name": "llm", "complexity_threshold": 0.0}, sieve={"name": "llm"})
    rag = AtomicRAG(cfg, progress=False).index(DOCS[:8])
    res = rag.query("Which river flows through the capital of Austria?")
    assert res.graph_stats["queries"] == 1 + len(res.sub_questions)
    assert res.graph_stats["kept"] <= res.graph_stats["candidates"]
    # items are the atoms the sieve kept, best score first
    assert len(res.items) == min(res.graph_stats["kept"], rag.config.sieve.max_context)


def test_progress_callback_sees_every_stage() -> None:
    seen: list[tuple[str, int, int]] = []
    rag = AtomicRAG(base_config(), progress=lambda s, d, t: seen.append((s, d, t))).index(DOCS[:4])
    rag.query("Where was Marie Curie born?")
    stages = [s for s, _, _ in seen]
    for stage in ("atomize", "embed_atoms", "embed_entities", "synonyms", "query"):
        assert stage in stages
    assert all(0 <= d <= t for _, d, t in seen)
    assert seen[stages.index("atomize")][1:] == (4, 4)


def test_documents_follow_the_passage_ranking(rag: AtomicRAG) -> None:
    one = rag.query(QUESTIONS[0])
    # best_atom (the ppr preset): the documents of the returned atoms, in the order of their best atom
    assert one.documents and one.documents == list(dict.fromkeys(d for i in one.items for d in i.source_doc_ids))
    docs = [("film", "Blood Street", "Blood Street is a 1988 film directed by Leo Fong. It stars Richard Norton."),
            ("fong", "Leo Fong", "Leo Fong is a Chinese American actor and boxer. He was born in Canton in 1928."),
            ("kong", "Jackie Kong", "Jackie Kong is an American film director and producer."),
            ("norton", "Richard Norton", "Richard Norton is an Australian actor."),
            ("canton", "Canton", "Canton is a city in China. Many directors were born there.")]
    ranked = {}
    for ranking in ("bridge", "best_atom"):
        lib = AtomicRAG(base_config(retriever={"passage_ranking": ranking, "bridge_weight": 0.9}), progress=False)
        lib.index([{"id": i, "title": t, "text": x} for i, t, x in docs])
        ranked[ranking] = lib.query("Where was the director of film Blood Street born?").documents
    # the film's best atom names Leo Fong ("directed by"): his page follows it; by best atom alone,
    # the cast member's page (whose own atom scores higher) came first
    assert ranked["bridge"][:2] == ["film", "fong"]
    assert ranked["best_atom"].index("norton") < ranked["best_atom"].index("fong")


def test_stats_and_export(rag: AtomicRAG, tmp_path: Path) -> None:
    st = rag.stats()
    assert st["documents"] == len(DOCS) and st["atoms"] == rag.graph.num_atoms
    assert st["synonym_edges"] > 0 and st["containment_edges"] > 0
    data = rag.export(tmp_path / "g.json")
    assert json.loads((tmp_path / "g.json").read_text()) == data
    assert len(data["atoms"]) == st["atoms"] and set(data["edges"]) == {"containment", "relevance", "synonym"}
    assert "embedding" not in data["atoms"][0]
    assert len(rag.export(embeddings=True)["entities"][0]["embedding"]) == 64


def test_failed_update_leaves_the_index_unchanged() -> None:
    from atomicrag.embed.fake import FakeEmbedder

    class Flaky(FakeEmbedder):
        def encode(self, texts: list[str], *, is_query: bool = False) -> Any:
            if any("Budapest" in t for t in texts):
                raise RuntimeError("embedding service down")
            return super().encode(texts, is_query=is_query)

    rag = AtomicRAG(base_config(), embedder=Flaky(64), progress=False).index(DOCS[:6])
    ids, graph = [d.id for d in rag.documents], rag.graph
    with pytest.raises(RuntimeError, match="service down"):
        rag.insert([DOCS[6], DOCS[18]])  # the second mentions Budapest
    assert [d.id for d in rag.documents] == ids and rag.graph is graph
    rag.insert(DOCS[6])  # still usable
    assert len(rag) == 7


def test_import_is_cheap() -> None:
    import subprocess
    import sys

    code = ("import sys, atomicrag; heavy = [m for m in ('torch', 'spacy', 'transformers', 'omegaconf') "
            "if m in sys.modules]; print(heavy); assert not heavy; atomicrag.AtomicRAG; assert 'torch' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
