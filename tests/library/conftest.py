"""Shared corpus and configs of the library-API tests: small, fake models, spaCy sentence atoms."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

# ~20 short documents whose entities overlap (people, places, organisations) so the graph has
# containment, shared entities and synonym edges ("Marie Curie" ~ "Pierre Curie" under the fake
# embedder's word/trigram hashing).
DOCS: list[dict[str, Any]] = [
    {"doc_id": "curie", "title": "Marie Curie",
     "text": "Marie Curie was born in Warsaw in 1867. She moved to Paris to study physics at the Sorbonne."},
    {"doc_id": "pierre", "title": "Pierre Curie",
     "text": "Pierre Curie married Marie Curie in Paris in 1895. Pierre Curie worked on magnetism."},
    {"doc_id": "warsaw", "text": "Warsaw is the capital of Poland. The Vistula River flows through Warsaw."},
    {"doc_id": "poland", "text": "Poland borders Germany and the Czech Republic. Krakow is a city in Poland."},
    {"doc_id": "sorbonne", "text": "The Sorbonne is a university in Paris. Many physicists taught at the Sorbonne."},
    {"doc_id": "nobel", "text": "The Nobel Prize in Physics of 1903 went to Marie Curie, Pierre Curie and Henri "
                                "Becquerel. Alfred Nobel founded the Nobel Prize."},
    {"doc_id": "becquerel", "text": "Henri Becquerel discovered radioactivity in 1896 in Paris."},
    {"doc_id": "irene", "text": "Irene Joliot-Curie was the daughter of Marie Curie. Irene Joliot-Curie won the "
                                "Nobel Prize in Chemistry in 1935."},
    {"doc_id": "einstein", "text": "Albert Einstein was born in Ulm in Germany. Albert Einstein worked in Bern."},
    {"doc_id": "bern", "text": "Bern is the capital of Switzerland. The Aare River flows through Bern."},
    {"doc_id": "ulm", "text": "Ulm is a city on the Danube River in Germany."},
    {"doc_id": "danube", "text": "The Danube River flows through Vienna and Budapest into the Black Sea."},
    {"doc_id": "vienna", "text": "Vienna is the capital of Austria. Sigmund Freud lived in Vienna."},
    {"doc_id": "freud", "text": "Sigmund Freud founded psychoanalysis. Sigmund Freud moved to London in 1938."},
    {"doc_id": "london", "text": "London is the capital of the United Kingdom. The Thames River flows through London."},
    {"doc_id": "newton", "text": "Isaac Newton was born in Woolsthorpe in England. Isaac Newton studied at "
                                 "Cambridge University."},
    {"doc_id": "cambridge", "text": "Cambridge University is in England. Isaac Newton and Charles Darwin studied "
                                    "at Cambridge University."},
    {"doc_id": "darwin", "text": "Charles Darwin sailed on the Beagle. Charles Darwin wrote On the Origin of Species."},
    {"doc_id": "budapest", "text": "Budapest is the capital of Hungary. The Danube River divides Budapest."},
    {"doc_id": "germany", "text": "Germany borders Austria, Switzerland and Poland. Berlin is the capital of Germany."},
]

QUESTIONS = [
    "Where was Marie Curie born?",
    "Which river flows through the capital of Austria?",
    "Who founded psychoanalysis and where did he move?",
    "Where did Isaac Newton study?",
]


def base_config(**overrides: Any) -> dict[str, Any]:
    """Retrieval-only, fake embedder and LLM (named presets: the library's defaults are the real
    models), sentence atoms, the paper's PPR seeding, a small synonym cap so the cap matters."""
    cfg: dict[str, Any] = {
        "embedder": {"option": "fake", "dim": 64},
        "llm": {"option": "fake", "cache": False},
        "atomizer": {"name": "sentence"},
        "graph": {"synonym_threshold": 0.35, "synonym_max_neighbors": 2},
        "retriever": {"option": "ppr", "top_k": 8},
        "reader": {"name": "none"},
    }
    for section, values in overrides.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


@pytest.fixture()
def cfg() -> dict[str, Any]:
    return base_config()


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    # no progress bars, and a relative cache path would land in the project: run in tmp
    monkeypatch.chdir(tmp_path)


# ----------------------------------------------------------------- the HTTP server's tests
def fake_llm_config() -> dict[str, Any]:
    """The fake LLM option, as a loader names it: a saved index names no LLM, the loader's config does."""
    return {"llm": base_config()["llm"]}


def save_index(path: Any, **overrides: Any) -> Any:
    """Index DOCS with ``base_config(**overrides)`` and save it at ``path`` (returned)."""
    from atomicrag.library.api import AtomicRAG

    with AtomicRAG(base_config(**overrides)) as rag:
        rag.index(DOCS)
        rag.save(path)
    return path


@contextmanager
def serving(path: Any, *, llm: Any = None, **kwargs: Any) -> Iterator[Any]:
    """``http_server.make_server`` over the index at ``path`` (the fake LLM option, or ``llm``),
    served on a thread; yields the server (``.url``) and closes everything after."""
    from atomicrag.library import http_server
    from atomicrag.library.api import AtomicRAG

    rag = AtomicRAG.load(path, config=fake_llm_config(), llm=llm)
    httpd = http_server.make_server(rag, path, port=0, **kwargs)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        rag.close()


def can_mount() -> bool:
    """Whether a private mount namespace with a tmpfs can be made here (unshare -rm + mount): the
    full-disk tests fill a real 64 KiB tmpfs where it can."""
    import shutil
    import subprocess

    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, check=False)
    return probe.returncode == 0
