"""The reader's estimate for the run plan (``harness/plan.py``): a context of the size it will
read, and the requests it sends, made without retrieval."""
from __future__ import annotations

from typing import Any

from atomicrag.llm.budget import fitted_prefix
from atomicrag.llm.protocol import ChatRequest
from atomicrag.prompts import reader as reader_prompt
from atomicrag.retrieve.estimate import typical
from atomicrag.retrieve.reader_context import count_tokens


def reader_context(cfg: Any, passages: list[Any], atoms: list[str], kept: float) -> list[str]:
    """A context of the size the reader will read: the atom list (sieve's kept atoms, else the
    merged candidates up to sieve.max_context), or documents filled to reader.context_tokens."""
    n_atoms = max(1, round(min(kept, cfg.sieve.max_context)))
    if not cfg.reader.uses_documents(cfg.fidelity.preset):
        return typical(atoms, n_atoms)
    docs = typical([p.text for p in passages], 1)
    if not docs:
        return []
    words = docs[0].split()
    per_doc = min(count_tokens(docs[0]), cfg.reader.whole_doc_tokens)
    budget = cfg.reader.context_tokens
    # without a sieve the ranked documents fill the budget; with one, only the kept atoms' documents
    n_docs = n_atoms if cfg.sieve.name != "none" else budget // max(per_doc, 1) + 1
    limit = cfg.reader.document_limit(cfg.llm.reader_documents, cfg.llm.params_b)  # a small reader reads fewer
    n_docs = min(n_docs, limit) if limit else n_docs
    out, used = [], 0
    for _ in range(n_docs):
        take = min(per_doc, budget - used)
        if take <= 0:
            break
        # regex tokens to words: cut the typical document to its share of the budget
        n_words = max(1, int(len(words) * take / max(count_tokens(docs[0]), 1)))
        out.append(" ".join(words[:n_words]))
        used += take
    return out or [docs[0]]


def passage_context(cfg: Any, passages: list[Any]) -> list[str]:
    """A vanilla-RAG reader's context: retriever.passage_top_k chunks of dataset.chunk_tokens."""
    texts = typical([p.text for p in passages], 1)
    chunk = texts[0] if texts else ""
    words = chunk.split()
    share = min(1.0, cfg.dataset.chunk_tokens / max(count_tokens(chunk), 1))
    chunk = " ".join(words[:max(1, int(len(words) * share))])
    return [chunk] * cfg.retriever.passage_top_k


def reader_requests(cfg: Any, reader_name: str, questions: list[str], context: list[str],
                    released: Any) -> list[ChatRequest]:
    """One reader request per question over ``context``, cut to the window as the reader cuts it."""
    def build(q: str, c: list[str]) -> list[dict[str, str]]:
        return reader_prompt.build_messages(reader_name, q, c, cfg.reader.reader_context, released)

    return [ChatRequest(build(q, fitted_prefix(lambda c, q=q: build(q, c), context, cfg.llm, cfg.reader.max_tokens)),
                        None, max_tokens=cfg.reader.max_tokens) for q in questions]
