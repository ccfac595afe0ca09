"""``chunk`` atomizer: the chunk itself is the atom (the paper's "w/o KA" ablation).

Entities come from spaCy NER (plus noun chunks when configured), so the graph keeps its
entity structure and only the retrieval unit changes.
"""
from __future__ import annotations

import time

from atomicrag.atomize.base import atom_id, check_chunks, dedupe_keep_order, with_title
from atomicrag.atomize.nlp import mention_spans
from atomicrag.atomize.sentence import SentenceAtomizer
from atomicrag.core.schemas import Atom, AtomizeResult, Chunk


class ChunkAtomizer(SentenceAtomizer):
    name = "chunk"
    uses_llm = False

    def atomize(self, chunks: list[Chunk]) -> AtomizeResult:
        check_chunks(chunks)
        t0 = time.perf_counter()
        atoms: list[Atom] = []
        empty = 0
        for chunk, doc in zip(chunks, self.docs(chunks, "chunk atoms")):
            if not chunk.text.strip():
                empty += 1
                continue
            ents = dedupe_keep_order(chunk.text[a:b].strip() for a, b in sorted(
                mention_spans(doc, self.cfg.noun_chunks)))
            text, ents = with_title(chunk.text, ents, chunk.title, self.cfg.title_context)
            atoms.append(Atom(id=atom_id(chunk.id, 0), text=text, chunk_id=chunk.id,
                              passage_id=chunk.passage_id, entities=ents, span=(0, len(chunk.text))))
        return AtomizeResult(atoms=atoms, stats={
            "atomizer": self.name, "chunks": len(chunks), "atoms": len(atoms), "empty_chunks": empty,
            "nlp_s": round(time.perf_counter() - t0, 3),
        })
