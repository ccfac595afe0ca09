"""Self-contained sentence atoms: the leading pronoun resolved to the passage subject, markup stripped.

The paper's LLM atoms are self-contained statements ("Lothair II was the second son of ...");
a sentence atom is a literal slice ("He was the second son of ...") whose subject lives in an
earlier sentence. With ``atomizer.resolve_subject`` a sentence that *starts* with a personal or
possessive pronoun (He/She/It/They/His/Her/Its/Their), or with a definite one-noun subject
before a verb ("The film was ..."), gets the passage subject (its title) in
its place, and the subject becomes one of the atom's entities, so the atom reads, embeds and
links on its own. Only the leading word is rewritten: resolving pronouns inside a sentence
would need a coreference model. Markdown/HTML markup (headings, emphasis, links, tags, list and
quote markers) is removed from atom text first, by the rules Markdown documents are ingested with
(``data.markdown.strip_markup``), so "## Team" or "**Ada**" does not end up inside an atom.
"""
from __future__ import annotations

import re
from typing import Any

from atomicrag.data.markdown import strip_markup

# leading pronoun -> (replacement pattern, keeps "'s"): "His book" -> "Title's book"
_SUBJECT = {"he": False, "she": False, "it": False, "they": False,
            "his": True, "her": True, "its": True, "their": True}
_LEAD = re.compile(r"^(\W*)(He|She|It|They|His|Her|Its|Their)\b", re.IGNORECASE)
# a definite one-noun subject right before a verb: "The film was directed by ..." (about the title)
_DEFINITE = re.compile(r"^(\W*)The ([a-z]+)(?=\s+(?:is|was|has|had|stars|starred|features|received)\b)")
_SPACES = re.compile(r"[ \t]{2,}")


def atom_text(text: str) -> str:
    """A sentence atom's text: its markup stripped as a document's is, runs of spaces as one."""
    return _SPACES.sub(" ", strip_markup(text)).strip()


def resolve_subject(text: str, subject: str) -> tuple[str, bool]:
    """``(text, resolved)``: a leading pronoun (or "The <noun>" before a verb) of ``text``
    replaced by ``subject``.

    "He was born in 1950." -> "Etan Boritzer was born in 1950."; "Its capital is X." ->
    "Freedonia's capital is X.". "It" followed by "is/was" + an adjective and "that/to" is often
    an expletive ("It is known that ..."): those are left alone.
    """
    subject = subject.strip()
    m = _LEAD.match(text)
    if not subject:
        return text, False
    if m is None:
        d = _DEFINITE.match(text)
        if d is None:
            return text, False
        return d.group(1) + subject + text[d.end():], True
    word = m.group(2)
    rest = text[m.end():]
    if word.casefold() == "it" and re.match(r"\s+(is|was)\s+\w+\s+(that|to)\b", rest):
        return text, False
    possessive = _SUBJECT[word.casefold()]
    if word.casefold() == "her" and not re.match(r"\s+\w", rest):
        return text, False  # a bare object "her" cannot start a sentence sensibly; leave odd cases
    name = subject + ("'s" if possessive else "")
    return m.group(1) + name + rest, True


def chunk_subject(title: str, sents: list[Any]) -> str:
    """What a chunk is about: the entity its title names, else the first entity of its first sentence."""
    from atomicrag.atomize.base import title_entity

    if title.strip():
        return title_entity(title)
    for s in sents[:1]:
        if s.entities:
            return s.entities[0]
    return ""


def self_contained(text: str, entities: list[str], subject: str) -> tuple[str, list[str], bool]:
    """``(text, entities, resolved)`` of a sentence atom: markup stripped, leading pronoun resolved.

    A resolved atom gets ``subject`` as an entity (first), so it links to the subject's node.
    """
    text = atom_text(text)
    text, resolved = resolve_subject(text, subject)
    if resolved and not any(e.casefold() == subject.casefold() for e in entities):
        entities = [subject, *entities]
    return text, list(entities), resolved
