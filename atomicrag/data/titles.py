"""Titles that plain text carries by convention: a ``.md`` file's first heading, a ``.txt`` file's
first line when it reads as a title (the rules: ``data.ingest``'s docstring, "Titles").

Lines are split at ``\\n``, ``\\r\\n`` and ``\\r`` only: U+2028/U+2029 (and the other characters
``str.splitlines`` breaks at) sit inside a line of a text file, so a first sentence holding one
is not cut into a "title" and the rest.
"""
from __future__ import annotations

import re

TITLE_MAX_CHARS = 120  # longer first lines are prose, not titles
TITLE_MAX_WORDS = 15
_SENTENCE_END = tuple(".!?,;:")
# a final period after these is an abbreviation ("Acme Inc.", "Martin Luther King Jr."), not a sentence end
_ABBREVIATIONS = frozenset({"inc", "ltd", "co", "corp", "jr", "sr", "st", "dr", "mr", "mrs", "ms", "prof",
                            "vol", "no", "ed", "etc", "vs", "u.s", "u.k"})
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def looks_like_title(line: str) -> bool:
    """Whether a plain-text first line reads as a title (the rule in the module docstring)."""
    line = line.strip()
    if not line or len(line) > TITLE_MAX_CHARS or len(line.split()) > TITLE_MAX_WORDS:
        return False
    if not line[0].isalnum() and line[0] not in "\"'(“‘":
        return False  # list items ("- a"), quotes of markup, separators ("----")
    if line.endswith(_SENTENCE_END):
        last = line.split()[-1].rstrip(".").lower()
        return line.endswith(".") and not line.endswith("..") and last in _ABBREVIATIONS
    return True


def _md_inline(text: str) -> str:
    """A heading's text without inline markup: links keep their text, emphasis marks go."""
    text = _MD_LINK.sub(r"\1", text)
    return " ".join(re.sub(r"(\*\*|__|[*_`~])", "", text).split())


def split_title(text: str, suffix: str) -> tuple[str, str]:
    """``(title, rest of the text)`` of a ``.md``/``.txt`` file, or ``("", text)`` when its first
    non-blank line is not a title (or nothing follows it)."""
    lines = _LINE_BREAK.split(text)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return "", text
    line, title, end = lines[first], "", first + 1
    if suffix == ".md":
        m = _ATX.match(line)
        if m:
            title = _md_inline(m.group(2))
        elif first + 1 < len(lines) and _SETEXT.match(lines[first + 1]) and looks_like_title(line):
            title, end = _md_inline(line), first + 2
    elif looks_like_title(line):
        title = line.strip()
    rest = "\n".join(lines[end:]).strip()
    if not title or not rest:  # a file that is only its title line: the line is the document
        return "", text
    return title, rest
