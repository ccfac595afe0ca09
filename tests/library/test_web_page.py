"""The server's page (``GET /``) in a real headless browser (Debian's Chromium; skipped where it is
not installed, ``.ci/run`` installs it): the query box asks, the answer, its sources, the evidence
atoms and the drawn sub-graph appear as the API returns them; markup in a document stays text; a
server with a token makes the page ask for it. The screenshot it takes is the one
docs/library.md shows (``ATOMICRAG_SCREENSHOT_OUT=docs/images/server_page.png`` writes it there)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from atomicrag.library.api import AtomicRAG

from .conftest import DOCS, QUESTIONS, base_config
from .conftest import serving as serve_index

CHROMIUM = next((p for p in (os.environ.get("ATOMICRAG_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)")

# no network (the machine has none), no first-run or background work, a fresh profile per run
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--virtual-time-budget=15000"]
MARKUP = "Marie Curie <img src=x onerror=\"document.title='pwned'\"> was born in Warsaw in 1867."


def browse(url: str, tmp: Path, *action: str) -> str:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *action, url],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class Dom(HTMLParser):
    """Elements by id and class, with their text (enough to read the rendered page)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.open: list[dict[str, Any]] = []
        self.elements: list[dict[str, Any]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = {"tag": tag, **{k: v or "" for k, v in attrs}, "text": ""}
        self.elements.append(el)
        if tag not in ("input", "meta", "br", "img", "rect", "circle", "path"):
            self.open.append(el)

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop()["tag"] != tag:
            pass

    def handle_data(self, data: str) -> None:
        for el in self.open:
            el["text"] += data

    def by_id(self, id_: str) -> dict[str, Any]:
        return next(e for e in self.elements if e.get("id") == id_)

    def by_class(self, cls: str, tag: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.elements if cls in e.get("class", "").split() and (tag is None or e["tag"] == tag)]


def cite_the_birthplace(request: Any, attempt: int) -> str:
    """A reader that answers as a good model would: the context line that holds the answer, cited
    by its number (the fake LLM's own words for every other step)."""
    from atomicrag.llm.fake import FakeLLM, prompt_text

    lines = re.findall(r"^\[(\d+)\][^\n]*born in Warsaw", prompt_text(request), re.M)
    if request.module == "answer" and lines:
        return f"Line [{lines[-1]}] says so.\nAnswer: Warsaw [{lines[-1]}]"
    return FakeLLM.generate_text(request)


@contextmanager
def serving(path: Path, **kwargs: Any) -> Iterator[str]:
    from atomicrag.llm.fake import FakeLLM

    with serve_index(path, llm=FakeLLM(responses=cite_the_birthplace), **kwargs) as httpd:
        yield httpd.url


def build(path: Path, docs: list[dict[str, Any]]) -> Path:
    with AtomicRAG(base_config(reader={"name": "precise"})) as rag:
        rag.index(docs)
        rag.save(path)
    return path


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("page") / "idx", DOCS)


def test_the_page_asks_and_draws_the_answer_and_its_evidence(index_dir: Path, tmp_path: Path) -> None:
    question = QUESTIONS[0]
    with serving(index_dir) as url:
        want = httpx.post(f"{url}/query", json={"question": question, "graph": True}, timeout=60).json()["results"][0]
        page = f"{url}/?q={quote(question)}"  # the query box filled and submitted by the page's own script
        dom = Dom(browse(page, tmp_path, "--dump-dom"))
        shot = tmp_path / "page.png"
        browse(page, tmp_path, "--window-size=1200,1400", f"--screenshot={shot}")
    assert want["answer"] == "Warsaw" and [s["doc_id"] for s in want["sources"]] == ["curie"]
    status = dom.by_id("status")
    assert status["data-state"] == "done", status["text"]
    assert dom.by_id("asked")["text"] == question
    assert dom.by_id("answer-text")["text"] == want["cited_answer"] == "Warsaw [1]"
    assert [m["href"] for m in dom.by_class("mark", "a")] == ["#src-1"]  # the mark links to its source
    sources = dom.by_class("source", "li")
    assert [re.search(r"\[\d+\] (\S+)", s["text"]).group(1) for s in sources] == ["curie"]
    rows = dom.by_class("atom", "tr")
    assert len(rows) == len(want["items"]) > 0
    for row, item in zip(rows, want["items"]):
        assert item["text"] in row["text"] and item["source_doc_ids"][0] in row["text"]
    # the atoms of the context line the answer cites are marked
    cited_ids = {a for s in want["sources"] for n in s["context"] for a in want["context"][n - 1]["atom_ids"]}
    marked = [i for i, r in enumerate(rows) if "cited" in r["class"].split()]
    assert marked == [i for i, it in enumerate(want["items"]) if it["atom_id"] in cited_ids]
    assert any("born in Warsaw" in rows[i]["text"] for i in marked)
    # the sub-graph, drawn: one SVG group per node, one path per edge, seeds marked
    g = want["subgraph"]
    assert len(dom.by_class("node", "g")) == len(g["nodes"]) > 0
    assert len(dom.by_class("edge", "path")) == len(g["edges"]) > 0
    assert len(dom.by_class("seed", "g")) == sum(n["seed"] for n in g["nodes"]) > 0
    assert {e["type"] for e in g["edges"]} == {c[len("edge-"):] for e in dom.by_class("edge", "path")
                                              for c in e["class"].split() if c.startswith("edge-")}
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20], "big") == 1200 and len(data) > 20_000
    if out := os.environ.get("ATOMICRAG_SCREENSHOT_OUT"):  # relative to the checkout (tests run in tmp)
        shutil.copyfile(shot, Path(__file__).resolve().parents[2] / out)


def test_markup_in_a_document_stays_text(tmp_path: Path) -> None:
    path = build(tmp_path / "idx", [*DOCS[:3], {"doc_id": "markup", "title": "Markup", "text": MARKUP}])
    with serving(path) as url:
        dom = Dom(browse(f"{url}/?q={quote(QUESTIONS[0])}", tmp_path, "--dump-dom"))
    rows = dom.by_class("atom", "tr")
    assert dom.by_id("status")["data-state"] == "done"
    assert any("<img src=x" in r["text"] for r in rows), "the markup atom should be among the evidence"
    assert not any(e["tag"] == "img" for e in dom.elements)
    assert next(e for e in dom.elements if e["tag"] == "title")["text"] == "atomicrag"  # no onerror ran


def test_a_server_with_a_token_makes_the_page_ask_for_it(index_dir: Path, tmp_path: Path) -> None:
    with serving(index_dir, api_key="page-token") as url:
        dom = Dom(browse(f"{url}/?q={quote(QUESTIONS[0])}", tmp_path, "--dump-dom"))
    assert "hidden" not in dom.by_id("auth")  # the token field is shown
    status = dom.by_id("status")
    assert status["data-state"] == "error" and status["text"].startswith("401")
    assert not dom.by_class("atom", "tr")
