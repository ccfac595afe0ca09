"""Each document's share of the index: its chunks, atoms, triples and failed chunks (``DocState``).

The library keeps these per document so ``insert``/``delete``/``retry_failed`` atomize only the
documents they touch and the graph is rebuilt from the kept states."""
from __future__ import annotations

import logging
from typing import Any

from atomicrag.core.config import Config
from atomicrag.library.types import DocState, Document

log = logging.getLogger("atomicrag")

# Atomizers whose output for a chunk depends on the whole corpus (the vocabulary atomizer's
# frequency filter): an update re-atomizes every document so the index equals a fresh build.
CORPUS_LEVEL_ATOMIZERS = frozenset({"vocabulary"})
ATOMIZE_SLICE = 512  # about this many chunks per atomize() call, so progress moves; never splits a passage


def atomize_documents(engine: Any, config: Config, docs: list[Document], *, bars: bool) -> dict[str, DocState]:
    """Chunk ``docs`` as ``config.dataset`` says and atomize them through ``engine`` (an
    ``engine.Engine``) in slices; a failed chunk is kept in its document's state, with a warning."""
    from atomicrag.core.schemas import Passage
    from atomicrag.engine.api import Chunker

    chunks = Chunker.from_config(config.dataset).chunk_all(Passage(id=d.id, text=d.text, title=d.title) for d in docs)
    states = {d.id: DocState() for d in docs}
    if not chunks:
        return states
    owner = {c.id: c.passage_id for c in chunks}
    for c in chunks:
        states[c.passage_id].chunks += 1
    step = len(chunks) if config.atomizer.name in CORPUS_LEVEL_ATOMIZERS else ATOMIZE_SLICE
    for part, res in engine.atomize_slices(chunks, step, progress=bars):
        for a in res.atoms:
            states[a.passage_id].atoms.append(a)
        for t in res.triples:
            states[owner.get(t.chunk_id, part[0].passage_id)].triples.append(t)
        for f in res.failures:
            states[owner[f.chunk_id]].failures.append(f)
    by_id = {c.id: c for c in chunks}
    for d in docs:  # a Markdown file's code blocks: one atom each, never cut into "sentences"
        spans = d.meta.get("code_spans")
        if spans and states[d.id].atoms and all(0 <= int(a) < int(b) <= len(d.text) for a, b in spans):
            from atomicrag.library.code_units import keep_code_whole

            states[d.id].atoms = keep_code_whole(states[d.id].atoms, by_id, spans)
    failed = sum(len(s.failures) for s in states.values())
    if failed:
        log.warning("atomize: %d of %d chunks failed (stats()['failed_chunks']; reasons in "
                    "documents' state)", failed, len(chunks))
    return states
