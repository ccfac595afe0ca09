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
