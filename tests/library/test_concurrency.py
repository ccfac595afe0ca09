"""One loaded AtomicRAG serves queries from several threads with the same results as one after
another; updates concurrent with queries are serialised."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from atomicrag import AtomicRAG
from tests.library.conftest import DOCS, QUESTIONS, base_config


def _key(result) -> list[tuple[str, float]]:
    return [(item.atom_id, round(item.score, 9)) for item in result.items]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> AtomicRAG:
    path = tmp_path_factory.mktemp("idx") / "index"
    AtomicRAG(base_config(), progress=False).index(DOCS).save(path)
    return AtomicRAG.load(path, progress=False)


def test_parallel_queries_on_one_object_equal_sequential_ones(loaded: AtomicRAG) -> None:
    questions = QUESTIONS * 4
    expected = {q: _key(loaded.search(q)) for q in QUESTIONS}
    barrier = threading.Barrier(4)

    def ask(q: str):
        try:
            barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        return q, loaded.search(q)

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(ask, questions))
    wrong = [q for q, r in got if _key(r) != expected[q] or r.errors]
    assert not wrong, f"{len(wrong)} of {len(got)} parallel answers differ from sequential ones"


def test_inserts_and_queries_from_threads_are_serialised(tmp_path: Path) -> None:
    rag = AtomicRAG(base_config(), progress=False).index(DOCS[:10])
    extra = DOCS[10:]
    errors: list[BaseException] = []

    def insert(doc):
        try:
            rag.insert([doc])
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def ask():
        try:
            for q in QUESTIONS:
                rag.search(q)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=insert, args=(d,)) for d in extra] + [threading.Thread(target=ask)
                                                                          for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert sorted(d.id for d in rag.documents) == sorted(d["doc_id"] for d in DOCS)
