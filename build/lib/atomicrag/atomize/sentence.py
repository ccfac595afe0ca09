"""``sentence`` atomizer: one atom per sentence, entities by spaCy NER. No LLM.

The fast, zero-cost option (library README); atoms are literal slices of their chunk, so
each carries its character span.
"""
from __future__ import annotations

import time
from typing import Any

from atomicrag.atomize.base import atom_id, check_chunks, pbar, progress_enabled, with_title
from atomicrag.atomize.nlp import clean_mentions, load_spacy, nlp_processes, sentences
from atomicrag.atomize.selfcontained import chunk_subject, self_contained
from atomicrag.atomize.windows import merge_window_repeats
from atomicrag.core.config import AtomizerConfig
from atomicrag.core.schemas import Atom, AtomizeResult, Chunk


class SentenceAtomizer:
    name = "sentence"
    uses_llm = False

    def __init__(self, cfg: AtomizerConfig | None = None, llm: Any = None, *,
                 progress: bool | None = None, nlp: Any = None, **_: Any) -> None:
        self.cfg = cfg or AtomizerConfig(name="sentence")
        self.progress = progress_enabled(progress)
        self._nlp = nlp  # tests may pass a ready pipeline

    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            self._nlp = load_spacy(self.cfg.spacy_model, self.cfg.noun_chunks)
        return self._nlp

    def docs(self, chunks: list[Chunk], desc: str) -> Any:
        """spaCy docs of the chunks, in order, streamed through ``nlp.pipe`` with a progress bar."""
        bar = pbar(total=len(chunks), desc=desc, enabled=self.progress)
        try:
            for doc in self.nlp.pipe((c.text for c in chunks), batch_size=self.cfg.nlp_batch_size,
                                     n_process=nlp_processes(self.cfg.nlp_processes, len(chunks))):
                bar.update(1)
                yield doc
        finally:
            bar.close()

    def atomize(self, chunks: list[Chunk]) -> AtomizeResult:
        check_chunks(chunks)
        t0, c0 = time.perf_counter(), time.process_time()
        atoms: list[Atom] = []
        empty = 0
        for chunk, doc in zip(chunks, self.docs(chunks, "sentence atoms")):
            sents = sentences(doc, self.cfg.min_atom_chars, self.cfg.noun_chunks)
            if not sents:
                empty += 1
            subject = chunk_subject(chunk.title, sents) if self.cfg.resolve_subject else ""
            for j, s in enumerate(sents):
                text, ents = chunk.text[s.start:s.end], s.entities
                if self.cfg.entity_filter:
                    ents = clean_mentions(ents)
                if self.cfg.resolve_subject:
                    text, ents, resolved = self_contained(text, ents, subject)
                    if resolved:  # the subject is in the text now: no "Title: " prefix needed
                        atoms.append(Atom(id=atom_id(chunk.id, j), text=text, chunk_id=chunk.id,
                                          passage_id=chunk.passage_id, entities=ents, span=(s.start, s.end)))
                        continue
                text, ents = with_title(text, ents, chunk.title, self.cfg.title_context)
                atoms.append(Atom(
                    id=atom_id(chunk.id, j), text=text, chunk_id=chunk.id,
                    passage_id=chunk.passage_id, entities=ents, span=(s.start, s.end),
                ))
        repeats = 0
        if self.cfg.merge_window_repeats:
            n = len(atoms)
            atoms = merge_window_repeats(atoms, chunks)
            repeats = n - len(atoms)
        return AtomizeResult(atoms=atoms, stats={
            "atomizer": self.name, "chunks": len(chunks), "atoms": len(atoms), "empty_chunks": empty,
            "window_repeats_merged": repeats,
            "nlp_s": round(time.perf_counter() - t0, 3), "nlp_cpu_s": round(time.process_time() - c0, 3),
        })
