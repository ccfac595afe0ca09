"""Issue #48 item 4: the library's arguments. Errors name the argument, what was expected and what
was given; a lone word that is no file or folder is a mistyped path, not a document; empty input
is an error (index, insert) or a warning (an empty list of questions), never silence; insert()
returns ids; aindex/ainsert; metadata filters at query time; LangChain documents carry source and title."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.library.adapters.langchain import document_metadata

from .conftest import DOCS, base_config

TAGGED = [{**d, "source": "wiki" if i % 2 == 0 else "news", "tags": ["science"] if "Curie" in d["text"] else []}
          for i, d in enumerate(DOCS)]


@pytest.fixture(scope="module")
def tagged() -> AtomicRAG:
    rag = AtomicRAG(base_config(), progress=False)
    rag.index(TAGGED)
    return rag


@pytest.mark.parametrize("bad, needle", [
    (42, r"index\(documents\): expected a str .* got int \(42\)"),
    (None, r"index\(documents\): expected .* got NoneType \(None\)"),
    (b"bytes", r"index\(documents\): expected .* got bytes"),
    ([3.5], r"index\(documents\): document #0 is float \(3.5\)"),
    ([{"text": 7}], r"index\(documents\): document #0: 'text' must be a str, not int \(7\)"),
])
def test_index_type_errors_name_the_argument_and_what_was_expected(bad: object, needle: str) -> None:
    rag = AtomicRAG(base_config(), progress=False)
    with pytest.raises(TypeError, match=needle):
        rag.index(bad)


def test_query_type_errors_name_the_argument(tagged: AtomicRAG) -> None:
    with pytest.raises(TypeError, match=r"query\(question\): expected a str or a list of str; got int \(123\)"):
        tagged.query(123)
    with pytest.raises(TypeError, match=r"query\(question\): expected .* got NoneType"):
        tagged.query(None)
    with pytest.raises(TypeError, match=r"question 2 of 2 is int \(5\); expected a str"):
        tagged.query(["Where was Marie Curie born?", 5])


def test_a_mistyped_folder_is_an_error_not_a_one_word_document(tmp_path: Path) -> None:
    rag = AtomicRAG(base_config(), progress=False)
    with pytest.raises(FileNotFoundError, match=r"'docs' is not a file or folder .*pass \{'text': 'docs'\}"):
        rag.index("docs")  # the test runs in an empty tmp folder: no ./docs
    with pytest.raises(FileNotFoundError, match="looks like a path"):
        rag.index("my_docs/notes.md")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Marie Curie was born in Warsaw in 1867.")
    rag.index("docs")  # the folder, once it exists
    assert [d.id for d in rag.documents] == ["a"]
    rag.index([{"text": "docs"}, "Warsaw is the capital of Poland."])  # the word itself, said so
    assert rag.documents[0].text == "docs"


def test_empty_input_is_an_error_or_a_warning(tagged: AtomicRAG, caplog: pytest.LogCaptureFixture) -> None:
    rag = AtomicRAG(base_config(), progress=False)
    with pytest.raises(ValueError, match=r"index\(documents\): no documents \(an empty list\)"):
        rag.index([])
    with pytest.raises(ValueError, match=r"insert\(documents\): no documents"):
        rag.insert(iter([]))
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        assert tagged.query([]) == []
    assert "empty list of questions" in caplog.text


def test_insert_returns_the_ids_in_order() -> None:
    rag = AtomicRAG(base_config(), progress=False)
    rag.index(DOCS[:3])
    ids = rag.insert([{"doc_id": "x1", "text": "Lisbon is the capital of Portugal."},
                      "Porto lies on the Douro River."])
    assert ids[0] == "x1" and ids[1].startswith("doc-") and len(ids) == 2
    assert [d.id for d in rag.documents][-2:] == ids
    assert rag.insert({"doc_id": "x1", "text": "Lisbon lies on the Tagus River."}, replace=True) == ["x1"]


def test_aindex_and_ainsert() -> None:
    rag = AtomicRAG(base_config(), progress=False)

    async def main() -> tuple[object, list[str], object]:
        built = await rag.aindex(DOCS[:4])
        ids = await rag.ainsert([{"doc_id": "lisbon", "text": "Lisbon is the capital of Portugal."}])
        found = await rag.asearch("What is the capital of Portugal?", where={"id": "lisbon"})
        return built, ids, found

    built, ids, found = asyncio.run(main())
    assert built is rag and ids == ["lisbon"] and len(rag) == 5
    assert found.items and all(i.source_doc_ids == ["lisbon"] for i in found.items)


def test_metadata_filters_restrict_what_a_query_retrieves(tagged: AtomicRAG) -> None:
    q = "Where was Marie Curie born?"
    everything = tagged.search(q)
    assert {"wiki", "news"} <= {tagged.get_document(d).meta["source"] for d in everything.documents}
    news = tagged.search(q, where={"source": "news"})
    assert news.items and news.documents
    assert all(tagged.get_document(d).meta["source"] == "news" for i in news.items for d in i.source_doc_ids)
    assert all(tagged.get_document(d).meta["source"] == "news" for d in news.documents)
    # a list of values is any of them; a list-valued field (tags) matches by item; a function works too
    science = tagged.search(q, where={"tags": "science", "source": ["wiki", "news"]})
    assert {d for i in science.items for d in i.source_doc_ids} <= {"curie", "pierre", "nobel", "irene"}
    only = tagged.search(q, where=lambda doc: doc.id == "curie")
    assert {d for i in only.items for d in i.source_doc_ids} == {"curie"}
    # a batch, and the unfiltered index is unchanged afterwards
    assert len(tagged.search([q, "Which river flows through Bern?"], where={"source": "wiki"})) == 2
    assert tagged.search(q).documents == everything.documents


def test_filter_errors_name_the_field(tagged: AtomicRAG) -> None:
    with pytest.raises(ValueError, match=r"no document has the field\(s\) 'sourse'; fields: .*source"):
        tagged.search("Where was Marie Curie born?", where={"sourse": "news"})
    with pytest.raises(ValueError, match=r"where=\{'source': 'blog'\}: no document matches \(of 20\)"):
        tagged.search("Where was Marie Curie born?", where={"source": "blog"})
    with pytest.raises(TypeError, match="where: expected a dict"):
        tagged.search("Where was Marie Curie born?", where="news")


def test_langchain_documents_carry_source_and_title(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "curie.md").write_text("# Marie Curie\n\nMarie Curie was born in Warsaw in 1867.\n")
    rag = AtomicRAG(base_config(), progress=False)
    rag.index([tmp_path / "notes", {"doc_id": "w", "title": "Warsaw", "source": "https://example.org/warsaw",
                                   "lang": "en", "text": "Warsaw is the capital of Poland."}])
    result = rag.search("Where was Marie Curie born?")
    metas = {m["doc_id"]: m for m in (document_metadata(rag, i) for i in result.items)}
    assert metas["curie"]["source"] == "curie.md" and metas["curie"]["title"] == "Marie Curie"
    assert metas["w"]["source"] == "https://example.org/warsaw" and metas["w"]["title"] == "Warsaw"
    assert metas["w"]["lang"] == "en" and "score" in metas["w"] and "atom_id" in metas["w"]
