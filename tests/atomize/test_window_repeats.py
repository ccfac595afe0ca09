"""Issue #21 item 2: a sentence that overlapping token windows repeat is one atom."""
from __future__ import annotations

from atomicrag.atomize.sentence import SentenceAtomizer
from atomicrag.atomize.windows import merge_window_repeats
from atomicrag.core.config import AtomizerConfig
from atomicrag.core.schemas import Atom, Chunk, Passage
from atomicrag.data.token_windows import Chunker

TEXT = ("Anna walked to the harbour at dawn. The fishing boats had already left the quay. "
        "Her brother Tomas waited by the lighthouse. He carried the letter from Oslo. "
        "They read it together in silence. The wind turned cold before noon.")


def test_sentences_in_window_overlaps_become_one_atom_with_every_position():
    chunks = Chunker(size=24, overlap=12).chunk(Passage(id="p", text=TEXT, title=""))
    assert len(chunks) > 2  # the windows overlap: shared sentences are atomized more than once
    old = SentenceAtomizer(AtomizerConfig(name="sentence", merge_window_repeats=False), progress=False).atomize(chunks)
    new = SentenceAtomizer(AtomizerConfig(name="sentence"), progress=False).atomize(chunks)
    old_texts = [a.text for a in old.atoms]
    assert sum("Tomas waited" in t for t in old_texts) == 2  # before: the same sentence twice (one copy cut)
    texts = [a.text for a in new.atoms]
    assert len(texts) == len(set(texts)) and sum("Tomas waited" in t for t in texts) == 1
    # every sentence of the passage is still an atom, once, whole
    for sent in ("Her brother Tomas waited by the lighthouse.", "He carried the letter from Oslo."):
        assert texts.count(sent) == 1
    assert any(a.positions for a in new.atoms)  # the repeat's place is kept
    assert new.stats["window_repeats_merged"] == len(old.atoms) - len(new.atoms)


def test_a_cut_copy_gives_way_to_the_whole_sentence():
    chunks = [Chunk("c0", "p", "Alpha beta gamma. Delta eps", start_char=0, end_char=27),
              Chunk("c1", "p", "Delta epsilon zeta.", start_char=18, end_char=37)]
    atoms = [Atom("a0", "Alpha beta gamma.", "c0", "p", ["Alpha"], (0, 17)),
             Atom("a1", "Delta eps", "c0", "p", ["Delta"], (18, 27)),
             Atom("a2", "Delta epsilon zeta.", "c1", "p", ["Zeta"], (0, 19))]
    merged = merge_window_repeats(atoms, chunks)
    assert [a.id for a in merged] == ["a0", "a2"]
    assert merged[1].positions == [["c0", 18, 27]] and merged[1].entities == ["Zeta", "Delta"]


def test_a_passage_is_never_split_between_atomize_calls() -> None:
    """Where the library's atomize slices fell decided whether a two-window passage's repeats
    merged, so at 6,119 2Wiki passages `delete` left 3 atoms a fresh build did not have."""
    from atomicrag.atomize.base import passage_slices

    passages = [Passage(id=f"p{i}", text=TEXT, title="") for i in range(3)]
    chunks = Chunker(size=24, overlap=12).chunk_all(passages)
    per_passage = len(chunks) // 3
    for size in (1, 2, per_passage + 1, len(chunks)):
        parts = list(passage_slices(chunks, size))
        assert [c for p in parts for c in p] == chunks
        assert all(len({c.passage_id for c in p} & {c.passage_id for c in q}) == 0
                   for i, p in enumerate(parts) for q in parts[i + 1:])
    atomizer = SentenceAtomizer(AtomizerConfig(name="sentence"), progress=False)
    whole = [a.text for a in atomizer.atomize(chunks).atoms]
    sliced = [a.text for p in passage_slices(chunks, 2) for a in atomizer.atomize(p).atoms]
    assert sliced == whole


def test_the_library_atomizes_a_document_alike_wherever_its_slice_falls(monkeypatch) -> None:  # noqa: ANN001
    import atomicrag.library.doc_states as doc_states
    from atomicrag import AtomicRAG

    cfg = {"embedder": {"option": "fake", "dim": 16}, "llm": {"option": "fake", "cache": False},
           "atomizer": {"name": "sentence"}, "reader": {"name": "none"},
           "dataset": {"chunk_tokens": 24, "chunk_overlap": 12}}
    docs = [{"doc_id": f"d{i}", "text": TEXT} for i in range(3)]
    whole = AtomicRAG(cfg, progress=False).index(docs)
    monkeypatch.setattr(doc_states, "ATOMIZE_SLICE", 2)  # a slice ends inside a document's windows
    sliced = AtomicRAG(cfg, progress=False).index(docs)
    assert [a.id for a in sliced.graph.atoms] == [a.id for a in whole.graph.atoms]
