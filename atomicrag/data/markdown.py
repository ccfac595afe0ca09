"""Markdown as text for atoms: the title it carries, and its content without its markup.

``markdown_document(text, text_titles)`` returns ``(title, text)``:

- **Front matter** (a ``---`` YAML block at the very top) is metadata, never content: its
  ``title`` is the document's title (kept even with ``text_titles`` off, as an HTML ``<title>`` is).
- **Labels and comments** — MyST targets ``(label)=``, HTML comments ``<!-- … -->`` (one line or
  many), link reference definitions ``[x]: url`` — are removed before the title is looked for, so a
  file that opens with them still gets its first heading as title (``titles.split_title``).
- **Markup** is reduced to its text: heading marks, emphasis, inline code backticks, links and
  images (their text), list and quote markers, table rules, horizontal rules, HTML tags,
  MyST directive fences (``{note}`` keeps its body; option lines ``:name: x`` go).
- **Code** (fenced with backticks or tildes, or a ``{code-block}`` directive) is kept verbatim as
  a paragraph of its own, blank lines around it, so no prose runs into it and its lines are never
  rewritten by the rules above.
"""
from __future__ import annotations

import re
from typing import Any

from atomicrag.data.titles import split_title

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # not str.splitlines: U+2028/U+2029 are not line ends here
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LABEL = re.compile(r"^[ \t]*\([^()\s]+\)=[ \t]*$")  # MyST target: (my-label)=
_LINK_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]+\S+.*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*(.*)$")
_DIRECTIVE_OPTION = re.compile(r"^[ \t]*:[\w-]+:([ \t].*)?$")
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_RULE = re.compile(r"^ {0,3}([-*_=])(?:[ \t]*\1){2,}[ \t]*$")  # ---, ***, ___, and setext ===
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_LIST = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s+[^<>]*?)?/?>")
_ROLE = re.compile(r"\{[\w:-]+\}`([^`]*)`")  # MyST role {ref}`text`
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~)(?=\S)(.+?)(?<=\S)\1")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter as a dict, the rest)``; ``({}, text)`` when there is none or it is not a
    YAML mapping (then the block is left as text: it was not front matter)."""
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, text
    import yaml

    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return {}, text
    if not isinstance(meta, dict):
        return {}, text
    return meta, text[m.end():]


def remove_labels_and_comments(text: str) -> str:
    """HTML comments, MyST ``(label)=`` targets and link reference definitions removed."""
    text = _COMMENT.sub("", text)
    return "\n".join(line for line in _LINE_BREAK.split(text) if not (_LABEL.match(line) or _LINK_DEF.match(line)))


def inline_text(line: str) -> str:
    """One line of prose without inline markup (code spans keep their text)."""
    line = _ROLE.sub(r"\1", line)
    line = _IMAGE.sub(r"\1", line)
    line = _LINK.sub(r"\1", line)
    line = _AUTOLINK.sub(r"\1", line)
    line = _TAG.sub("", line)
    line = _CODE_SPAN.sub(lambda m: m.group(2).strip(), line)
    for _ in range(2):  # nested emphasis: ***x***
        line = _EMPHASIS.sub(r"\2", line)
    return line.replace("\\*", "*").replace("\\_", "_")


CODE = "\x00code"  # marks a code line in strip_markup's working list (never in its output)


def strip_markup(text: str) -> str:
    """Markdown text without its markup; code blocks verbatim, each a paragraph of its own."""
    return markdown_body(text)[0]


def markdown_body(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``(text without markup, character spans of its code blocks)``."""
    out: list[str] = []
    fence: str | None = None  # the open code fence, or None
    directive = False  # inside a MyST directive fence whose body is prose
    for line in _LINE_BREAK.split(text):
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = None
                if directive:
                    directive = False
                else:
                    out.append("")  # the code block ends its paragraph
                continue
            if directive:
                if not _DIRECTIVE_OPTION.match(line):
                    out.append(_prose(line))
            else:
                out.append(CODE + line.rstrip())  # code, verbatim
            continue
        m = _FENCE.match(line)
        if m:
            fence, info = m.group(1), m.group(2).strip()
            # {note}, {warning}: prose inside; {code-block}, {code}, a language or nothing: code
            directive = info.startswith("{") and not info.startswith(("{code", "{literalinclude", "{eval"))
            if not directive:
                out.append("")
            continue
        if _RULE.match(line) or _TABLE_RULE.match(line):
            continue
        out.append(_prose(line))
    return _paragraphs(out)


def _prose(line: str) -> str:
    heading = _ATX.match(line)
    if heading:
        line = heading.group(1)
    line = _QUOTE.sub("", line)
    line = _LIST.sub(r"\1", line)
    if line.strip().startswith("|") and line.strip().endswith("|"):  # a table row: its cells
        line = " | ".join(c.strip() for c in line.strip().strip("|").split("|"))
    return inline_text(line).rstrip()


def _paragraphs(lines: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Runs of blank lines kept as one, none at the ends; the spans of the code blocks (runs of
    lines marked ``CODE``) in the joined text."""
    kept: list[str] = []
    for line in lines:
        blank = not line.removeprefix(CODE).strip()
        if not blank or (kept and kept[-1]):
            kept.append("" if blank and not line.startswith(CODE) else line)
    while kept and not kept[-1]:
        kept.pop()
    text_parts: list[str] = []
    spans: list[tuple[int, int]] = []
    pos, start = 0, None
    for i, line in enumerate(kept):
        code = line.startswith(CODE)
        line = line.removeprefix(CODE)
        if code and start is None:
            start = pos
        text_parts.append(line)
        pos += len(line)
        if code and (i + 1 == len(kept) or not kept[i + 1].startswith(CODE)):
            spans.append((start, pos))
            start = None
        pos += 1  # the newline
    body = "\n".join(text_parts)
    return body, [(a, b) for a, b in spans if body[a:b].strip()]


def markdown_document(text: str, text_titles: bool = True) -> tuple[str, str]:
    """``(title, text without markup)`` of a Markdown file (see the module docstring)."""
    title, body, _ = markdown_parts(text, text_titles)
    return title, body


def markdown_parts(text: str, text_titles: bool = True) -> tuple[str, str, list[tuple[int, int]]]:
    """``(title, text without markup, spans of its code blocks in that text)``."""
    meta, body = split_front_matter(text)
    title = " ".join(str(meta.get("title") or "").split())
    body = remove_labels_and_comments(body)
    if not title and text_titles:
        title, body = split_title(body, ".md")
    clean, spans = markdown_body(body)
    return title, clean, spans
