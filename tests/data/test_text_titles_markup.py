"""Issue #48 item 5 and #49's text hygiene: titles from front matter, from the first heading after
labels and comments, from a PDF; Markdown markup out of the text (code kept whole, a paragraph of
its own); lone surrogates named with their document; U+2028/U+2029 inside a line; GraphML that
parses whatever characters an atom holds."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from atomicrag.data.ingest import read_path
from atomicrag.data.markdown import markdown_document
from tests.data.test_ingest import write_pdf
from tests.library.conftest import base_config

MYST = """(getting-started)=
<!-- generated from the wiki; do not edit
     by hand -->
# Getting Started

Install the **package** with [pip](https://pip.pypa.io) and read the `README`.

```{note}
:class: tip
Notes are prose.
```

```python
print("Hello. World. This string is not cut.")
x = {"a": 1}
```

- first item
- second item with a [link][ref]

| option | meaning |
|---|---|
| `--fast` | runs fast |

[ref]: https://example.org
"""


def test_front_matter_title_and_no_front_matter_in_the_text() -> None:
    title, text = markdown_document("---\ntitle: The Vistula\ntags: [rivers, poland]\n---\n\nThe Vistula flows "
                                    "through Krakow and Warsaw.\n")
    assert title == "The Vistula"
    assert text == "The Vistula flows through Krakow and Warsaw."
    # with text_titles off the front matter's title stays: the document carries it, as HTML's <title>
    assert markdown_document("---\ntitle: T\n---\nBody.", text_titles=False) == ("T", "Body.")
    # a rule at the top that is no YAML mapping is not front matter
    assert markdown_document("---\nJust a rule above.\n", text_titles=False)[1] == "Just a rule above."


def test_first_heading_after_labels_and_comments_is_the_title() -> None:
    title, text = markdown_document(MYST)
    assert title == "Getting Started"
    for markup in ("(getting-started)=", "<!--", "-->", "```", "**", "](", "[ref]:", "|---", ":class:", "{note}"):
        assert markup not in text, (markup, text)
    assert "Install the package with pip and read the README." in text
    assert "Notes are prose." in text and "first item" in text and "--fast | runs fast" in text


def test_code_is_kept_whole_as_a_paragraph_of_its_own() -> None:
    _, text = markdown_document(MYST)
    paragraphs = text.split("\n\n")
    code = 'print("Hello. World. This string is not cut.")\nx = {"a": 1}'
    assert code in paragraphs  # verbatim, blank lines around it: no prose runs into it


def test_a_markdown_file_is_read_without_markup(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(MYST)
    (tmp_path / "fm.md").write_text("---\ntitle: Front Matter Title\n---\n<!-- x -->\n## Heading\nText.\n")
    docs = {d["id"]: d for d in read_path(tmp_path)[0]}
    assert docs["guide"]["title"] == "Getting Started" and "<!--" not in docs["guide"]["text"]
    assert docs["fm"]["title"] == "Front Matter Title" and docs["fm"]["text"] == "Heading\nText."


def test_library_atoms_carry_no_markup(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(MYST)
    rag = AtomicRAG(base_config(), progress=False)
    rag.index(tmp_path / "guide.md")
    atoms = [a.text for a in rag.graph.atoms]
    assert atoms and not any(m in a for a in atoms for m in ("```", "(getting-started)=", "<!--", "**"))
    assert rag.documents[0].title == "Getting Started"


def test_a_code_block_is_one_atom_and_no_prose_atom_holds_code(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(MYST)
    rag = AtomicRAG(base_config(), progress=False)
    rag.index(tmp_path / "guide.md")
    atoms = [a.text for a in rag.graph.atoms]
    code = 'print("Hello. World. This string is not cut.")\nx = {"a": 1}'
    holding = [a for a in atoms if "print(" in a or "x = {" in a]
    assert len(holding) == 1 and holding[0].endswith(code), atoms  # whole, and alone
    assert any(a.endswith("Notes are prose.") for a in atoms)  # the prose before it ends there
    assert len({a.id for a in rag.graph.atoms}) == len(atoms)


@pytest.mark.parametrize("meta_title, expected", [
    ("The Vistula Report", "The Vistula Report"),  # the PDF's own title
    ("Microsoft Word - report_v2.docx", "Rivers of Poland"),  # a converter's default: the title page
    ("Untitled", "Rivers of Poland"),
    ("", "Rivers of Poland"),
])
def test_pdf_titles(tmp_path: Path, meta_title: str, expected: str) -> None:
    write_pdf(tmp_path / "r.pdf", ["Rivers of Poland", "The Vistula flows through Krakow and Warsaw."],
              title=meta_title)
    (doc,), _ = read_path(tmp_path / "r.pdf")
    assert doc["title"] == expected
    assert "The Vistula flows through Krakow" in doc["text"]


def test_unicode_line_separators_do_not_make_a_title(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("Marie Curie was born\u2028in Warsaw in 1867.\u2029She moved to Paris.\n"
                                        "She won two Nobel Prizes.\n", encoding="utf-8")
    (doc,), _ = read_path(tmp_path / "notes.txt")
    assert doc["title"] == "" and doc["text"].startswith("Marie Curie was born\u2028in Warsaw")
    (tmp_path / "t.txt").write_text("Marie Curie\nShe was born\u2028in Warsaw.\n", encoding="utf-8")
    (doc,), _ = read_path(tmp_path / "t.txt")
    assert (doc["title"], doc["text"]) == ("Marie Curie", "She was born\u2028in Warsaw.")


def test_a_lone_surrogate_is_named_with_its_document() -> None:
    rag = AtomicRAG(base_config(), progress=False)
    with pytest.raises(ValueError, match=r"index\(documents\): document #1 \('bad'\): its text holds a lone "
                                         r"surrogate U\+D800 at character 6"):
        rag.index(["Warsaw is in Poland.", {"doc_id": "bad", "text": "Krakow\ud800 is in Poland."}])
    with pytest.raises(ValueError, match=r"document #0: its title holds a lone surrogate U\+DFFF"):
        rag.index([{"title": "T\udfff", "text": "Krakow is in Poland."}])


def test_graphml_parses_with_xml_illegal_characters_in_the_graph(tmp_path: Path) -> None:
    rag = AtomicRAG(base_config(), progress=False)
    rag.index([{"doc_id": "a", "text": "Marie Curie was born in Warsaw. Warsaw is in Poland."}])
    rag.graph.atoms[0].text += "\ufffe\uffff\x0b\ud800"  # an index built before ingest cleaned text
    rag.export(tmp_path / "g.graphml")
    root = ET.parse(tmp_path / "g.graphml").getroot()  # raises on an unreadable file
    texts = [d.text or "" for d in root.iter() if d.tag.endswith("data")]
    assert any("Marie Curie was born in Warsaw." in t for t in texts)
    assert not any(c in t for t in texts for c in "\ufffe\uffff\x0b")
