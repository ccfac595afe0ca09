"""``vocabulary`` atomizer (library README's method): corpus vocabulary, then sentence atoms.

1. NLP scan: candidate terms = NER spans + noun chunks + n-grams (<= ``vocab_max_ngram``
   tokens, no punctuation inside, no stop word at either end, at least one noun).
2. Frequency filter: keep terms seen at least ``vocab_min_freq`` times in the corpus
   (counted by canonical form, so "St. Maurice's" and "st maurice s" are one term).
3. LLM filter (``vocab_llm_filter``): the vocabulary in batches of ``vocab_terms_per_call``;
   the LLM keeps the real entities / key concepts. LLM calls grow with the vocabulary, not
   with the corpus.
4. Sentences become atoms; entities are matched with a token trie, longest match first.
"""
from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from typing import Any

from atomicrag.atomize.base import atom_id, batched, check_chunks, dedupe_keep_order, pbar
from atomicrag.atomize.llm import reply_object
from atomicrag.atomize.matcher import TermMatcher, tokens
from atomicrag.atomize.nlp import DROP_LABELS, _strip_span, load_spacy, sentences
from atomicrag.atomize.sentence import SentenceAtomizer
from atomicrag.core.config import AtomizerConfig
from atomicrag.core.schemas import Atom, AtomizeResult, Chunk
from atomicrag.llm.protocol import ChatRequest, LLMBackend
from atomicrag.llm.sampling import attempt_sampling, sampling_fingerprint
from atomicrag.prompts import vocabulary as vocab_prompt
from atomicrag.prompts._common import PromptParseError

log = logging.getLogger(__name__)

_NOUNS = frozenset({"NOUN", "PROPN"})
_CONTENT = frozenset({"NOUN", "PROPN", "ADJ", "NUM"})  # words an n-gram term is made of
_INNER = frozenset({"ADP", "DET"})  # allowed between them: "Hugh of Italy", "Battle of the Somme"


def _key(text: str) -> str:
    return " ".join(t for t, _, _ in tokens(text))


def ngram_spans(doc: Any, max_n: int) -> list[tuple[int, int]]:
    """Character spans of the n-gram candidates of a doc (within sentences).

    An n-gram is noun-phrase shaped: its words are nouns, proper nouns, adjectives or numbers,
    with prepositions/determiners allowed only inside ("Hugh of Italy"); it holds a noun and
    ends on a non-stop word. Conjunctions, verbs and punctuation break it ("Elder and Hucbert"
    is not a term).
    """
    out = []
    for sent in doc.sents:
        toks = [t for t in sent]
        for i, first in enumerate(toks):
            if first.is_stop or first.pos_ not in _CONTENT:
                continue
            has_noun = False
            for j in range(i, min(len(toks), i + max_n)):
                t = toks[j]
                if t.pos_ not in _CONTENT and t.pos_ not in _INNER:
                    break
                has_noun = has_noun or t.pos_ in _NOUNS
                if has_noun and t.pos_ in _CONTENT and not t.is_stop and not t.like_num:
                    out.append((first.idx, t.idx + len(t.text)))
    return out


class VocabularyAtomizer(SentenceAtomizer):
    name = "vocabulary"

    def __init__(self, cfg: AtomizerConfig | None = None, llm: LLMBackend | None = None, *,
                 progress: bool | None = None, nlp: Any = None, retries: int = 1,
                 temperature: float = 0.0, seed: int | None = 0, **_: Any) -> None:
        cfg = cfg or AtomizerConfig(name="vocabulary")
        super().__init__(cfg, progress=progress, nlp=nlp)
        self.filter_max_tokens = cfg.vocab_filter_max_tokens  # completion budget of the LLM filter
        self.llm = llm
        self.retries = max(0, retries)
        self.temperature, self.seed = temperature, seed  # llm.temperature/seed (llm.sampling)
        self.uses_llm = bool(self.cfg.vocab_llm_filter)
        if self.uses_llm and llm is None:
            raise ValueError("vocabulary atomizer with vocab_llm_filter=True needs an LLM backend (llm=...)")

    @property
    def nlp(self) -> Any:
        if self._nlp is None:  # candidates need noun chunks and POS tags whatever cfg.noun_chunks says
            self._nlp = load_spacy(self.cfg.spacy_model, True)
        return self._nlp

    def fingerprint(self) -> dict[str, Any]:
        if not self.uses_llm:
            return {}
        return {"model": getattr(self.llm, "model", type(self.llm).__name__),
                "prompts": [vocab_prompt.VERSION], "retries": self.retries,
                **sampling_fingerprint(self.temperature, self.seed)}

    # ------------------------------------------------------------------ steps
    def scan(self, chunks: list[Chunk]) -> tuple[list[list[tuple[int, int]]], list[tuple[str, int]]]:
        """Sentence spans per chunk and the frequency-sorted candidate vocabulary (surface, count)."""
        stop = self.nlp.Defaults.stop_words
        counts: Counter[str] = Counter()
        surfaces: dict[str, Counter[str]] = defaultdict(Counter)
        spans_per_chunk: list[list[tuple[int, int]]] = []
        for chunk, doc in zip(chunks, self.docs(chunks, "vocabulary scan")):
            spans_per_chunk.append([(s.start, s.end) for s in sentences(doc, self.cfg.min_atom_chars, False)])
            mentions = [(e.start_char, e.end_char) for e in doc.ents if e.label_ not in DROP_LABELS]
            mentions += [s for s in (_strip_span(nc) for nc in doc.noun_chunks) if s is not None]
            mentions += ngram_spans(doc, self.cfg.vocab_max_ngram)
            seen: set[tuple[str, int]] = set()  # one count per term and position
            for a, b in mentions:
                surface = chunk.text[a:b].strip()
                key = _key(surface)
                if len(key) < 2 or key.replace(" ", "").isdigit() or (key, a) in seen:
                    continue
                if all(w in stop for w in key.split()):  # "and", "the other": never terms
                    continue
                seen.add((key, a))
                counts[key] += 1
                surfaces[key][surface] += 1
        vocab = [(surfaces[k].most_common(1)[0][0], n) for k, n in counts.items() if n >= self.cfg.vocab_min_freq]
        vocab.sort(key=lambda x: (-x[1], x[0]))
        return spans_per_chunk, vocab

    def filter_terms(self, terms: list[str]) -> tuple[list[str], int, int]:
        """The LLM-kept terms, the number of LLM calls made and the number of failed batches."""
        if not self.uses_llm or not terms:
            return terms, 0, 0
        assert self.llm is not None
        batches = list(batched(terms, self.cfg.vocab_terms_per_call))
        kept: list[list[str] | None] = [None] * len(batches)
        calls = 0
        pending = list(range(len(batches)))
        for attempt in range(self.retries + 1):
            if not pending:
                break
            reqs = [ChatRequest(messages=vocab_prompt.build_messages(batches[i]), schema=vocab_prompt.SCHEMA,
                                max_tokens=self.filter_max_tokens, module="atomize",
                                **attempt_sampling(self.temperature, self.seed, attempt)) for i in pending]
            results = self.llm.chat(reqs)
            calls += len(reqs)
            still = []
            for i, res in zip(pending, results):
                try:
                    obj, _ = reply_object(res)
                    kept[i] = vocab_prompt.parse(obj, batches[i])
                except (PromptParseError, ValueError, TypeError) as exc:
                    log.debug("vocabulary batch %d attempt %d failed: %s", i, attempt + 1, exc)
                    still.append(i)
            pending = still
        # A batch the LLM could not filter is kept unfiltered (reported in stats): dropping it
        # would silently remove entities from the graph.
        for i in pending:
            log.warning("vocabulary filter: batch %d failed after retries; its %d terms are kept unfiltered",
                        i, len(batches[i]))
            kept[i] = batches[i]
        return [t for k in kept for t in (k or [])], calls, len(pending)

    def atomize(self, chunks: list[Chunk]) -> AtomizeResult:
        check_chunks(chunks)
        t0 = time.perf_counter()
        spans_per_chunk, vocab = self.scan(chunks)
        t1 = time.perf_counter()
        terms, calls, failed_batches = self.filter_terms([t for t, _ in vocab])
        t2 = time.perf_counter()
        matcher = TermMatcher(terms)
        atoms: list[Atom] = []
        empty = 0
        bar = pbar(total=len(chunks), desc="vocabulary match", enabled=self.progress)
        for chunk, spans in zip(chunks, spans_per_chunk):
            empty += not spans
            for j, (a, b) in enumerate(spans):
                text = chunk.text[a:b]
                ents = dedupe_keep_order(text[s:e] for s, e, _ in matcher.find(text))
                atoms.append(Atom(id=atom_id(chunk.id, j), text=text, chunk_id=chunk.id,
                                  passage_id=chunk.passage_id, entities=ents, span=(a, b)))
            bar.update(1)
        bar.close()
        return AtomizeResult(atoms=atoms, llm_calls=calls, stats={
            "atomizer": self.name, "chunks": len(chunks), "atoms": len(atoms), "empty_chunks": empty,
            "candidates_after_freq": len(vocab), "vocabulary": len(terms),
            "vocab_failed_batches": failed_batches, "llm_calls": calls,
            "scan_s": round(t1 - t0, 3), "filter_s": round(t2 - t1, 3),
            "match_s": round(time.perf_counter() - t2, 3),
        })
