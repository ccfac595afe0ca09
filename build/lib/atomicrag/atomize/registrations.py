"""The atomizers this package provides, by ``atomizer.name`` (see ``atomicrag.core.registry``).

An atomizer's cache key (``graph/cached_build.py``) holds the config fields it declares here (batch
sizes, process counts and the failure budget change no output, so they are not keyed); one that
keys ``spacy_model`` also keys the spaCy and model versions. The llm atomizer is keyed by its
fingerprint() instead (model, prompt versions, sampling).
"""
from __future__ import annotations

from atomicrag.core.registry import ATOMIZERS, LLM

ATOMIZERS.add("llm", "atomicrag.atomize.llm:LLMAtomizer", needs=LLM)
ATOMIZERS.add("sentence", "atomicrag.atomize.sentence:SentenceAtomizer",
              cache_key=("spacy_model", "noun_chunks", "min_atom_chars", "title_context"),
              # merge_window_repeats changes the atoms of overlapping windows (keyed while on)
              cache_key_when_set=("resolve_subject", "entity_filter", "merge_window_repeats"))
ATOMIZERS.add("vocabulary", "atomicrag.atomize.vocabulary:VocabularyAtomizer",
              needs=lambda c: LLM if c is None or c.vocab_llm_filter else (),
              cache_key=("spacy_model", "min_atom_chars", "vocab_min_freq", "vocab_max_ngram",
                         "vocab_terms_per_call", "vocab_llm_filter"))
ATOMIZERS.add("chunk", "atomicrag.atomize.whole_chunk:ChunkAtomizer",
              cache_key=("spacy_model", "noun_chunks", "title_context"))
