"""Documents from files and folders: .txt, .md, .jsonl, .html/.htm and .pdf.

``read_path(path)`` turns one file or a folder (searched recursively, in sorted path order, so
the same folder always gives the same index) into document dicts plus the files it skipped,
each with the reason. Nothing is skipped silently: callers report the list
(``report_skipped``).

- ``.txt``: the file's text; its title line, when it has one, becomes the title (see "Titles").
- ``.md``: the text without its markup (``data.markdown``: front matter, HTML comments, MyST
  labels and directive syntax, heading and emphasis marks, link syntax go; code blocks are kept
  verbatim, each a paragraph of its own); the title is the front matter's ``title``, else the
  first heading once labels and comments are set aside.
- ``.jsonl``: one document per line, ``text`` plus optional ``id``/``doc_id``, ``title`` and
  metadata. A malformed or non-UTF-8 line is an error naming the file and line
  (``data.validate.DataError``; a data file the user built is never read in part).
- ``.html``/``.htm``: visible text (stdlib ``html.parser``; scripts, styles and the head are
  dropped, block elements end a line); title = ``<title>``.
- ``.pdf``: the text layer of every page (``pypdf``); title = the PDF's title (``/Title``, else XMP
  ``dc:title``; a converter's default such as "Untitled" or "Microsoft Word - x.docx" is none),
  else its first line when it reads as a title (the ``.txt`` rule).
  A scanned PDF without a text layer has no text and is skipped as empty.

Ids: a file's path relative to the folder **without its suffix** (``notes/intro`` for
``notes/intro.md``), so ids are easy to type; when two files differ only in suffix
(``a.txt``, ``a.md``) both keep their suffix. The full relative path is kept in ``path``.

Titles: a title the document itself carries (HTML ``<title>``, PDF metadata, a ``.jsonl``
``title``) is kept. Plain text carries one by convention (``text_titles``, on by default; the
library's ``dataset.text_titles``), and it is moved out of the text into the title:

- ``.md``: the first non-blank line when it is a heading: ``# Title`` (any level, ``#`` to
  ``######``; closing ``#``s dropped) or a setext heading (a line underlined by ``===`` or ``---``).
  Markup inside it (``*``, ``_``, backticks, ``[text](link)``) is reduced to its text.
- ``.txt``: the first non-blank line when it looks like a title (``looks_like_title``): at most
  ``TITLE_MAX_CHARS`` characters and ``TITLE_MAX_WORDS`` words, starting with a letter or digit,
  not ending like a sentence or clause (``.``, ``!``, ``?``, ``,``, ``;``, ``:``; a final
  abbreviation like "Inc." or "Jr." is allowed), and followed by more text (a file of one line
  is a document, not a title). "Marie Curie" and "Chapter 3 - The Return" are titles; "She was
  born in Warsaw." and "Dear John," are not.

A title line is taken out of the text (the title is a field of its own, as it is for HTML and
``.jsonl``), and with ``atomizer.title_context`` it prefixes every atom of the document. A file name is not a title unless the caller says file names are names
(``file_name_titles=True``): with ``atomizer.title_context`` a title becomes an entity of every
atom of its document and a prefix of its text, so "Novel-10146" or "notes_v2" would be one hub
entity per file and prefix tokens in every context line. The id (the file's path
without suffix) still names the document in results.

A file named directly must be readable and non-empty (an error otherwise); inside a folder,
files of other types, hidden files, empty files and files that cannot be decoded or parsed are
skipped and reported.
"""
from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from os import PathLike
from pathlib import Path
from typing import Any

from atomicrag.data.markdown import markdown_parts
from atomicrag.data.titles import TITLE_MAX_CHARS, TITLE_MAX_WORDS, looks_like_title, split_title
from atomicrag.data.validate import DataError, clean_text, iter_jsonl, read_text

__all__ = ["TITLE_MAX_CHARS", "TITLE_MAX_WORDS", "looks_like_title", "split_title", "read_path", "read_file",
           "expand_paths", "Skipped", "UnreadableFile", "SUFFIXES"]

log = logging.getLogger("atomicrag")

TEXT_SUFFIXES = (".txt", ".md")
HTML_SUFFIXES = (".html", ".htm")
SUFFIXES = (*TEXT_SUFFIXES, ".jsonl", *HTML_SUFFIXES, ".pdf")


@dataclass(frozen=True)
class Skipped:
    """A file that was not indexed, and why."""

    path: str
    reason: str


class UnreadableFile(ValueError):
    """A supported file whose text could not be extracted (or is empty)."""


# --------------------------------------------------------------------------- parsers
_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "svg"})
_BLOCK_TAGS = frozenset({"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
                         "footer", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "dd", "dt", "hr"})


class _HTMLText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip = 0  # depth inside elements whose text is not content
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:  # <br/>, <hr/>: no end tag follows
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip:
            self.parts.append(data)


def _tidy(text: str, *, blank_lines: bool = True) -> str:
    """Runs of spaces collapsed within lines; runs of blank lines kept as one (or dropped)."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (blank_lines and out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def html_text(markup: str) -> tuple[str, str]:
    """``(visible text, title)`` of an HTML document."""
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    # every block element ends a line; blank lines between blocks carry nothing
    return _tidy("".join(parser.parts), blank_lines=False), " ".join("".join(parser.title_parts).split())


# metadata titles that name no document: a converter's default or the source file's name
_NO_TITLE = re.compile(r"^(untitled|title|document\d*|slide \d+|microsoft (word|powerpoint) - .*|.*\.(docx?|pptx?|odt|"
                       r"tex|dvi|pdf|rtf|txt|md|html?|indd|qxd))$", re.IGNORECASE)


def _pdf_title(reader: Any) -> str:
    """The PDF's own title: the document information ``/Title``, else XMP ``dc:title``; "" when
    neither names the document (empty, "Untitled", a converter's "Microsoft Word - x.docx")."""
    candidates = [(reader.metadata or {}).get("/Title")]
    try:
        xmp = reader.xmp_metadata
        dc = getattr(xmp, "dc_title", None) if xmp is not None else None
        if isinstance(dc, dict):
            candidates.extend(dc.values())
    except Exception:  # noqa: BLE001 - a malformed XMP packet is no reason to skip the file
        pass
    for value in candidates:
        title = " ".join(str(value or "").split())
        if title and not _NO_TITLE.match(title):
            return title
    return ""


def pdf_text(path: Path, text_titles: bool = True) -> tuple[str, str]:
    """``(text of every page, title)``: the PDF's own title (``_pdf_title``), else, with
    ``text_titles``, the first line of its text when it reads as a title (as for ``.txt``)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:  # a declared dependency; say which package is missing
        raise ImportError("reading .pdf files needs pypdf: pip install pypdf") from exc
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise UnreadableFile("encrypted PDF")
        pages = [(page.extract_text() or "") for page in reader.pages]
        title = _pdf_title(reader)
    except PdfReadError as exc:
        raise UnreadableFile(f"not a readable PDF ({exc})") from exc
    text = _tidy("\n\n".join(pages))
    if not title and text_titles:
        title, rest = split_title(text, ".txt")
        if title:  # the title line is the document's title, as for .txt (pages keep the rest)
            text = rest
    return text, title


def _jsonl(path: Path) -> list[dict[str, Any]]:
    docs = []
    for n, rec in iter_jsonl(path):  # bad or non-UTF-8 lines raise DataError at file:line
        if not isinstance(rec.get("text"), str):
            raise DataError(path, n, "text", "each line must be an object with a 'text' string")
        rec["text"] = clean_text(rec["text"])
        if not rec["text"].strip():
            raise DataError(path, n, "text", "empty text (after removing control characters)")
        docs.append(rec)
    if not docs:
        raise UnreadableFile("no documents (empty .jsonl)")
    return docs


def read_file(path: Path, doc_id: str, rel: str, file_name_titles: bool = False,
              text_titles: bool = True) -> list[dict[str, Any]]:
    """Documents of one supported file; ``UnreadableFile`` when it yields no text.
    ``file_name_titles``: a document without a title of its own is titled by its file name;
    ``text_titles``: a ``.md``/``.txt`` file's title line is its title (``split_title``)."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl(path)
    extra: dict[str, Any] = {}
    if suffix == ".md":  # front matter, labels, comments and markup out; code kept as its own paragraphs
        title, text, code = markdown_parts(clean_text(read_text(path)), text_titles)
        if code:  # where the code blocks are: the library keeps each one atom (library.code_units)
            extra["code_spans"] = [list(span) for span in code]
    elif suffix in TEXT_SUFFIXES:
        text, title = read_text(path), ""
        if text_titles:
            title, text = split_title(clean_text(text), suffix)
    elif suffix in HTML_SUFFIXES:
        text, title = html_text(read_text(path))
    elif suffix == ".pdf":
        text, title = pdf_text(path, text_titles)
    else:
        raise UnreadableFile(f"unsupported file type {suffix or '(no suffix)'!r}; supported: {', '.join(SUFFIXES)}")
    text, title = clean_text(text), clean_text(title)
    if not text.strip():  # a file of nothing but control characters is empty too
        raise UnreadableFile("no text" + (" (a scanned PDF has no text layer)" if suffix == ".pdf" else ""))
    return [{"id": doc_id, "title": title or (path.stem if file_name_titles else ""), "text": text, "path": rel,
             **extra}]


# --------------------------------------------------------------------------- folders
def _ids(rels: list[str]) -> dict[str, str]:
    """Relative path -> id without suffix; paths whose stems collide keep their suffix."""
    stems = [str(Path(r).with_suffix("")) if Path(r).suffix else r for r in rels]
    stems = [s.replace("\\", "/") for s in stems]
    clash = {s for s, n in Counter(stems).items() if n > 1}
    return {r: (r if s in clash else s) for r, s in zip(rels, stems)}


def _walk(root: Path, folder: Path, skipped: list[Skipped]) -> list[Path]:
    """Files under ``folder`` in sorted order; hidden files and folders (``.git``) are reported, not entered."""
    out: list[Path] = []
    for entry in sorted(folder.iterdir()):
        rel = entry.relative_to(root).as_posix()
        if entry.name.startswith("."):
            skipped.append(Skipped(rel + ("/" if entry.is_dir() else ""), "hidden"))
        elif entry.is_dir():
            out.extend(_walk(root, entry, skipped))
        elif entry.is_file():
            out.append(entry)
    return out


def read_path(source: str | Path, file_name_titles: bool = False,
              text_titles: bool = True) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """``(documents, skipped files)`` of a file or a folder (recursive, sorted paths);
    ``file_name_titles``: file names are names (titles, with entities and prefixes);
    ``text_titles``: the title line of a ``.md``/``.txt`` file is its title (``split_title``)."""
    root = Path(source).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"{root} does not exist")
    if root.is_file():
        try:
            return read_file(root, root.stem, root.name, file_name_titles, text_titles), []
        except UnreadableFile as exc:
            raise ValueError(f"{root}: {exc}") from exc
    docs: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    candidates = []
    for path in _walk(root, root, skipped):
        rel = path.relative_to(root)
        if path.suffix.lower() not in SUFFIXES:
            skipped.append(Skipped(rel.as_posix(), f"unsupported type {path.suffix.lower() or '(no suffix)'}"))
        else:
            candidates.append(path)
    ids = _ids([p.relative_to(root).as_posix() for p in candidates])
    for path in candidates:
        rel = path.relative_to(root).as_posix()
        try:
            docs.extend(read_file(path, ids[rel], rel, file_name_titles, text_titles))
        except UnreadableFile as exc:
            skipped.append(Skipped(rel, str(exc)))
        except DataError as exc:
            if path.suffix.lower() == ".jsonl":  # a data file the user built is never read in part
                raise
            skipped.append(Skipped(rel, exc.problem))  # e.g. a stray Latin-1 text file
    if not docs:
        why = f"; skipped {len(skipped)} file(s): {summarize_skipped(skipped)}" if skipped else ""
        raise ValueError(f"no documents found in {root} (supported: {', '.join(SUFFIXES)}){why}")
    return docs, skipped


def summarize_skipped(skipped: list[Skipped], show: int = 5) -> str:
    """``"a.bin (unsupported type .bin), ... and 3 more"`` for a log line."""
    shown = ", ".join(f"{s.path} ({s.reason})" for s in skipped[:show])
    return shown + (f", and {len(skipped) - show} more" if len(skipped) > show else "")


def report_skipped(root: str | Path, skipped: list[Skipped]) -> None:
    if skipped:
        log.warning("%s: skipped %d file(s): %s", root, len(skipped), summarize_skipped(skipped))


def _as_path(item: Any) -> Path | None:
    """The path ``item`` names, or None when it is a document text.

    A ``Path`` is always a path. A one-line string is a path when it exists; a string without
    spaces that looks like a path (a slash, or a supported suffix) but does not exist is an
    error rather than a one-word document.
    """
    if isinstance(item, PathLike):
        return Path(item)
    if not isinstance(item, str) or "\n" in item or len(item) > 1024 or not item.strip():
        return None
    path = Path(item).expanduser()
    try:
        if path.exists():
            return path
    except OSError:  # e.g. a name too long for the file system: text, not a path
        return None
    if not any(c.isspace() for c in item) and ("/" in item or "\\" in item or path.suffix.lower() in SUFFIXES):
        raise FileNotFoundError(f"{item!r} looks like a path but does not exist; to index the string "
                                "itself pass {'text': ...}")
    return None


def expand_paths(items: Iterable[Any], file_name_titles: bool = False, text_titles: bool = True) -> list[Any]:
    """``items`` with every file or folder replaced by its documents (skipped files reported)."""
    out: list[Any] = []
    for item in items:
        path = _as_path(item)
        if path is None:
            out.append(item)
            continue
        docs, skipped = read_path(path, file_name_titles, text_titles)
        report_skipped(path, skipped)
        out.extend(docs)
    return out
