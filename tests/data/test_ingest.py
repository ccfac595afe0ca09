"""Documents from files and folders: every supported type, ids, skipped files, errors."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from atomicrag.data.ingest import html_text, read_path
from atomicrag.data.validate import DataError
from atomicrag.library.types import normalize_documents


def write_pdf(path: Path, pages: list[str], title: str = "") -> None:
    """A minimal valid PDF with one line of Helvetica text per page (byte offsets computed)."""
    objs: list[bytes] = []
    n_pages = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objs.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    font_id = 3 + 2 * n_pages
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
                    f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode())
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_id = None
    if title:
        objs.append(f"<< /Title ({title}) >>".encode())
        info_id = len(objs)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for k, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{k} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    info = f" /Info {info_id} 0 R" if info_id else ""
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (root / "curie.txt").write_text("Marie Curie was born in Warsaw.")
    (root / "sub" / "warsaw.md").write_text("# Warsaw\n\nWarsaw is the capital of Poland.")
    (root / "page.html").write_text("<html><head><title>Vienna page</title><style>p {color: red}</style>"
                                    "<script>var x = 1;</script></head><body><h1>Vienna</h1>"
                                    "<p>Vienna is the capital of   Austria.</p><p>The Danube&nbsp;flows.</p>"
                                    "</body></html>")
    write_pdf(root / "report.pdf", ["Sigmund Freud lived in Vienna.", "He moved to London in 1938."],
              title="Freud")
    write_pdf(root / "scan.pdf", [""])  # no text layer
    (root / "same.txt").write_text("a text file")
    (root / "same.md").write_text("a markdown file")
    (root / "empty.txt").write_text("  \n")
    (root / "image.png").write_bytes(b"\x89PNG")
    (root / "latin1.txt").write_bytes(b"caf\xe9")  # not UTF-8: skipped in a folder, an error when named
    (root / "lines.jsonl").write_text(json.dumps({"id": "j1", "text": "Bern is in Switzerland.", "lang": "en"})
                                      + "\n\n" + json.dumps({"text": "Ulm is on the Danube."}) + "\n")
    return root


def test_folder_reads_every_supported_type_and_reports_the_rest(folder: Path) -> None:
    docs, skipped = read_path(folder)
    by_id = {d.get("id"): d for d in docs}
    assert list(by_id) == ["curie", "j1", None, "page", "report", "same.md", "same.txt", "sub/warsaw"]
    assert by_id["curie"]["text"] == "Marie Curie was born in Warsaw." and by_id["curie"]["path"] == "curie.txt"
    assert by_id["page"]["title"] == "Vienna page"
    assert by_id["page"]["text"] == "Vienna\nVienna is the capital of Austria.\nThe Danube flows."
    assert "Freud lived in Vienna" in by_id["report"]["text"] and "London in 1938" in by_id["report"]["text"]
    assert by_id["report"]["title"] == "Freud"
    assert by_id["j1"]["lang"] == "en" and by_id["sub/warsaw"]["title"] == "Warsaw"  # its first heading
    assert by_id["sub/warsaw"]["text"] == "Warsaw is the capital of Poland."
    reasons = {s.path: s.reason for s in skipped}
    assert reasons[".git/"] == "hidden" and "unsupported" in reasons["image.png"]
    assert reasons["empty.txt"] == "no text" and "scanned PDF" in reasons["scan.pdf"]
    assert reasons["latin1.txt"].startswith("not UTF-8") and len(skipped) == 5


def test_library_indexes_a_folder_path_not_the_path_string(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="atomicrag"):
        docs = normalize_documents(str(folder))
    assert "sub/warsaw" in {d.id for d in docs} and all(str(folder) != d.text for d in docs)
    assert "skipped 5 file(s)" in caplog.text and "image.png" in caplog.text  # never silently
    mixed = normalize_documents([folder / "curie.txt", "Some text.", {"text": "More.", "id": "m"}])
    assert [d.id for d in mixed][::2] == ["curie", "m"] and mixed[0].meta["path"] == "curie.txt"


def test_errors_name_the_problem(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="looks like a path"):
        normalize_documents("/no/such/folder")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        normalize_documents(Path("/no/such/file.txt"))
    with pytest.raises(ValueError, match="empty.txt: no text"):
        normalize_documents(folder / "empty.txt")  # named directly: an error, not a skip
    with pytest.raises(ValueError, match="empty text"):
        normalize_documents(["fine", {"id": "x", "text": "   "}])
    with pytest.raises(ValueError, match="unsupported file type"):
        normalize_documents(folder / "image.png")
    with pytest.raises(DataError, match="latin1.txt:1: not UTF-8"):
        normalize_documents(folder / "latin1.txt")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": \n')
    with pytest.raises(ValueError, match="bad.jsonl:2: invalid JSON"):
        read_path(bad)
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    (nothing / "a.bin").write_bytes(b"x")
    with pytest.raises(ValueError, match=r"no documents found .* a.bin \(unsupported type .bin\)"):
        read_path(nothing)
    assert normalize_documents("Warsaw.")[0].text == "Warsaw."  # a word is text, not a path


def test_html_text_keeps_blocks_and_drops_code() -> None:
    text, title = html_text("<title> T </title><div>a<br>b</div><noscript>x</noscript><ul><li>c</li><li>d</li></ul>")
    assert (text, title) == ("a\nb\nc\nd", "T")


def test_file_names_are_not_titles_unless_the_caller_says_so(tmp_path):
    """Issue #21 item 2: a file name titled every atom of its file (entity + text prefix)."""
    from atomicrag.atomize.base import with_title
    from atomicrag.core.config import AtomizerConfig
    from atomicrag.data.ingest import read_path

    (tmp_path / "Novel-10146.txt").write_text("She walked home. The rain had stopped.")
    docs, _ = read_path(tmp_path)
    assert docs[0]["title"] == "" and docs[0]["id"] == "Novel-10146"
    assert with_title("She walked home.", [], docs[0]["title"], AtomizerConfig().title_context) == ("She walked home.", [])
    named, _ = read_path(tmp_path, file_name_titles=True)
    assert named[0]["title"] == "Novel-10146"


def test_plain_text_title_lines_become_titles(tmp_path):
    """A .md file's first heading and a .txt file's title-like first line are the document's
    title (moved out of the text); prose first lines are not; the switch turns it off."""
    from atomicrag.data.ingest import read_path

    (tmp_path / "curie.txt").write_text("Marie Curie\n\nShe was born in Warsaw.\n")
    (tmp_path / "prose.txt").write_text("She was born in Warsaw.\nShe moved to Paris.\n")
    (tmp_path / "letter.txt").write_text("Dear John,\nI write to you today.\n")
    (tmp_path / "one_line.txt").write_text("Marie Curie\n")
    (tmp_path / "acme.txt").write_text("Acme Inc.\nAcme makes anvils.\n")
    (tmp_path / "notes.md").write_text("\n# The *Curie* [family](https://x.org) #\n\nPierre and Marie.\n")
    (tmp_path / "setext.md").write_text("Radium\n======\nA chemical element.\n")
    (tmp_path / "list.md").write_text("- item one\n- item two\n")
    docs = {d["id"]: d for d in read_path(tmp_path)[0]}
    assert (docs["curie"]["title"], docs["curie"]["text"]) == ("Marie Curie", "She was born in Warsaw.")
    assert (docs["notes"]["title"], docs["notes"]["text"]) == ("The Curie family", "Pierre and Marie.")
    assert (docs["setext"]["title"], docs["setext"]["text"]) == ("Radium", "A chemical element.")
    assert docs["acme"]["title"] == "Acme Inc."
    for untitled in ("prose", "letter", "one_line", "list"):
        assert docs[untitled]["title"] == "", untitled
    assert docs["one_line"]["text"].strip() == "Marie Curie"  # a file that is only a title line keeps it as text
    off = {d["id"]: d for d in read_path(tmp_path, text_titles=False)[0]}
    assert off["curie"]["title"] == "" and off["curie"]["text"].startswith("Marie Curie")


def test_library_titles_plain_text_unless_switched_off(tmp_path):
    from atomicrag.library.types import normalize_documents

    (tmp_path / "curie.md").write_text("# Marie Curie\nShe was born in Warsaw.\n")
    assert normalize_documents(tmp_path)[0].title == "Marie Curie"
    assert normalize_documents(tmp_path, text_titles=False)[0].title == ""
